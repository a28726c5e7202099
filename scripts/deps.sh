#!/usr/bin/env bash
# Installs the Debian packages tally needs to build and test, only when missing.
# Idempotent: a machine that has everything runs no apt at all.
# capstone (annotate), protobuf-c and zlib (pprof) build into tally; chromium and
# golang-go (go tool pprof) are the real clients the tests drive; patchelf gives a test's
# setcap'd copy of tally an rpath the loader honours in secure-execution mode.
set -euo pipefail

PKGS=(
  gcc make pkg-config meson ninja-build
  libdw-dev libelf-dev libzstd-dev libncurses-dev
  libcmocka-dev libpfm4-dev libtraceevent-dev libcap-dev
  clang libclang-rt-14-dev valgrind libcap2-bin tmux zstd
  linux-perf
  libcapstone-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
  chromium golang-go
  libbz2-dev bzip2
  patchelf
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps.sh: installing missing packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "deps.sh: these Debian packages are missing and installing them needs root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    echo "Run that as root (or with sudo), then run make again." >&2
    exit 1
  fi
else
  SUDO=
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
