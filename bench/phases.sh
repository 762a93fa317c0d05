#!/usr/bin/env bash
# phases.sh — where a cold start's time goes, phase by phase, airlock beside hardened bwrap: the
# scheduler's exec, fork and exit events (a private tracefs instance) split each start of
# /bin/true into the tool's own start-up, the sandbox's set-up, the payload, and the teardown
# (bench/phases.py). Each tool runs N times, GAP_MS apart; medians. Root only (tracefs).
# Usage: bench/phases.sh [N] [GAP_MS]   knobs: AIRLOCK, AIRLOCK_ARGS (e.g. "--net host")
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
need gcc bwrap python3
find_airlock
[[ $(id -u) == 0 ]] || die "needs root (the kernel's trace instances)"
tracefs=/sys/kernel/tracing
[[ -d $tracefs/instances ]] || tracefs=/sys/kernel/debug/tracing
[[ -d $tracefs/instances ]] || die "no tracefs with instances (mount -t tracefs tracefs /sys/kernel/tracing)"
n=${1:-40} gap_us=$((${2:-50} * 1000))
tmp=$(mktemp -d)
inst=$tracefs/instances/airlock-phases-$$
trap 'rmdir "$inst" 2>/dev/null; rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/phases" "$here/phases.c"
mkdir "$inst"
echo 20000 >"$inst/buffer_size_kb"
for e in sched_process_exec sched_process_fork sched_process_exit; do
	echo 1 >"$inst/events/sched/$e/enable"
done
# trace TOOL CMD... — N marked starts of CMD /bin/true into $tmp/TOOL.trace.
trace() {
	local name=$1
	shift
	echo >"$inst/trace"
	echo 1 >"$inst/tracing_on"
	"$tmp/phases" "$inst/trace_marker" "$n" "$gap_us" "$@" /bin/true
	echo 0 >"$inst/tracing_on"
	cat "$inst/trace" >"$tmp/$name.trace"
}
# shellcheck disable=SC2086 # AIRLOCK_ARGS is split on purpose
trace airlock "$airlock" run ${AIRLOCK_ARGS:-} --
trace bwrap "$(command -v bwrap)" "${bwrap_args[@]}" --
echo "$(date -u '+%F %H:%M UTC'), $(id -un), load $(cut -d' ' -f1-3 /proc/loadavg), $n starts $((gap_us / 1000)) ms apart"
python3 "$here/phases.py" /bin/true bwrap="$tmp/bwrap.trace" airlock="$tmp/airlock.trace"
