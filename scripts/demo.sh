#!/usr/bin/env bash
# demo.sh — sets up, builds, and runs a Python snippet in a fresh sandbox on the embedded defaults,
# printing the snippet's output and airlock's JSON verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh >/dev/null
code='import os, socket, sys
print("hello from", socket.gethostname(), "as uid", os.getuid(), "in", os.getcwd())
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    print("network: reachable")
except OSError as e:
    print("network:", e.strerror)
try:
    open("/etc/escape", "w")
except OSError as e:
    print("write /etc:", e.strerror)
print("secrets visible:", os.path.exists("/root"))'
# As an ordinary user the default memory, pids and cpu limits need a delegated cgroup: a user
# systemd gives one (a scope with Delegate=yes); without it the demo runs them best effort, and
# airlock says on stderr which were not applied.
run=(./build/airlock run --json)
if [ "$(id -u)" != 0 ]; then
	if systemd-run --user --scope -q -p Delegate=yes true 2>/dev/null; then
		run=(systemd-run --user --scope -q -p Delegate=yes "${run[@]}")
	else
		run+=(--best-effort-limits)
	fi
fi
echo "\$ ${run[*]#./build/} -- python3 -c '...'"
set +e
"${run[@]}" -- python3 -c "$code" > /tmp/airlock-demo.json
rc=$?
set -e
python3 - /tmp/airlock-demo.json <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
print("--- the snippet printed:")
print(v["stdout"].get("data", ""), end="")
print("--- the verdict:")
print(json.dumps(v, indent=2))
PY
rm -f /tmp/airlock-demo.json
exit $rc
