#!/usr/bin/env python3
"""density_client.py — the load of bench/density.sh: POST /v1/sandboxes from C keep-alive clients
until N idle sandboxes live or a create fails, sampling the host's own counters (/proc/meminfo:
MemAvailable, Slab, SUnreclaim, PageTables, KernelStack, Percpu, Shmem) and the server's (its
descriptors, threads, RSS) before and every STEP sandboxes. Prints one JSON object.

  density_client.py PORT SERVER_PID N STEP C
"""
import http.client
import json
import os
import sys
import threading
import time

KEYS = ("MemAvailable", "Slab", "SUnreclaim", "PageTables", "KernelStack", "Percpu", "Shmem")


def sample(pid):
    mem = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            if k in KEYS:
                mem[k] = int(v.split()[0])
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, v = line.split(":", 1)
            status[k] = (v.split() or [""])[0]
    return dict(mem, fds=len(os.listdir(f"/proc/{pid}/fd")), threads=int(status["Threads"]),
                rss_kib=int(status["VmRSS"]), procs=sum(1 for p in os.listdir("/proc") if p.isdigit()))


def per(base, now, n):
    """The cost of one sandbox: what each counter moved, divided by n (MemAvailable: its drop)."""
    out = {}
    for k in base:
        d = base[k] - now[k] if k == "MemAvailable" else now[k] - base[k]
        out[k] = round(d / n, 2)
    return out


def main():
    port, pid, n, step, conc = (int(a) for a in sys.argv[1:6])
    token = os.environ.get("BENCH_TOKEN", "")
    lock = threading.Lock()
    made, failure, samples = [0], [], []
    base = sample(pid)
    t0 = time.monotonic()

    def worker():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        while True:
            with lock:
                if failure or made[0] >= n:
                    return
                made[0] += 1
            c.request("POST", "/v1/sandboxes", body=b"{}",
                      headers={"Content-Type": "application/json", "Authorization": "Bearer " + token})
            r = c.getresponse()
            body = r.read()
            with lock:
                if r.status != 201:
                    made[0] -= 1
                    if not failure:
                        failure.append({"status": r.status, "body": body.decode(errors="replace")[:300],
                                        "after": made[0]})
                    return

    threads = [threading.Thread(target=worker) for _ in range(conc)]
    for t in threads:
        t.start()
    last = 0
    while any(t.is_alive() for t in threads):
        time.sleep(0.5)
        with lock:
            k = made[0]
        if k - last >= step:
            samples.append({"sandboxes": k, "secs": round(time.monotonic() - t0, 1), **sample(pid)})
            last = k
    secs = time.monotonic() - t0
    time.sleep(2)  # the last inits settle (their setup's page faults and frees)
    now = sample(pid)
    k = made[0]
    print(json.dumps({"sandboxes": k, "create_secs": round(secs, 1), "failure": failure[0] if failure else None,
                      "per_sandbox": per(base, now, k) if k else {}, "base": base, "end": now,
                      "samples": samples}))


if __name__ == "__main__":
    main()
