#!/usr/bin/env bash
# contexts.sh — interpreter contexts (tests/mcp/contexts.py) over the JSON API of airlock serve
# (and a cancel over MCP stdio), then through clients the project did not write (the official MCP
# SDK, curl): state across cells, values and errors, a timed-out cell interrupted with its
# state kept and every process it started gone, a cell that ignores the interrupt losing its state,
# OOM, restart, figures as PNG, DataFrames as tables, named contexts, sandboxes that share nothing.
. "$(dirname "$0")/../lib.sh"

al_serve_bin
dir=$(al_tmpdir)
chmod 0777 "$dir"
cp "$AL_SRC/tests/mcp/client.py" "$AL_SRC/tests/mcp/contexts.py" "$dir/"
chmod 0644 "$dir"/*.py
"$AL_PY" -c 'import matplotlib, pandas' 2>/dev/null ||
	al_fail "python3-matplotlib and python3-pandas are needed (scripts/deps.sh installs them)"
confdir=$(al_tmpdir 0755)
"$AL_PY" "$dir/contexts.py" "$dir" "$confdir" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "interpreter contexts misbehaved (see above)"
al_pass "interpreter contexts over the JSON API, a cancel over MCP stdio"

# The same bullets through clients the project did not write: the official MCP SDK over
# streamable HTTP (tests/mcp/sdk/contexts.mjs, two sessions included), and curl on the JSON API.
printf 'version: 1\nrules:\n- name: all\n  tools: ["*"]\n  risk: LOW\n  require_approval: false\n' >"$confdir/sdk.yaml"
chmod 0644 "$confdir/sdk.yaml"
al_serve_start "$dir" --config "$confdir/sdk.yaml" --audit "$dir/sdk.jsonl"
al_mcp_sdk contexts.mjs contexts
al_assert_contains "$AL_SDK_OUT" "ok: session B's context does not see session A's" "the SDK's run"
al_pass "interpreter contexts through the official MCP SDK"

# curl: the last NDJSON line of an exec is its result (al_exec_last); the checks read it with al_json_get.
mk() { curl -sS -XPOST "$AL_SERVE_URL/v1/sandboxes" -d "$1" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])'; }
a=$(mk '{"limits":{"memory_mb":256}}')
b=$(mk '{}')
al_exec_last "$a" '{"language":"python","code":"x = 41"}' >/dev/null
r=$(al_exec_last "$a" '{"language":"python","code":"x + 1"}')
al_assert_eq "$(al_json_get "$r" result.cell.value.text)" 42 "curl: state persists across cells"
r=$(al_exec_last "$a" '{"language":"python","code":"print(x)","fresh":true}')
al_assert_contains "$(al_json_get "$r" result.stderr)" NameError "curl: a fresh exec sees no context state"
r=$(al_exec_last "$b" '{"language":"python","code":"x"}')
al_assert_eq "$(al_json_get "$r" result.cell.error.ename)" NameError "curl: another sandbox's context has no x"
r=$(al_exec_last "$a" '{"language":"python","code":"import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\nplt.show()"}')
al_json_get "$r" result.cell.images.0.data | base64 -d >"$dir/fig.png"
al_assert_eq "$(head -c 8 "$dir/fig.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a "curl: the figure is a PNG"
al_assert_eq "$(od -An -tu1 -j16 -N8 "$dir/fig.png" | awk '{print $3*256+$4 "x" $7*256+$8}')" 400x300 "curl: ... of the figure's size"
# ps shows the kernel as a short line, not its source; pid 1 as airlock-init, never its environment.
r=$(al_exec_last "$a" '{"language":"python","code":"import os\nprint(len(open(\"/proc/self/cmdline\").read()) < 200, open(\"/proc/1/cmdline\").read().rstrip(\"\\0\"), \"AL_KERNEL_SOURCE\" in os.environ)"}')
al_assert_eq "$(al_json_get "$r" result.stdout)" "True airlock-init False" "curl: the kernel's and pid 1's command lines"
r=$(al_exec_last "$a" '{"language":"python","code":"import pandas as pd\npd.DataFrame({\"a\": [1]})"}')
al_assert_eq "$(al_json_get "$r" result.cell.value.type)" DataFrame "curl: a DataFrame"
al_assert_contains "$(al_json_get "$r" result.cell.value.html)" "<table" "curl: ... arrives as a table"
r=$(al_exec_last "$a" '{"language":"python","code":"import time\ntime.sleep(300)","timeout":2}')
al_assert_eq "$(al_json_get "$r" result.status)/$(al_json_get "$r" result.cell.state)" timeout/kept "curl: a timed-out cell keeps the state"
r=$(al_exec_last "$a" '{"language":"python","code":"x"}')
al_assert_eq "$(al_json_get "$r" result.cell.value.text)" 41 "curl: ... x is still there"
curl -sS -XPOST "$AL_SERVE_URL/v1/sandboxes/$a/contexts/python/restart" >/dev/null
r=$(al_exec_last "$a" '{"language":"python","code":"x"}')
al_assert_eq "$(al_json_get "$r" result.cell.error.ename)" NameError "curl: restart clears the state"
r=$(al_exec_last "$a" '{"language":"python","code":"big = bytearray(700 * 1024 * 1024)"}')
al_assert_eq "$(al_json_get "$r" result.status)/$(al_json_get "$r" result.cell.state)" oom/lost "curl: an OOM cell is reported as oom"
# What was approved is what runs (issue 30): a thread a cell leaves running does not outlive the
# cell (it spun on, burning CPU past the cell's limit, and swapped the code file a fresh exec read by
# path: HIJACKED ran instead of the approved bytes); a fresh exec reads its program from a sealed
# descriptor, never from the workspace.
spin='import threading, time, os\ndef spin():\n    n = 0\n    while True:\n        n += 1\n        if n % 100000 == 0:\n            open(\"/workspace/spin\", \"w\").write(str(n))\n            os.makedirs(\"/workspace/.airlock\", exist_ok=True)\n            for f in (\"main.py\", \"main.sh\"):\n                open(\"/workspace/.airlock/\" + f, \"w\").write(\"print(\\\"HIJACKED\\\")\\n\" if f.endswith(\"py\") else \"echo HIJACKED\\n\")\nthreading.Thread(target=spin, daemon=True).start()\ntime.sleep(0.3)\nx = 1\nx'
r=$(al_exec_last "$a" "{\"language\":\"python\",\"code\":\"$spin\"}")
al_assert_eq "$(al_json_get "$r" result.cell.state)/$(al_json_get "$r" result.cell.kernel_killed.reason)" lost/left-running \
	"curl: a cell that leaves a thread running loses its kernel"
al_assert_contains "$(al_json_get "$r" result.stderr)" "left 1 thread" "curl: ... and its stderr says so"
n1=$(curl -sS "$AL_SERVE_URL/v1/sandboxes/$a/files/spin")
sleep 1
n2=$(curl -sS "$AL_SERVE_URL/v1/sandboxes/$a/files/spin")
[ -n "$n1" ] && [ "$n1" = "$n2" ] || al_fail "the cell's thread still ran after the cell ended (its counter went $n1 -> $n2)"
for i in 1 2 3 4 5; do
	r=$(al_exec_last "$a" '{"language":"python","code":"print(\"the approved bytes\")","fresh":true}')
	al_assert_eq "$(al_json_get "$r" result.stdout)" "the approved bytes" "curl: fresh exec $i ran what was approved"
	r=$(al_exec_last "$a" '{"language":"shell","code":"echo the approved command","fresh":true}')
	al_assert_eq "$(al_json_get "$r" result.stdout)" "the approved command" "curl: fresh shell exec $i ran what was approved"
done
seal='import fcntl, sys\nassert sys.argv[0] == \"/dev/fd/3\", sys.argv\nprint(fcntl.fcntl(3, 1034) & 15)\ntry:\n    open(\"/dev/fd/3\", \"w\").write(\"x\")\n    print(\"written\")\nexcept OSError as e:\n    print(\"refused\")'
r=$(al_exec_last "$a" "{\"language\":\"python\",\"code\":\"$seal\",\"fresh\":true}")
# F_GET_SEALS: F_SEAL_SEAL|SHRINK|GROW|WRITE = 15
al_assert_eq "$(al_json_get "$r" result.stdout | xargs)" "15 refused" "curl: a fresh exec's program is a sealed descriptor it cannot write"

# A sandbox cannot make the server allocate without bound (issue 30): a cell forging its kernel's
# answer frame (32 MiB, a flat array of 16 million zeros: the server's RSS went 77 MB -> 1.42 GB)
# breaks the protocol; the kernel is killed, said so, and the server's peak memory stays small.
forge='import __main__\n__main__.send(b\"r\", b\"[\" + b\"0,\" * (16 << 20) + b\"0]\")'
r=$(al_exec_last "$a" "{\"language\":\"python\",\"code\":\"$forge\"}")
al_assert_eq "$(al_json_get "$r" result.cell.kernel_killed.reason)/$(al_json_get "$r" result.cell.state)" protocol/lost \
	"curl: a forged answer frame kills its kernel"
al_assert_contains "$(al_json_get "$r" result.stderr)" "broke its protocol" "curl: ... and says so"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$AL_SERVE_PID/status")
al_log "server peak RSS after the forged frame: $hwm kB"
[ "$hwm" -lt 400000 ] || al_fail "the server's peak RSS reached $hwm kB on a forged answer frame"
r=$(al_exec_last "$a" '{"language":"python","code":"print(6 * 7)"}')
al_assert_eq "$(al_json_get "$r" result.stdout)" 42 "curl: the next cell runs in a fresh kernel"
kill -TERM "$AL_SERVE_PID"
wait "$AL_SERVE_PID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_pass "interpreter contexts over the JSON API with curl"
