#!/usr/bin/env bash
# held.sh — airlock serve's engine, through the library (bench/held.c): exec of /bin/true in a warm held
# sandbox vs a bare fork+exec (medians of EXECS runs, one process), creating a held sandbox, and
# the memory of N idle sandboxes (each init's PSS, and the supervisor's RSS growth per sandbox).
# Usage: bench/held.sh [EXECS] [SANDBOXES]   (BUILD_DIR defaults to build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need gcc pkg-config
build=${BUILD_DIR:-build}
[ -f "$build/src/libairlock_core.a" ] || die "build airlock first (scripts/build.sh)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Linked as airlock's own binaries are (-z now: airlock-serve, what `airlock serve` runs): a held
# sandbox's init then drops the libraries its execs never run (src/kit/forkmm.c), which it cannot
# do for a lazily bound caller.
# shellcheck disable=SC2046 # pkg-config prints several words on purpose
gcc -O2 -Iinclude -Wl,-z,relro,-z,now bench/held.c -o "$tmp/held" "$build/src/libairlock_core.a" \
	$(pkg-config --libs jansson libseccomp yaml-0.1 openssl libpcre2-8 libarchive) -lpthread -lm
"$tmp/held" "${1:-300}" "${2:-100}"
