#!/usr/bin/env python3
"""phases.py — splits each start that bench/phases.c marked in a trace into phases, from the
scheduler's events: the launcher's fork to the tool's exec, its exec to its first fork (its own
start-up and the work before the sandbox's clone), that fork to the payload's exec (the sandbox's
set-up), the payload's run, the payload's exit to the tool's exit (the teardown and verdict), and
the tool's exit to its reaping. Usage: phases.py PAYLOAD NAME=TRACE... Prints a markdown table of
medians (ms) per tool, with each tool's difference from the first."""
import re
import statistics
import sys

EVENT = re.compile(r"\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)")
PHASES = [
    ("launcher fork -> tool exec", "exec"),
    ("tool start-up, work before its first fork", "fork"),
    ("sandbox set-up: first fork -> payload exec", "pexec"),
    ("payload runs", "pexit"),
    ("teardown and verdict: payload exit -> tool exit", "texit"),
    ("tool exit -> reaped", "end"),
]


def starts(path):
    run = None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = EVENT.match(line)
        if not m:
            continue
        ev = (float(m.group(3)) * 1000, int(m.group(2)), m.group(4), m.group(5))
        if ev[2] == "tracing_mark_write" and "phases start" in ev[3]:
            run = [ev]
        elif run is not None:
            run.append(ev)
            if ev[2] == "tracing_mark_write" and "phases end" in ev[3]:
                yield run
                run = None


def split(run, payload):
    """The phase boundaries of one start, in ms from its mark, or None if an event is missing."""
    t0, at, tool, payload_pid = run[0][0], {}, None, None
    for t, pid, kind, rest in run[1:]:
        t -= t0
        if kind == "sched_process_exec" and tool is None:
            tool, at["exec"] = pid, t
        elif kind == "sched_process_fork" and pid == tool and "fork" not in at:
            at["fork"] = t
        elif kind == "sched_process_exec" and f"filename={payload} " in rest + " ":
            payload_pid, at["pexec"] = pid, t
        elif kind == "sched_process_exit" and pid == payload_pid and "pexit" not in at:
            at["pexit"] = t
        elif kind == "sched_process_exit" and pid == tool:
            at["texit"] = t
        elif kind == "tracing_mark_write":
            at["end"] = t
    if any(k not in at for _, k in PHASES):
        return None
    marks, prev, out = [k for _, k in PHASES], 0.0, []
    for k in marks:
        out.append(at[k] - prev)
        prev = at[k]
    return out + [at["end"]]


def main():
    payload, tools = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    med = {}
    for name, path in tools:
        rows = [s for s in (split(r, payload) for r in starts(path)) if s]
        if not rows:
            sys.exit(f"phases.py: no complete start of {name} in {path}")
        med[name] = [statistics.median(col) for col in zip(*rows)]
        med[name + " n"] = len(rows)
    names = [n for n, _ in tools]
    head = "| phase (median ms) | " + " | ".join(f"{n} (n={med[n + ' n']})" for n in names)
    head += "".join(f" | {n} − {names[0]}" for n in names[1:])
    print(head + " |")
    print("|---" * (1 + 2 * len(names) - 1) + "|")
    for i, (label, _) in enumerate(PHASES + [("whole start (launcher's view)", None)]):
        cells = [f"{med[n][i]:.2f}" for n in names]
        cells += [f"{med[n][i] - med[names[0]][i]:+.2f}" for n in names[1:]]
        print(f"| {label} | " + " | ".join(cells) + " |")


main()
