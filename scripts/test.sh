#!/usr/bin/env bash
# test.sh — sets up, builds and runs the whole test suite: unit and integration tests (as root and
# as an unprivileged user) on this host, again in a qemu VM with a pure cgroup v2 layout and
# Landlock ABI 2, then once more under AddressSanitizer and UBSan (all but the other backends'
# runs); static analysis (cppcheck, clang-tidy, clang-format) and a short libFuzzer run of every
# fuzz target. Each phase says how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=build/test-logs
# phase NAME CMD...: runs CMD and says how long it took (what to look at when CI grows slow).
phase() {
	local name=$1 t0=$SECONDS
	shift
	"$@"
	printf 'test.sh: %s took %d s\n' "$name" $((SECONDS - t0)) >&2
}
# beside NAME CMD...: runs CMD in the background at the idle scheduling class (SCHED_IDLE: it gets
# only the CPU that nothing else wants), its output in $logs/NAME.log. The host suite mostly waits
# (lifetimes, timeouts, servers' answers), so the builds and the static analysis fit in its idle
# time instead of queueing after it; `joined` collects them.
declare -A beside_pid=()
beside() {
	local name=$1
	shift
	(
		t0=$SECONDS rc=0
		chrt --idle 0 "$@" >"$logs/$name.log" 2>&1 || rc=$?
		printf 'test.sh: %s took %d s (beside the host suite)\n' "$name" $((SECONDS - t0)) >>"$logs/$name.log"
		exit "$rc"
	) &
	beside_pid[$name]=$!
}
# joined NAME...: waits for each, prints its log's last lines, fails if it failed (after all ended).
joined() {
	local name failed=()
	for name in "$@"; do
		if wait "${beside_pid[$name]}"; then
			tail -n 3 "$logs/$name.log" >&2
		else
			tail -n 80 "$logs/$name.log" >&2
			failed+=("$name")
		fi
		unset 'beside_pid[$name]'
	done
	if ((${#failed[@]})); then
		echo "test.sh: FAILED: ${failed[*]} (whole logs in $logs/)" >&2
		return 1
	fi
}
# A failure anywhere ends what still runs beside it (each is its own process group: set -m).
trap 'for p in "${beside_pid[@]}"; do kill -- "-$p" 2>/dev/null || true; done' EXIT

phase deps bash scripts/deps.sh
BUILD_DIR=build phase build bash scripts/build.sh
mkdir -p "$logs"
# Static analysis; the sanitized build; the fuzz targets' build (clang): beside the host suite.
set -m
beside lint bash scripts/lint.sh
beside asan-build env BUILD_DIR=build-asan bash scripts/build.sh -DAIRLOCK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
beside fuzz-build bash scripts/fuzz.sh --build-only
set +m
# A test per core at a time: most of the suite waits (TTLs, timeouts, downloads) rather than computes.
jobs=$(nproc)
# On this host (as root and as an unprivileged user).
phase host-suite ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs" -LE vm
joined lint asan-build fuzz-build
# In a qemu VM with pure cgroup v2 (scripts/vm): with CI=true, a VM that cannot start is a failure.
# Alone: its guest is slow (software emulation, every core), and some of its checks watch a
# payload that lives 3 s; beside other work it would take most of that to find it.
phase vm-suite bash scripts/vm/suite.sh
# Every unit, integration and service test again under the sanitizers, as root and as a user,
# but the other backends' runs: the conformance matrix (be.*) and the escape suite under bwrap,
# crun and runsc drive those runtimes through the same airlock code that the native runs already
# run sanitized, and they are a third of the suite's time, which CI cannot spend twice within its
# limit; so is image_build (label external), whose minutes are mmdebstrap's.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	phase asan-suite ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" \
	-LE '^(vm|vm-guest|external|backend-(bwrap|oci|gvisor)|bwrap|oci|gvisor)$'
# libFuzzer: every tests/fuzz target for FUZZ_SECONDS each, on every core (built beside the host
# suite; their corpora already ran above as CTest cases).
FUZZ_SECONDS=${FUZZ_SECONDS:-20} phase fuzz bash scripts/fuzz.sh
