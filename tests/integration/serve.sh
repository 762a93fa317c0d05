#!/usr/bin/env bash
# serve.sh — airlock serve over HTTP, driven with curl: health, create, files (PUT/GET/list), exec
# streamed as NDJSON after a human approved it through /v1/approvals, a denied exec that never
# runs, path traversal, bad routes and bodies, bearer tokens, metrics, the audit log, and SIGTERM
# destroying every sandbox (no process left).
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
al_serve_bin
dir=$(al_tmpdir 0777)
m=$(al_marker)

# start_server NAME ARGS...: airlock serve on a free loopback port; sets PORT and SPID.
start_server() {
	local name=$1
	shift
	rm -f "$dir/$name.port"
	"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --http 127.0.0.1:0 --port-file "$dir/$name.port" \
		--audit "$dir/$name.jsonl" "$@" 2>"$dir/$name.err" &
	SPID=$!
	AL_BG_PIDS+=("$SPID")
	for _ in $(seq 100); do
		[ -s "$dir/$name.port" ] && break
		sleep 0.1
	done
	[ -s "$dir/$name.port" ] || { cat "$dir/$name.err" >&2; al_fail "airlock serve did not start"; }
	PORT=$(cat "$dir/$name.port")
}

# api METHOD PATH [CURL ARGS...]: sets CODE and BODY.
api() {
	local method=$1 path=$2
	shift 2
	BODY=$(curl -s -o - -w '\n%{http_code}' -X "$method" "http://127.0.0.1:$PORT$path" "$@") || true
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}

# approve_next true|false: answers the first pending approval (waits for one to appear).
approve_next() {
	local id=
	for _ in $(seq 100); do
		api GET /v1/approvals
		id=$(printf '%s' "$BODY" | "$AL_PY" -c 'import json,sys; a=json.load(sys.stdin)["approvals"]; print(a[0]["id"] if a else "")')
		[ -n "$id" ] && break
		sleep 0.1
	done
	[ -n "$id" ] || al_fail "no approval became pending"
	api POST "/v1/approvals/$id" -H 'Content-Type: application/json' -d "{\"approve\": $1}"
	al_assert_eq "$CODE" 200 "POST /v1/approvals/$id"
}

start_server main
api GET /v1/health
al_assert_eq "$CODE" 200 "health"
api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
al_assert_eq "$CODE" 201 "create a sandbox: $BODY"
sb=$(printf '%s' "$BODY" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')

# Files (MEDIUM: the shipped rules do not ask).
api PUT "/v1/sandboxes/$sb/files/data/in.txt" --data-binary "hello $m"
al_assert_eq "$CODE" 200 "PUT a file: $BODY"
api GET "/v1/sandboxes/$sb/files/data/in.txt"
al_assert_eq "$BODY" "hello $m" "GET the file back"
api GET "/v1/sandboxes/$sb/files/../../../../etc/passwd" --path-as-is
al_assert_not_contains "$BODY" "root:" "a path out of the workspace"
[ "$CODE" -ge 400 ] || al_fail "a path out of the workspace: $CODE"

# exec, streamed as NDJSON once approved.
curl -s -N -X POST "http://127.0.0.1:$PORT/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' \
	-d '{"language":"shell","code":"cat data/in.txt; echo; echo made > made.txt"}' >"$dir/exec.ndjson" &
cpid=$!
approve_next true
wait "$cpid"
al_assert_contains "$(cat "$dir/exec.ndjson")" "hello $m" "exec output streamed"
al_assert_contains "$(tail -n 1 "$dir/exec.ndjson")" '"exit_code":0' "exec's final result line"

# A denied exec never runs: the file it would make does not appear.
curl -s -X POST "http://127.0.0.1:$PORT/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' \
	-d '{"language":"shell","code":"echo x > denied.txt"}' >"$dir/denied.out" &
cpid=$!
approve_next false
wait "$cpid" || true
al_assert_contains "$(cat "$dir/denied.out")" "den" "the denied exec's answer"
curl -s "http://127.0.0.1:$PORT/v1/sandboxes/$sb/files?path=" >"$dir/list.json"
al_assert_contains "$(cat "$dir/list.json")" "made.txt" "the approved exec's file is listed"
al_assert_not_contains "$(cat "$dir/list.json")" "denied.txt" "the denied exec never ran"

# MCP over HTTP (/mcp), a client without elicitation: its approvals wait in /v1/approvals like
# the JSON API's. Approved runs; denied never runs (the file it would make does not appear).
cat >"$dir/mcphttp.py" <<'PY'
import json, sys, threading, time, urllib.request
base = "http://127.0.0.1:%s" % sys.argv[1]
sid, fails = None, []
def post(msg, timeout=60):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid:
        h["Mcp-Session-Id"] = sid
    req = urllib.request.Request(base + "/mcp", json.dumps(msg).encode(), h, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read().decode()
        if r.headers.get("Content-Type", "").startswith("text/event-stream"):
            msgs = [json.loads(l[5:]) for l in body.splitlines() if l.startswith("data:")]
            body = json.dumps([m for m in msgs if m.get("id") == msg.get("id")][-1]) if msgs else ""
        return r.headers.get("Mcp-Session-Id"), json.loads(body) if body else None
sid, r = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"})
def call(i, tool, args):
    return post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})[1]
sb = call(2, "code_create_sandbox", {"language": "shell"})["result"]["structuredContent"]["sandbox_id"]
def approvals():
    with urllib.request.urlopen(base + "/v1/approvals", timeout=10) as r:
        return json.load(r)["approvals"]
