#!/usr/bin/env bash
# build.sh — configures and builds airlock into build/ (extra cmake arguments are passed through).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DAIRLOCK_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
