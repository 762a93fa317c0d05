#!/usr/bin/env python3
"""snapshot_client.py PORT TOKEN RUNS: snapshots of a sandbox holding 200 MiB across 10,000 files, and
sandboxes made from one (bench/snapshot.sh).

The first snapshot (the freeze of every file into a layer), then the medians over RUNS of: a snapshot after
one small file changed, a snapshot of an empty sandbox, a create from the big snapshot and that sandbox's
first exec reading its 200 MiB file; one line of text. Every snapshot and sandbox is deleted after."""
import json, sys, time, urllib.request, statistics
port, tok, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def req(method, path, body=None):
    r = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=600) as f:
        return f.read()
def timed(fn):
    t0 = time.perf_counter()
    v = fn()
    return (time.perf_counter() - t0) * 1000, v
def run(sb, code):
    req("POST", "/v1/sandboxes/%s/exec" % sb, {"language": "shell", "fresh": True, "timeout": 600, "code": code})
def snap(sb):
    return json.loads(req("POST", "/v1/sandboxes/%s/snapshots" % sb, {}))["snapshot_id"]
big = json.loads(req("POST", "/v1/sandboxes", {"limits": {"disk_mb": 512}}))["sandbox_id"]
# 10,000 files: 9,999 of 1 KiB, one of the rest of 200 MiB (as bench/fork.sh's).
req("POST", "/v1/sandboxes/%s/exec" % big, {"language": "python", "fresh": True, "timeout": 600, "code":
    "import os\nfor d in range(100):\n    os.makedirs('src/d%d' % d, exist_ok=True)\n"
    "    for f in range(100):\n        if d or f: open('src/d%d/f%d' % (d, f), 'wb').write(os.urandom(1024))\n"
    "open('data.bin', 'wb').write(os.urandom(200 * 1024 * 1024 - 9999 * 1024))\n"})
empty = json.loads(req("POST", "/v1/sandboxes", {}))["sandbox_id"]
snaps = []
first, s0 = timed(lambda: snap(big))
snaps.append(s0)
again, e0, mk, ex = [], [], [], []
for i in range(runs):
    run(big, "echo %d >src/d1/f1" % i)
    ms, s = timed(lambda: snap(big)); again.append(ms); snaps.append(s)
    ms, s = timed(lambda: snap(empty)); e0.append(ms); snaps.append(s)
    ms, sb = timed(lambda: json.loads(req("POST", "/v1/sandboxes", {"snapshot": s0, "limits": {"disk_mb": 64}}))["sandbox_id"])
    mk.append(ms)
    ms, _ = timed(lambda: run(sb, "md5sum data.bin >/dev/null"))
    ex.append(ms)
    req("DELETE", "/v1/sandboxes/%s" % sb)
for s in snaps: req("DELETE", "/v1/snapshots/%s" % s)
for i in (big, empty): req("DELETE", "/v1/sandboxes/%s" % i)
print("200 MiB / 10,000 files: first snapshot %.0f ms, after one change p50 %.0f ms | empty sandbox p50 %.0f ms | "
      "create from the snapshot p50 %.0f ms, its first exec reading 200 MiB p50 %.0f ms" % (
    first, statistics.median(again), statistics.median(e0), statistics.median(mk), statistics.median(ex)))
