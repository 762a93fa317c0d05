#!/usr/bin/env bash
# waits.sh — where a start of `airlock run` waits (off CPU), counted rather than timed: records N starts
# (50 ms apart, as separate jobs arrive) system-wide with the scheduler's switch and wake-up events
# and their kernel call chains, and prints each kind of wait per start (bench/waits.py): RCU grace
# periods, the v1 cgroup move's rcu_sync, pipes between the supervisor and init, the event loop.
# Usage: bench/waits.sh [N] [-- CMD...]   (AIRLOCK: the binary, default build/airlock; root: perf -a)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
need perf python3
n=${1:-20}
shift || true
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || set -- /bin/true
bin=$(realpath "${AIRLOCK:-build/airlock}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2016 # the loop is bash -c's own script: its $1 and $@ are its arguments
perf record -q -a -g -o "$tmp/perf.data" \
	-e sched:sched_switch,sched:sched_wakeup,sched:sched_process_fork,sched:sched_process_exec -- \
	bash -c 'for _ in $(seq "$1"); do "${@:2}" >/dev/null; sleep 0.05; done' waits "$n" "$bin" run -- "$@" 2>/dev/null
perf script -i "$tmp/perf.data" >"$tmp/script.txt" 2>/dev/null
python3 bench/waits.py "$tmp/script.txt" "$bin"
