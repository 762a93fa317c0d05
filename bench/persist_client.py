#!/usr/bin/env python3
"""persist_client.py PORT TOKEN: what keeping sandboxes costs a client of airlock serve (bench/persist.sh).

The medians of: 20 creates (no pool), 20 execs that write one small file, 10 execs that write one
small file beside 10,000 others, 3 execs that write 50 MB; one line of text."""
import json, sys, time, urllib.request, statistics
port, tok = sys.argv[1], sys.argv[2]
def req(method, path, body=None):
    r = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=60) as f:
        return f.read()
def t(fn):
    t0 = time.perf_counter(); fn(); return (time.perf_counter() - t0) * 1000
cr = []
ids = []
for i in range(20):
    out = {}
    cr.append(t(lambda: out.setdefault("b", req("POST", "/v1/sandboxes", {}))))
    ids.append(json.loads(out["b"])["sandbox_id"])
sb = ids[0]
small = [t(lambda: req("POST", "/v1/sandboxes/%s/exec" % sb, {"language": "shell", "code": "echo x >f", "fresh": True})) for _ in range(20)]
req("POST", "/v1/sandboxes/%s/exec" % sb, {"language": "shell", "code": "mkdir -p many && cd many && for i in $(seq 10000); do echo $i > f$i; done", "fresh": True, "timeout": 120})
many = [t(lambda: req("POST", "/v1/sandboxes/%s/exec" % sb, {"language": "shell", "code": "echo y >g", "fresh": True})) for _ in range(10)]
big = [t(lambda: req("POST", "/v1/sandboxes/%s/exec" % sb, {"language": "shell", "code": "head -c 50000000 /dev/urandom > big", "fresh": True})) for _ in range(3)]
for i in ids: req("DELETE", "/v1/sandboxes/%s" % i)
print("create p50 %.2f ms | small-write exec p50 %.2f ms | exec beside 10,000 files p50 %.2f ms | 50 MB write exec p50 %.1f ms" % (
    statistics.median(cr), statistics.median(small), statistics.median(many), statistics.median(big)))
