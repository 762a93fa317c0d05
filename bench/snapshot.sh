#!/usr/bin/env bash
# snapshot.sh — what a snapshot costs (issue 32): a sandbox holding 200 MiB across 10,000 files
# snapshotted (its files frozen into a layer of the state directory) and sandboxes made from the
# snapshot (an overlay over it: nothing copied), against a server that keeps its sandboxes.
# Usage: bench/snapshot.sh   (knobs: BUILD_DIR=build; STATE=DIR: the state directory's filesystem;
#        RUNS=3)
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
	printf 'server:\n  quota:\n    sandboxes: 64\n    snapshots: 64\n'
} >"$tmp/cfg.yaml"
chmod 0600 "$tmp/cfg.yaml"
bench_serve_start "$tmp/kept" --config "$tmp/cfg.yaml" --socket none --token-file "$tmp/token" --audit "$tmp/kept.jsonl"
python3 bench/snapshot_client.py "$port" "$(awk '{print $NF}' "$tmp/token")" "${RUNS:-3}"
bench_serve_stop
