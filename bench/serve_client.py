#!/usr/bin/env python3
"""serve_client.py — the load generator of bench/serve.sh: keep-alive HTTP/1.1 clients (standard
library only) against `airlock serve` on loopback. Prints one JSON object per run on stdout.

  serve_client.py PORT create N [POOL]    N sequential POST /v1/sandboxes (each followed by an
                                          untimed DELETE); with POOL, waits untimed until the pool
                                          holds POOL spares again before each, so every create is
                                          served from the warm pool; also GET /v1/health and GET of
                                          a file (a tool call without a worker thread) as floors
  serve_client.py PORT exec MODE C SECS   C threads, one connection each, for SECS seconds: python
                                          hello-world; MODE held = POST /v1/sandboxes/{id}/exec on a
                                          sandbox of the thread's own, MODE throwaway = MCP
                                          tools/call code_execute with no sandbox_id over /mcp
  serve_client.py PORT mem N SERVER_PID   creates N sandboxes; the server's RSS growth and each
                                          init's PSS (smaps_rollup; root needed to read the inits')
"""
import http.client
import json
import os
import sys
import threading
import time

HELLO = 'print("hello world")'


def pct(xs, p):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def summary(ms):
    return {"n": len(ms), "p50_ms": round(pct(ms, 50), 3), "p95_ms": round(pct(ms, 95), 3),
            "min_ms": round(min(ms), 3), "max_ms": round(max(ms), 3)} if ms else {"n": 0}


class Conn:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        if os.environ.get("BENCH_TOKEN"):  # a server's client token (bench/image_pool.sh)
            h["Authorization"] = "Bearer " + os.environ["BENCH_TOKEN"]
        h.update(headers or {})
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        self.c.request(method, path, body=data, headers=h)
        r = self.c.getresponse()
        return r.status, r.read(), r


def metric(conn, name):
    _, text, _ = conn.call("GET", "/metrics")
    for line in text.decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == name:
            return float(parts[1])
    raise SystemExit("no metric %s" % name)


def wait_pool(conn, want, limit=60):
    end = time.time() + limit
    while metric(conn, "airlock_sandboxes_pooled") < want:
        if time.time() > end:
            raise SystemExit("the pool did not refill to %d within %ds" % (want, limit))
        time.sleep(0.01)


def create(conn):
    # BENCH_CREATE_BODY: the request's JSON (bench/image_pool.sh names a profile and an image)
    st, body, _ = conn.call("POST", "/v1/sandboxes", json.loads(os.environ.get("BENCH_CREATE_BODY", "{}")))
    if st != 201:
        raise SystemExit("create: %d %s" % (st, body[:300]))
    return json.loads(body)["sandbox_id"]


def run_create(port, n, pool):
    c = Conn(port)
    create_ms, health_ms, read_ms = [], [], []
    # Floors on the same connection: GET /v1/health (HTTP only) and a read of a 2-byte file (a
    # tool call: schema check, risk gate, two audit records, the manager; no worker thread).
    if pool:
        wait_pool(c, pool)
    keep = create(c)
    c.call("PUT", "/v1/sandboxes/%s/files/f" % keep, b"hi")
    for _ in range(n):
        if pool:
            wait_pool(c, pool)
        t = time.perf_counter()
        st, _, _ = c.call("GET", "/v1/health")
        health_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        st, _, _ = c.call("GET", "/v1/sandboxes/%s/files/f" % keep)
        read_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        sb = create(c)
        create_ms.append((time.perf_counter() - t) * 1e3)
        st, body, _ = c.call("DELETE", "/v1/sandboxes/" + sb)
        if st != 200:
            raise SystemExit("delete: %d %s" % (st, body[:300]))
    c.call("DELETE", "/v1/sandboxes/" + keep)
    return {"create": summary(create_ms), "health": summary(health_ms), "read_file": summary(read_ms)}


