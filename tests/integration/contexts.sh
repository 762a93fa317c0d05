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
command -v node >/dev/null || al_fail "node is missing (scripts/deps.sh installs it)"
sdk="$AL_SRC/tests/mcp/sdk"
[ -d "$sdk/node_modules/@modelcontextprotocol/sdk" ] || al_fail "the MCP SDK is not installed in $sdk (scripts/deps.sh runs npm ci)"
printf 'version: 1\nrules:\n- name: all\n  tools: ["*"]\n  risk: LOW\n  require_approval: false\n' >"$confdir/sdk.yaml"
chmod 0644 "$confdir/sdk.yaml"
al_serve_start "$dir" --config "$confdir/sdk.yaml" --audit "$dir/sdk.jsonl"
out=$(node "$sdk/contexts.mjs" "$AL_SERVE_URL/mcp" "$AL_TOKEN" 2>"$dir/sdk.err") ||
	{ printf '%s\n' "$out"; cat "$dir/sdk.err" "$dir/serve.err" >&2; al_fail "contexts through the MCP SDK (see above)"; }
al_log "$out"
al_assert_contains "$out" "ok: session B's context does not see session A's" "the SDK's run"
al_pass "interpreter contexts through the official MCP SDK"

# curl: the last NDJSON line of an exec is its result; the checks read it with al_json_get.
cell() { curl -sS -XPOST "$AL_SERVE_URL/v1/sandboxes/$1/exec" -d "$2" | tail -n1; }
mk() { curl -sS -XPOST "$AL_SERVE_URL/v1/sandboxes" -d "$1" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])'; }
a=$(mk '{"limits":{"memory_mb":256}}')
b=$(mk '{}')
cell "$a" '{"language":"python","code":"x = 41"}' >/dev/null
r=$(cell "$a" '{"language":"python","code":"x + 1"}')
al_assert_eq "$(al_json_get "$r" result.cell.value.text)" 42 "curl: state persists across cells"
r=$(cell "$a" '{"language":"python","code":"print(x)","fresh":true}')
al_assert_contains "$(al_json_get "$r" result.stderr)" NameError "curl: a fresh exec sees no context state"
r=$(cell "$b" '{"language":"python","code":"x"}')
al_assert_eq "$(al_json_get "$r" result.cell.error.ename)" NameError "curl: another sandbox's context has no x"
r=$(cell "$a" '{"language":"python","code":"import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\nplt.show()"}')
al_json_get "$r" result.cell.images.0.data | base64 -d >"$dir/fig.png"
al_assert_eq "$(head -c 8 "$dir/fig.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a "curl: the figure is a PNG"
al_assert_eq "$(od -An -tu1 -j16 -N8 "$dir/fig.png" | awk '{print $3*256+$4 "x" $7*256+$8}')" 400x300 "curl: ... of the figure's size"
r=$(cell "$a" '{"language":"python","code":"import pandas as pd\npd.DataFrame({\"a\": [1]})"}')
al_assert_eq "$(al_json_get "$r" result.cell.value.type)" DataFrame "curl: a DataFrame"
al_assert_contains "$(al_json_get "$r" result.cell.value.html)" "<table" "curl: ... arrives as a table"
r=$(cell "$a" '{"language":"python","code":"import time\ntime.sleep(300)","timeout":2}')
al_assert_eq "$(al_json_get "$r" result.status)/$(al_json_get "$r" result.cell.state)" timeout/kept "curl: a timed-out cell keeps the state"
r=$(cell "$a" '{"language":"python","code":"x"}')
al_assert_eq "$(al_json_get "$r" result.cell.value.text)" 41 "curl: ... x is still there"
curl -sS -XPOST "$AL_SERVE_URL/v1/sandboxes/$a/contexts/python/restart" >/dev/null
r=$(cell "$a" '{"language":"python","code":"x"}')
al_assert_eq "$(al_json_get "$r" result.cell.error.ename)" NameError "curl: restart clears the state"
r=$(cell "$a" '{"language":"python","code":"big = bytearray(700 * 1024 * 1024)"}')
al_assert_eq "$(al_json_get "$r" result.status)/$(al_json_get "$r" result.cell.state)" oom/lost "curl: an OOM cell is reported as oom"
kill -TERM "$AL_SERVE_PID"
wait "$AL_SERVE_PID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_pass "interpreter contexts over the JSON API with curl"
