#!/usr/bin/env bash
# fork.sh — what a fork costs (issue 32): a sandbox holding 200 MiB across 10,000 files forked into
# one child and into ten, against a server that keeps its sandboxes (each child's files copied and
# flushed to its state directory before the answer) and one that does not (--state-dir none); the
# issue's target is 50 ms for one child and 0.5 s for ten.
# Usage: bench/fork.sh   (knobs: BUILD_DIR=build; STATE=DIR: the state directory's filesystem;
#        RUNS=3 forks of each size; MODES="kept none")
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need python3 curl
build=${BUILD_DIR:-build}
[ -x "$build/airlock" ] && [ -x "$build/airlock-serve" ] || die "build airlock first (no $build/airlock)"
airlock=$(realpath "$build/airlock")
tmp=$(mktemp -d "${STATE:-/var/tmp}/airlock-bench.XXXXXX")
spid=
cleanup() {
	bench_serve_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
{
	serve_config_head
	printf 'server:\n  quota:\n    sandboxes: 64\n'
} >"$tmp/cfg.yaml"
chmod 0600 "$tmp/cfg.yaml"
for mode in ${MODES:-kept none}; do
	args=()
	[ "$mode" = none ] && args=(--state-dir none)
	bench_serve_start "$tmp/$mode" --config "$tmp/cfg.yaml" --socket none --token-file "$tmp/token" \
		--audit "$tmp/$mode.jsonl" "${args[@]}"
	printf '%-5s ' "$mode"
	python3 bench/fork_client.py "$port" "$(awk '{print $NF}' "$tmp/token")" "${RUNS:-3}"
	bench_serve_stop
done
