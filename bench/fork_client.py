#!/usr/bin/env python3
"""fork_client.py PORT TOKEN RUNS: forks of a sandbox holding 200 MiB across 10,000 files (bench/fork.sh).

The medians over RUNS forks into one child and into ten (each fork's children destroyed after it), and
a fork of an empty sandbox beside them; one line of text."""
import json, sys, time, urllib.request, statistics
port, tok, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def req(method, path, body=None):
    r = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=600) as f:
        return f.read()
def fork(sb, n):
    t0 = time.perf_counter()
    out = json.loads(req("POST", "/v1/sandboxes/%s/fork" % sb, {"count": n}))
    ms = (time.perf_counter() - t0) * 1000
    for c in out["sandboxes"]:
        req("DELETE", "/v1/sandboxes/%s" % c["sandbox_id"])
    return ms
big = json.loads(req("POST", "/v1/sandboxes", {"limits": {"disk_mb": 512}}))["sandbox_id"]
# 10,000 files: 9,999 of 1 KiB, one of the rest of 200 MiB (as a checkout with its data beside it).
req("POST", "/v1/sandboxes/%s/exec" % big, {"language": "python", "fresh": True, "timeout": 600, "code":
    "import os\nfor d in range(100):\n    os.makedirs('src/d%d' % d, exist_ok=True)\n"
    "    for f in range(100):\n        if d or f: open('src/d%d/f%d' % (d, f), 'wb').write(os.urandom(1024))\n"
    "open('data.bin', 'wb').write(os.urandom(200 * 1024 * 1024 - 9999 * 1024))\n"})
empty = json.loads(req("POST", "/v1/sandboxes", {}))["sandbox_id"]
e1 = [fork(empty, 1) for _ in range(runs)]
# The first fork freezes the files into a layer (kept sandboxes); later forks of unchanged files reuse it.
first = fork(big, 1)
one = [fork(big, 1) for _ in range(runs)]
ten = [fork(big, 10) for _ in range(runs)]
for i in (big, empty): req("DELETE", "/v1/sandboxes/%s" % i)
print("fork of an empty sandbox p50 %.1f ms | 200 MiB / 10,000 files: first fork %.0f ms, one child p50 %.0f ms, ten children p50 %.0f ms" % (
    statistics.median(e1), first, statistics.median(one), statistics.median(ten)))
