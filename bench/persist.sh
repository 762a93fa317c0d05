#!/usr/bin/env bash
# persist.sh — what keeping sandboxes across restarts costs (issue 32): the same calls against a
# server that keeps its sandboxes (a state directory: each call's file changes synced and flushed
# before its result) and one that does not (--state-dir none), one after the other; then the disk
# the state directory uses for a sandbox of 10,000 small files.
# Usage: bench/persist.sh   (knobs: BUILD_DIR=build; STATE=DIR: the state directory's filesystem)
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
serve_config_head >"$tmp/cfg.yaml"
chmod 0600 "$tmp/cfg.yaml"
for mode in kept none; do
	args=()
	[ "$mode" = none ] && args=(--state-dir none)
	bench_serve_start "$tmp/$mode" --config "$tmp/cfg.yaml" --socket none --token-file "$tmp/token" \
		--audit "$tmp/$mode.jsonl" "${args[@]}"
	printf '%-5s ' "$mode"
	python3 bench/persist_client.py "$port" "$(awk '{print $NF}' "$tmp/token")"
	bench_serve_stop
done
