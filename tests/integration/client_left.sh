#!/usr/bin/env bash
# client_left.sh — a client that goes away takes its work with it (issue 30), judged from outside:
# an exec of a program that prints nothing (sleep), whose curl is killed, is gone from the host
# within seconds over NDJSON, SSE, and MCP's streamable HTTP (JSON and SSE answers); the next
# exec on the same sandbox runs at once (no "another execution was running", no held max_execs
# slot); the audit log's end record of each says the client left.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
al_serve_bin
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755) # as root, a config file anyone but root could change is refused
m=$(al_marker)
{
	serve_config_head
	cat <<'YAML'
server:
  max_execs: 1
YAML
} >"$confdir/c.yaml"
chmod 0644 "$confdir/c.yaml"
al_token_file "$dir/client.token" client >/dev/null
sock="$dir/serve.sock"
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --config "$confdir/c.yaml" --http 127.0.0.1:0 --port-file "$dir/port" \
	--socket "$sock" --token-file "$dir/client.token" --audit "$dir/audit.jsonl" 2>"$dir/serve.err" &
SPID=$!
AL_BG_PIDS+=("$SPID")
for _ in $(seq 150); do
	[ -s "$dir/port" ] && [ -S "$sock" ] && break
	sleep 0.1
done
[ -s "$dir/port" ] || { cat "$dir/serve.err" >&2; al_fail "airlock serve did not start"; }

lcurl() { "${AL_SETPRIV[@]}" curl -q -s --unix-socket "$sock" "$@"; }
sb=$(lcurl -m 60 -X POST -H 'Content-Type: application/json' -d '{}' http://airlock/v1/sandboxes)
sb=$(al_json_get "$sb" sandbox_id)
[ -n "$sb" ] || al_fail "no sandbox was created"

# wait_started MARKER: until a host process carries MARKER in its argv (60 s at most).
wait_started() {
	for _ in $(seq 600); do
		[ -z "$(al_marker_pids "$1")" ] || return 0
		sleep 0.1
	done
	cat "$dir/serve.err" >&2
	al_fail "the execution marked $1 never started"
}

# left HOW CURL-PID MARKER: kills the client and asserts the program is gone within 5 s (the server
# notices within a second; 5 s is the generous bound for a loaded host).
left() {
	local how=$1 cpid=$2 mark=$3 t0
	wait_started "$mark"
	kill -KILL "$cpid"
	wait "$cpid" 2>/dev/null || true
	t0=$(date +%s.%N)
	local end=$((SECONDS + 6)) # 5 s at least (SECONDS counts whole seconds)
	while [ -n "$(al_marker_pids "$mark")" ] && [ "$SECONDS" -lt "$end" ]; do
		sleep 0.1
	done
	[ -z "$(al_marker_pids "$mark")" ] ||
		al_fail "$how: the abandoned execution still runs 5 s after its client went away: $(al_marker_pids "$mark")"
	al_pass "$how: the abandoned execution was gone $("$AL_PY" -c "import time; print('%.1f' % (time.time() - $t0))") s after its client went away"
}

# A program that prints nothing, under a shell that carries the marker in its argv.
quiet() { printf "sh -c 'sleep 200; true' %s" "$1"; }

# next HOW: the next exec on the sandbox runs at once (before: 504 after 30 s, the sandbox busy).
next() {
	local out
	out=$(lcurl -m 20 -o - -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' \
		-d "{\"command\": \"echo next-$m\"}" "http://airlock/v1/sandboxes/$sb/exec") || true
	al_assert_contains "$out" "next-$m" "$how: the next exec on the sandbox runs at once: $out"
}

# ---- the JSON API: NDJSON and SSE --------------------------------------------------------------
for how in ndjson sse; do
	accept=application/x-ndjson
	[ "$how" = ndjson ] || accept=text/event-stream
	# The body from a file, so that only the sandbox's processes carry the marker; curl itself
	# in the background (not a function's subshell), so that $! is the client to kill.
	printf '{"command": "%s"}' "$(quiet "$m-$how")" >"$dir/$how.json"
	"${AL_SETPRIV[@]}" curl -q -s --unix-socket "$sock" -N -m 300 -o /dev/null -X POST -H 'Content-Type: application/json' \
		-H "Accept: $accept" -d @"$dir/$how.json" "http://airlock/v1/sandboxes/$sb/exec" &
	left "$how" $! "$m-$how"
	next "$how"
done

# ---- MCP's streamable HTTP: an answer as SSE, and as one JSON body ------------------------------
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
sid=$(lcurl -m 30 -D - -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	-d "$init" http://airlock/mcp | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
[ -n "$sid" ] || al_fail "the MCP session has no id"
mcp() { # ACCEPT BODY [CURL ARGS]: one message on the session
	local accept=$1 body=$2
	shift 2
	lcurl -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' -H "Accept: $accept" -d "$body" "$@" http://airlock/mcp
}
mcp 'application/json, text/event-stream' '{"jsonrpc":"2.0","method":"notifications/initialized"}' -m 30 -o /dev/null
call() { # ID CODE: a tools/call of code_execute in the session's own sandbox
	CODE=$2 ID=$1 "$AL_PY" -c 'import json,os; print(json.dumps({"jsonrpc": "2.0", "id": int(os.environ["ID"]), "method": "tools/call",
  "params": {"name": "code_execute", "arguments": {"language": "shell", "code": os.environ["CODE"]}}}))'
}
id=10
for how in mcp-sse mcp-json; do
	accept='application/json, text/event-stream'
	[ "$how" = mcp-sse ] || accept=application/json
	call $id "$(quiet "$m-$how")" >"$dir/$how.json"
	"${AL_SETPRIV[@]}" curl -q -s --unix-socket "$sock" -N -m 300 -o /dev/null -H "Mcp-Session-Id: $sid" \
		-H 'Content-Type: application/json' -H "Accept: $accept" -d @"$dir/$how.json" http://airlock/mcp &
	left "$how" $! "$m-$how"
	out=$(mcp 'application/json, text/event-stream' "$(call $((id + 1)) "echo next-$m")" -m 20) || true
	al_assert_contains "$out" "next-$m" "$how: the session's next call runs at once: $out"
	id=$((id + 2))
done

# ---- the audit log: each abandoned call's end record says the client left ----------------------
kill -TERM "$SPID"
wait "$SPID" || al_fail "airlock serve did not exit 0 on SIGTERM"
got=$(M=$m "$AL_PY" - "$dir/audit.jsonl" <<'PY'
import json, os, sys
m = os.environ["M"]
out = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") != "end" or r.get("tool") != "code_execute":
        continue
    p = r.get("params") or {}
    text = json.dumps(p)
    for how in ("ndjson", "sse", "mcp-sse", "mcp-json"):
        if "%s-%s" % (m, how) in text:
            res = r.get("result") or {}
            out.append("%s:%s:%s" % (how, res.get("status"), res.get("client_left")))
            break
    else:
        if "next-" + m in text and (r.get("result") or {}).get("client_left"):
            out.append("next:client_left")
print(" ".join(sorted(out)))
PY
)
al_assert_eq "$got" "mcp-json:cancelled:True mcp-sse:cancelled:True ndjson:cancelled:True sse:cancelled:True" \
	"the end records of the abandoned calls (and of no other)"
al_pass "a client that goes away takes its work with it"
