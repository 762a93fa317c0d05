#!/usr/bin/env bash
# test.sh — sets up, builds and runs the whole test suite: unit and integration tests (as root and
# as an unprivileged user) on this host, again in a qemu VM with a pure cgroup v2 layout and
# Landlock ABI 2, then once more under AddressSanitizer and UBSan (all but the other backends' matrix); static analysis (cppcheck,
# clang-tidy) and a short libFuzzer run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME CMD...: runs CMD and says how long it took (what to look at when CI grows slow).
phase() {
	local name=$1 t0=$SECONDS
	shift
	"$@"
	printf 'test.sh: %s took %d s\n' "$name" $((SECONDS - t0)) >&2
}
phase deps bash scripts/deps.sh
BUILD_DIR=build phase build bash scripts/build.sh
# A test per core at a time: most of the suite waits (TTLs, timeouts, downloads) rather than computes.
jobs=$(nproc)
# On this host (as root and as an unprivileged user).
phase host-suite ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs" -LE vm
# Static analysis (cppcheck, clang-tidy): any finding fails.
phase lint bash scripts/lint.sh
# In a qemu VM with pure cgroup v2 (scripts/vm): with CI=true, a VM that cannot start is a failure.
# Alone: its guest is slow (software emulation), and some of its checks watch a payload that lives
# 3 s; beside the host's own builds it would take most of that to find it.
phase vm-suite bash scripts/vm/suite.sh
BUILD_DIR=build-asan phase asan-build bash scripts/build.sh -DAIRLOCK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
# Every unit, integration and service test again under the sanitizers, as root and as a user; the
# other backends' conformance matrix (be.*) is left to the host's run: it drives bwrap, crun and
# runsc through the same airlock code the native tests already run sanitized, and it is a quarter
# of the suite's time, which CI cannot spend twice within its limit.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  phase asan-suite ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" \
  -LE 'vm|backend-bwrap|backend-oci|backend-gvisor'
# libFuzzer: every tests/fuzz target for FUZZ_SECONDS each (their corpora already ran above as CTest cases).
FUZZ_SECONDS=${FUZZ_SECONDS:-20} phase fuzz bash scripts/fuzz.sh
