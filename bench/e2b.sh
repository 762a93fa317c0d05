#!/usr/bin/env bash
# e2b.sh — the E2B SDKs against airlock serve (issue 33): create → first command and a runCode
# round trip through the official SDKs (bench/e2b_client.mjs), beside the JSON API's create →
# first command, p50/p95/p99 with 1, 16 and 64 concurrent clients. Prints a markdown table.
# Usage: bench/e2b.sh   (knobs: BUILD_DIR=build BENCH_CONC=1,16,64 BENCH_ROUNDS=20 POOL=0)
# For scale (independent measurements of hosted E2B): create → first exec p50 442 ms, p99 4.1 s.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need node python3
build=${BUILD_DIR:-build}
pool=${POOL:-0}
[ -x "$build/airlock" ] && [ -x "$build/airlock-serve" ] || die "build airlock first (no $build/airlock-serve)"
[ -d tests/e2b/node_modules/e2b ] || die "the E2B SDK is not installed in tests/e2b (scripts/deps.sh runs npm ci)"
airlock=$(realpath "$build/airlock")
tmp=$(mktemp -d)
spid=
cleanup() {
	bench_serve_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
{
	serve_config_head
	cat <<YAML
server:
  max_sandboxes: 256
  max_execs: 64
  http:
    max_connections: 1024
  pool:
    untrusted-code-read: $pool
    untrusted-code-write: 0
  quota:
    sandboxes: 256
    execs: 256
    connections: 1024
YAML
} >"$tmp/e2b.yaml"
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf 'bench %s\n' "$key" >"$tmp/tok"
chmod 0600 "$tmp/tok"
bench_serve_start "$tmp/e2b" --config "$tmp/e2b.yaml" --socket none --token-file "$tmp/tok" \
	--audit "$tmp/e2b.jsonl" --state-dir none
url="http://127.0.0.1:$port"
E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_API_KEY=$key node bench/e2b_client.mjs >"$tmp/out.json" ||
	{ tail -20 "$tmp/e2b.err" >&2; die "the SDK's run failed (the server's last words above)"; }
python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("| ms | clients | n | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|")
for mode, by in d.items():
    for c, s in by.items():
        print(f"| {mode} | {c} | {s['n']} | {s['p50']} | {s['p95']} | {s['p99']} | {s['max']} |")
PY
