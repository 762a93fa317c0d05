#!/usr/bin/env bash
# serve.sh — airlock serve over HTTP, driven with curl: health, create, files (PUT/GET/list), exec
# streamed as NDJSON after a human approved it through /v1/approvals, a denied exec that never
# runs, path traversal, bad routes and bodies, bearer tokens, metrics, the audit log, and SIGTERM
# destroying every sandbox (no process left).
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
serve_bin=$(dirname "$AIRLOCK")/airlock-serve
[ -x "$serve_bin" ] || al_fail "airlock-serve is not built beside airlock"
if [ "$AL_AIRLOCK_BIN" != "$AIRLOCK" ]; then # user mode: a 0755 copy beside the airlock copy
	install -m 0755 "$serve_bin" "$(dirname "$AL_AIRLOCK_BIN")/airlock-serve"
fi
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

# Bad input: the server keeps serving.
api GET /v1/nope
al_assert_eq "$CODE" 404 "unknown route"
api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{bad json'
al_assert_eq "$CODE" 400 "bad JSON"
api DELETE /v1/sandboxes/sb-nope
[ "$CODE" -ge 400 ] || al_fail "deleting an unknown sandbox: $CODE"
api GET /metrics
al_assert_contains "$BODY" "airlock_sandboxes_live" "metrics"

# SIGTERM: every sandbox destroyed, exit 0, nothing of the sandboxes left.
api DELETE "/v1/sandboxes/$sb"
al_assert_eq "$CODE" 200 "delete the sandbox: $BODY"
curl -s -X POST "http://127.0.0.1:$PORT/v1/sandboxes" -d '{}' >/dev/null
kill -TERM "$SPID"
rc=0
wait "$SPID" || rc=$?
al_assert_eq "$rc" 0 "airlock serve's exit status after SIGTERM"
al_assert_eq "$(pgrep -f airlock-init -u "$AL_PAYLOAD_HOST_UID" 2>/dev/null | wc -l)" 0 "sandbox processes left"
al_assert_contains "$(cat "$dir/main.jsonl")" '"tool":"code_execute"' "audit records"

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