def decide(i, approve, code):
    out = {}
    t = threading.Thread(target=lambda: out.update(r=call(i, "code_execute", {"sandbox_id": sb, "language": "shell", "code": code})))
    t.start()
    pending = []
    for _ in range(100):
        pending = approvals()
        if pending:
            break
        time.sleep(0.1)
    if not pending or pending[0]["tool"] != "code_execute" or code[:20] not in json.dumps(pending[0]):
        fails.append("the MCP call is not listed in /v1/approvals: %s" % pending)
        return None
    req = urllib.request.Request(base + "/v1/approvals/%d" % pending[0]["id"], json.dumps({"approve": approve}).encode(),
                                 {"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=10).read()
    t.join(60)
    return out.get("r")
r = decide(3, True, "echo ok > mcp-approved.txt")
if not r or r["result"].get("isError"):
    fails.append("approved over /v1/approvals: %s" % r)
r = decide(4, False, "echo no > mcp-denied.txt")
if not r or not r["result"].get("isError") or "den" not in json.dumps(r):
    fails.append("denied over /v1/approvals: %s" % r)
listing = json.dumps(call(5, "code_list_files", {"sandbox_id": sb}))
if "mcp-approved.txt" not in listing or "mcp-denied.txt" in listing:
    fails.append("files after approve/deny: %s" % listing)
call(6, "code_destroy_sandbox", {"sandbox_id": sb})
print("\n".join(fails), file=sys.stderr)
sys.exit(1 if fails else 0)
PY
"$AL_PY" "$dir/mcphttp.py" "$PORT" || al_fail "MCP over HTTP with approvals from /v1/approvals (see above)"

# Bad input: the server keeps serving.
api GET /v1/nope
al_assert_eq "$CODE" 404 "unknown route"
api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{bad json'
al_assert_eq "$CODE" 400 "bad JSON"
api DELETE /v1/sandboxes/sb-nope
[ "$CODE" -ge 400 ] || al_fail "deleting an unknown sandbox: $CODE"
api GET /metrics
al_assert_contains "$BODY" "airlock_sandboxes_live" "metrics"
n=$(printf '%s\n' "$BODY" | sed -n 's/^airlock_sandbox_create_seconds_count //p')
[ "${n:-0}" -ge 1 ] || al_fail "sandbox creations in the metrics: '$n'"
al_assert_eq "$(printf '%s\n' "$BODY" | sed -n 's/^airlock_sandbox_create_seconds_bucket{le="+Inf"} //p')" "$n" "every creation in a create-time bucket"

# SIGTERM: every sandbox destroyed, exit 0, nothing of the sandboxes left.
api DELETE "/v1/sandboxes/$sb"
al_assert_eq "$CODE" 200 "delete the sandbox: $BODY"
curl -s -X POST "http://127.0.0.1:$PORT/v1/sandboxes" -d '{}' >/dev/null
# This server's processes only (pid:start time of every descendant): other tests may run
# sandboxes of their own under the same uid right now.
descendants() {
	local p
	for p in $(pgrep -P "$1" 2>/dev/null); do
		echo "$p:$(awk '{print $22}' "/proc/$p/stat" 2>/dev/null)"
		descendants "$p"
	done
}
procs=$(descendants "$SPID")
[ -n "$procs" ] || al_fail "no sandbox process under the server before SIGTERM (the check below could not fail)"
kill -TERM "$SPID"
rc=0
wait "$SPID" || rc=$?
al_assert_eq "$rc" 0 "airlock serve's exit status after SIGTERM"
left=$(for ps in $procs; do
	p=${ps%%:*}
	[ "$(awk '{print $22}' "/proc/$p/stat" 2>/dev/null)" = "${ps#*:}" ] && echo "$p"
done || true)
al_assert_eq "$left" "" "the server's processes left after SIGTERM"
al_assert_contains "$(cat "$dir/main.jsonl")" '"tool":"code_execute"' "audit records"
# Who decided, over which transport, from which client: the JSON API's and /mcp's approvals both
# came from POST /v1/approvals; the peer is the connection's address. A call that ran has a start
# and an end record (event=end), one that never ran a single one.
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_execute approval.by=http approval.decision=approved client.transport=http "$dir/main.jsonl" | wc -l)" 2 "approved execs by http"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=start tool=code_execute approval.by=http "$dir/main.jsonl" | wc -l)" 2 "approved execs' start records"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep tool=code_execute approval.by=http approval.decision=denied "$dir/main.jsonl" | wc -l)" 2 "denied execs by http"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_create_sandbox approval.by=rule "$dir/main.jsonl" | wc -l)" 3 "sandboxes created without approval: by rule"
"$AL_PY" -c 'import json,sys
for l in open(sys.argv[1]):
    c = json.loads(l)["client"]
    assert c["transport"] == "http" and c["peer"].startswith("127.0.0.1:"), c' "$dir/main.jsonl" ||
	al_fail "every record names its HTTP peer"

# A token: no header, a wrong one: 401; the right one: 200.
printf 'tok-%s\n' "$m" >"$dir/token"
chmod 0644 "$dir/token"
start_server tok --token-file "$dir/token"
api GET /v1/health
al_assert_eq "$CODE" 401 "no token"
api GET /v1/health -H "Authorization: Bearer wrong"
al_assert_eq "$CODE" 401 "wrong token"
api GET /v1/health -H "Authorization: Bearer tok-$m"
al_assert_eq "$CODE" 200 "right token"
kill -TERM "$SPID"
wait "$SPID" || true
# Not on loopback without a token: refused at start.
rc=0
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --http 0.0.0.0:0 --audit "$dir/x.jsonl" 2>"$dir/x.err" || rc=$?
[ "$rc" -ne 0 ] || al_fail "serve on 0.0.0.0 without a token started"
al_assert_contains "$(cat "$dir/x.err")" "token" "the refusal names the token"
al_pass "airlock serve over HTTP"
