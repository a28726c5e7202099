#!/bin/sh
# Rebuilds arm64-frames (an aarch64 ELF with .eh_frame, no libc) from arm64-frames.S.
# Needs clang and ld.lld; the tests only read the committed binary.
set -e
cd "$(dirname "$0")"
clang --target=aarch64-linux-gnu -c arm64-frames.S -o arm64-frames.o
ld.lld --eh-frame-hdr -static -o arm64-frames arm64-frames.o
rm -f arm64-frames.o
