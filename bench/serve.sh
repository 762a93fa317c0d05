#!/usr/bin/env bash
# serve.sh — airlock serve on loopback under load (bench/serve_client.py, keep-alive HTTP/1.1):
# the latency of POST /v1/sandboxes served from the warm pool (and cold, without a pool), the
# throughput of python hello-world execs with 2 and 8 concurrent clients (in a held sandbox each,
# and throwaway through MCP code_execute), and the memory of N idle sandboxes at the server level
# (each init's PSS, the server's RSS growth per sandbox). Prints a markdown table.
# Usage: bench/serve.sh   (knobs: BUILD_DIR=build CREATES=200 COLD=50 SECS=10 SANDBOXES=100 POOL=4)
# Run as root for the memory figures: the inits are not dumpable, so only root reads their PSS.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need python3 curl
build=${BUILD_DIR:-build}
creates=${CREATES:-200} cold=${COLD:-50} secs=${SECS:-10} sandboxes=${SANDBOXES:-100} pool=${POOL:-4}
if [ ! -x "$build/airlock" ] || [ ! -x "$build/airlock-serve" ]; then
	die "build airlock first (no $build/airlock or $build/airlock-serve)"
fi
airlock=$(realpath "$build/airlock")
client=$PWD/bench/serve_client.py
tmp=$(mktemp -d)
spid=
cleanup() {
	bench_serve_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT

# start NAME POOL: a server whose pool keeps POOL spares of the default profile; approvals off
# (every tool LOW: no human in the loop), audit records unsynced (see README); sets port and spid.
start() {
	{
		serve_config_head
		cat <<EOF
server:
  max_sandboxes: $((sandboxes + 64))
  max_execs: 16
  idle_ttl: 1h
  max_lifetime: 1h
  pool:
    untrusted-code-read: $2
    untrusted-code-write: 0
EOF
	} >"$tmp/$1.yaml"
	bench_serve_start "$tmp/$1" --config "$tmp/$1.yaml" --audit "$tmp/$1.jsonl"
	for _ in $(seq 300); do
		[ "$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "airlock_sandboxes_pooled" {print $2}')" = "$2" ] && return 0
		sleep 0.1
	done
	die "the pool did not fill to $2"
}

run() { # run NAME ARGS...: one client run, its JSON in $tmp/NAME.json
	local name=$1
	shift
	echo "$bench_name: $name" >&2
	python3 "$client" "$port" "$@" >"$tmp/$name.json"
}

start warm "$pool"
run create-warm create "$creates" "$pool"
for c in 2 8; do
	run "held-$c" exec held "$c" "$secs"
	run "throwaway-$c" exec throwaway "$c" "$secs"
done
bench_serve_stop
start cold 0
run create-cold create "$cold" 0
run mem mem "$sandboxes" "$spid"
bench_serve_stop

BENCH_TMP=$tmp BENCH_POOL=$pool BENCH_NPROC=$(nproc) BENCH_LOAD=$(cut -d' ' -f1-3 /proc/loadavg) python3 - <<'EOF'
import json, os
t = os.environ["BENCH_TMP"]
j = lambda n: json.load(open(os.path.join(t, n + ".json")))
w, c = j("create-warm"), j("create-cold")
print("airlock serve on 127.0.0.1, %s CPUs, load average %s at the end, uid %d\n"
      % (os.environ["BENCH_NPROC"], os.environ["BENCH_LOAD"], os.getuid()))
print("| request | n | p50 ms | p95 ms | min ms |")
print("|---|---|---|---|---|")
for name, s in [("GET /v1/health (HTTP floor)", w["health"]),
                ("GET a 2-byte file (tool-call floor)", w["read_file"]),
                ("POST /v1/sandboxes, warm pool of %s" % os.environ["BENCH_POOL"], w["create"]),
                ("POST /v1/sandboxes, no pool (cold)", c["create"])]:
    print("| %s | %d | %.2f | %.2f | %.2f |" % (name, s["n"], s["p50_ms"], s["p95_ms"], s["min_ms"]))
print("\n| python hello-world exec | clients | req/s | p50 ms | p95 ms | errors |")
print("|---|---|---|---|---|---|")
for mode, what in [("held", "POST /v1/sandboxes/{id}/exec, a held sandbox per client"),
                   ("throwaway", "MCP tools/call code_execute, no sandbox_id (throwaway)")]:
    for n in (2, 8):
        r = j("%s-%d" % (mode, n))
        print("| %s | %d | %.1f | %.1f | %.1f | %d |" % (what, n, r["rps"], r.get("p50_ms", 0), r.get("p95_ms", 0), r["errors"]))
m = j("mem")
pss = "%.0f KiB" % m["init_pss_kib_mean"] if m["init_pss_kib_mean"] is not None else "unreadable (run as root)"
if m["unreadable"] and m["init_pss_kib_mean"] is not None:
    pss += " (%d unreadable)" % m["unreadable"]
print("\n| %d idle sandboxes | per sandbox |" % m["sandboxes"])
print("|---|---|")
print("| PSS of each init (mean) | %s |" % pss)
print("| server RSS growth | %.0f KiB (%d → %d KiB) |" % (m["server_rss_kib_per_sandbox"], m["server_rss_kib_before"], m["server_rss_kib_after"]))
EOF