class Mcp:
    """One MCP session over streamable HTTP, asking for plain JSON answers."""

    def __init__(self, port):
        self.c = Conn(port)
        self.sid = None
        self.n = 0
        r = self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "serve_client", "version": "1"}})
        if "result" not in r:
            raise SystemExit("initialize: %s" % r)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg):
        h = {"Accept": "application/json"}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        st, body, r = self.c.call("POST", "/mcp", msg, h)
        self.sid = self.sid or r.getheader("Mcp-Session-Id")
        if st >= 300:
            raise SystemExit("/mcp: %d %s" % (st, body[:300]))
        return json.loads(body) if body.strip() else None

    def rpc(self, method, params):
        self.n += 1
        return self.post({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})


def run_exec(port, mode, clients, secs):
    lat, errors, lock = [], [], threading.Lock()
    ready = threading.Barrier(clients + 1)
    go = threading.Event()
    state = {"start": 0.0}

    def worker():
        try:
            if mode == "held":
                c = Conn(port)
                sb = create(c)
                path = "/v1/sandboxes/%s/exec" % sb
                body = {"language": "python", "code": HELLO}
                # One untimed run first: the sandbox's first exec pays for cold page caches.
                c.call("POST", path, body)
            else:
                m = Mcp(port)
                args = {"name": "code_execute", "arguments": {"language": "python", "code": HELLO}}
        except BaseException as e:  # report, and let the others run
            with lock:
                errors.append("setup: %s" % e)
            ready.wait()
            return
        ready.wait()
        go.wait()
        mine = []
        while time.perf_counter() - state["start"] < secs:
            t = time.perf_counter()
            try:
                if mode == "held":
                    st, out, _ = c.call("POST", path, body)
                    ok = st == 200 and b'"exit_code":0' in out and b"hello world" in out
                else:
                    r = m.rpc("tools/call", args)
                    res = (r or {}).get("result", {})
                    ok = not res.get("isError") and "hello world" in json.dumps(res)
                    out = json.dumps(r).encode()
            except BaseException as e:  # counted; an MCP client whose session went starts another
                ok, out = False, ("%s: %s" % (type(e).__name__, e)).encode()
                if mode != "held":
                    m = Mcp(port)
            dt = (time.perf_counter() - t) * 1e3
            if ok:
                mine.append(dt)
            else:
                with lock:
                    errors.append(out[:300].decode(errors="replace"))
        with lock:
            lat.extend(mine)
        if mode == "held":
            c.call("DELETE", "/v1/sandboxes/" + sb)

    ts = [threading.Thread(target=worker) for _ in range(clients)]
    for t in ts:
        t.start()
    ready.wait()
    state["start"] = time.perf_counter()
    go.set()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - state["start"]
    out = {"mode": mode, "clients": clients, "seconds": round(elapsed, 2), "rps": round(len(lat) / elapsed, 2),
           "errors": len(errors), "first_error": errors[0] if errors else None}
    out.update(summary(lat))
    return out


def kb(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def inits(spid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == spid and cmd.startswith(b"airlock-init"):
            out.append(int(p))
    return out


def run_mem(port, n, spid):
    c = Conn(port)
    status = "/proc/%d/status" % spid
    rss0, n0 = kb(status, "VmRSS"), len(inits(spid))
    ids = [create(c) for _ in range(n)]
    time.sleep(1)  # let the housekeeper settle (a refill, if the server keeps a pool)
    rss1 = kb(status, "VmRSS")
    pss, unreadable = [], 0
    for p in inits(spid):
        try:
            pss.append(kb("/proc/%d/smaps_rollup" % p, "Pss"))
        except OSError:
            unreadable += 1
    for sb in ids:
        c.call("DELETE", "/v1/sandboxes/" + sb)
    return {"sandboxes": n, "inits_before": n0, "inits": len(pss) + unreadable, "unreadable": unreadable,
            "init_pss_kib_mean": round(sum(pss) / len(pss), 1) if pss else None,
            "server_rss_kib_before": rss0, "server_rss_kib_after": rss1,
            "server_rss_kib_per_sandbox": round((rss1 - rss0) / n, 1)}


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    port, mode = int(argv[1]), argv[2]
    if mode == "create":
        r = run_create(port, int(argv[3]), int(argv[4]) if len(argv) > 4 else 0)
    elif mode == "exec":
        r = run_exec(port, argv[3], int(argv[4]), float(argv[5]))
    elif mode == "mem":
        r = run_mem(port, int(argv[3]), int(argv[4]))
    else:
        raise SystemExit(__doc__)
    print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv)
