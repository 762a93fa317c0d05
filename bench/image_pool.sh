#!/usr/bin/env bash
# image_pool.sh — the issue-18 pool benchmark: POST /v1/sandboxes on an image, claimed from a warm
# pool of that image's spares (server.pool's list form) against made cold (no pool). The image is
# the busybox-static one the tests assemble, in a throwaway store. Prints a markdown table.
# Usage: bench/image_pool.sh   (knobs: BUILD_DIR=build CREATES=100 COLD=50 POOL=4)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need python3 curl
[ -x /bin/busybox ] || die "busybox-static is not installed (apt-get install busybox-static)"
build=${BUILD_DIR:-build}
creates=${CREATES:-100} cold=${COLD:-50} pool=${POOL:-4}
[ -x "$build/airlock" ] && [ -x "$build/airlock-serve" ] || die "build airlock first (no $build/airlock or $build/airlock-serve)"
airlock=$(realpath "$build/airlock")
client=$PWD/bench/serve_client.py
tmp=$(mktemp -d)
chmod 0755 "$tmp"
spid=
cleanup() {
	bench_serve_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
export AIRLOCK_IMAGES=$tmp/store
python3 tests/image/mkoci.py oci-archive "$tmp/bb.tar"
"$airlock" image import "$tmp/bb.tar" bench-bb >/dev/null

# start NAME POOL: a server whose pool keeps POOL spares of profile imgs on bench-bb.
start() {
	local entries="[]"
	[ "$2" -gt 0 ] && entries="[{profile: imgs, image: bench-bb, count: $2}]"
	{
		serve_config_head
		cat <<EOF
profiles:
  imgs:
    images: [bench-bb]
server:
  pool: $entries
EOF
	} >"$tmp/$1.yaml"
	bench_serve_start "$tmp/$1" --config "$tmp/$1.yaml" --socket none --token-file "$tmp/tok" --audit "$tmp/$1.jsonl"
	export BENCH_TOKEN
	BENCH_TOKEN=$(awk '{print $NF}' "$tmp/tok")
}

export BENCH_CREATE_BODY='{"profile":"imgs","image":"bench-bb"}'
start warm "$pool"
python3 "$client" "$port" create "$creates" "$pool" >"$tmp/warm.json"
bench_serve_stop
start cold 0
python3 "$client" "$port" create "$cold" >"$tmp/cold.json"
bench_serve_stop
BENCH_TMP=$tmp BENCH_POOL=$pool BENCH_LOAD=$(cut -d' ' -f1-3 /proc/loadavg) python3 - <<'EOF'
import json, os
t = os.environ["BENCH_TMP"]
w, c = (json.load(open(os.path.join(t, n + ".json")))["create"] for n in ("warm", "cold"))
print("POST /v1/sandboxes {profile: imgs, image: bench-bb}, %d CPUs, load average %s at the end, uid %d\n"
      % (os.cpu_count(), os.environ["BENCH_LOAD"], os.getuid()))
print("| create on an image | n | p50 ms | p95 ms | min ms |")
print("|---|---|---|---|---|")
for name, s in [("claimed from a warm pool of %s" % os.environ["BENCH_POOL"], w), ("cold (no pool)", c)]:
    print("| %s | %d | %.2f | %.2f | %.2f |" % (name, s["n"], s["p50_ms"], s["p95_ms"], s["min_ms"]))
EOF
