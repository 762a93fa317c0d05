#!/usr/bin/env bash
# contexts.sh — a cell's round trip over MCP stdio (issue 17): print(1) in a warm interpreter context,
# the same code as a fresh exec in the same held sandbox, and bare `python3 -c 'print(1)'` on the host
# (no sandbox, no server: the floor). Prints a markdown table of median, p90 and mean in ms.
# Usage: bench/contexts.sh   (knobs: BUILD_DIR=build RUNS=200)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need python3
build=${BUILD_DIR:-build}
[ -x "$build/airlock" ] || die "build airlock first (no $build/airlock)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
AUDIT=$tmp/audit.jsonl AIRLOCK=$(realpath "$build/airlock") RUNS=${RUNS:-200} CONF=$tmp/bench.yaml python3 - <<'PY'
import os, statistics, subprocess, sys, time
sys.path.insert(0, "tests/mcp")
from client import Client

runs = int(os.environ["RUNS"])
with open(os.environ["CONF"], "w") as f:  # approvals off (every tool LOW), audit records unsynced
    f.write('version: 1\nrules: [{name: all, tools: ["*"], risk: LOW, require_approval: false}]\n'
            'audit: {fsync: false}\n')
c = Client([os.environ["AIRLOCK"], "mcp", "--config", os.environ["CONF"], "--audit", os.environ["AUDIT"]])
c.initialize()
sid = c.call("code_create_sandbox", {})["result"]["structuredContent"]["sandbox_id"]


def timed(fn):
    for _ in range(max(5, runs // 20)):  # warm-up: the kernel started, caches hot
        fn()
    ms = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1000)
    ms.sort()
    return statistics.median(ms), ms[int(len(ms) * 0.9)], statistics.mean(ms)


def call(**kw):
    r = c.call("code_execute", {"language": "python", "code": "print(1)", "sandbox_id": sid, **kw})
    assert r["result"]["structuredContent"]["stdout"] == "1\n", r


rows = [("warm context cell", timed(call)),
        ("fresh exec, same sandbox", timed(lambda: call(fresh=True))),
        ("bare /usr/bin/python3 -c (host)", timed(lambda: subprocess.run(["/usr/bin/python3", "-c", "print(1)"], check=True,
                                                              stdout=subprocess.DEVNULL)))]
c.close()
print("| print(1) round trip (%d runs) | median ms | p90 ms | mean ms |" % runs)
print("|---|---|---|---|")
for name, (med, p90, mean) in rows:
    print("| %s | %.2f | %.2f | %.2f |" % (name, med, p90, mean))
PY
