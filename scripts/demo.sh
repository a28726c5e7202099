#!/usr/bin/env bash
# make run: the main job on the bundled demo workload (build/workloads/hot).
set -eu
B=${1:-build}
T=$B/tally
echo "== tally list (what this machine can count) =="
"$T" list | head -40
