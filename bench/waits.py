#!/usr/bin/env python3
"""waits.py — where a start waits: reads `perf script` of sched_switch/sched_wakeup/sched_process_fork/
sched_process_exec with call chains (recorded system-wide, so the wakers are in it too) and sums, per
start of the program named, every interval one of its processes spent blocked (S or D), classified by
the kernel function it slept in. Usage: waits.py SCRIPT_OUTPUT PROGRAM_PATH (bench/waits.sh runs it)."""
import collections
import re
import sys

# (first kernel frame that starts with, what it is): the first match up the stack names the wait
KINDS = [
    ("rcu_sync_enter", "cgroup move: rcu_sync (v1 threadgroup rwsem)"),
    ("percpu_down_write", "cgroup move: percpu rwsem"),
    ("synchronize_rcu_expedited", "expedited RCU grace period"),
    ("synchronize_rcu", "RCU grace period"),
    ("do_epoll_wait", "epoll_wait (the supervisor's loop)"),
    ("anon_pipe_read", "pipe read"),
    ("do_sys_poll", "poll/ppoll"),
    ("do_wait", "wait4/waitid"),
    ("folio_wait", "page-fault I/O"),
    ("unix_stream_read", "unix socket read"),
    ("__skb_wait_for_more_packets", "unix socket read"),
    ("mutex_lock", "mutex"),
]
SKIP = ("__schedule", "schedule")


def events(path):
    cur = None
    with open(path) as f:
        for line in f:
            if not line.strip():
                if cur:
                    yield cur
                cur = None
            elif line[0] not in "\t ":
                m = re.match(r"\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)", line)
                if m:
                    cur = {"pid": int(m.group(2)), "t": float(m.group(4)), "ev": m.group(5),
                           "args": m.group(6), "stack": []}
            elif cur is not None:
                parts = line.split()
                if len(parts) >= 2:
                    cur["stack"].append(parts[1].split("+")[0])
    if cur:
        yield cur


def kind(stack):
    for frame in stack:
        for prefix, name in KINDS:
            if frame.startswith(prefix):
                return name
    return " < ".join([f for f in stack if not f.startswith(SKIP)][:4])


def main():
    script, prog = sys.argv[1], sys.argv[2]
    ours, asleep, runs = set(), {}, 0
    total, count, each = collections.defaultdict(float), collections.Counter(), collections.defaultdict(list)
    for e in events(script):
        if e["ev"] == "sched:sched_process_exec" and "filename=" + prog in e["args"] and e["pid"] not in ours:
            ours.add(e["pid"])
            runs += 1
        elif e["ev"] == "sched:sched_process_fork" and e["pid"] in ours:
            ours.add(int(re.search(r"child_pid=(\d+)", e["args"]).group(1)))
        elif e["ev"] == "sched:sched_switch":
            m = re.search(r"prev_pid=(\d+) .*prev_state=(\S+)", e["args"])
            if m and int(m.group(1)) in ours and not m.group(2).startswith("R"):
                asleep[int(m.group(1))] = (e["t"], kind(e["stack"]))
        elif e["ev"] == "sched:sched_wakeup":
            pid = int(re.search(r" pid=(\d+)", " " + e["args"]).group(1))
            if pid in asleep:
                t0, k = asleep.pop(pid)
                ms = (e["t"] - t0) * 1000
                total[k] += ms
                count[k] += 1
                each[k].append(ms)
    print(f"starts: {runs}")
    for k in sorted(total, key=lambda k: -total[k]):
        v = sorted(each[k])
        print(f"{total[k] / max(runs, 1):8.3f} ms/start {count[k] / max(runs, 1):6.2f}/start "
              f"median {v[len(v) // 2]:.3f} max {v[-1]:.3f}  {k}")


if __name__ == "__main__":
    main()
