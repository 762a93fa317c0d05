#!/usr/bin/env bash
# principals.sh — who may do what on airlock serve (issue 16), judged from outside as distinct
# tokens and local users: TCP without a token is 401; a client's sandboxes and MCP sessions are
# 404 to another client; a reviewer's token runs nothing and a client's decides nothing; the
# reviewer sees the whole request (a tail hidden behind padding, an invisible character spelled
# out) and an approval naming another digest approves nothing (the code never ran); the Unix
# socket is 0600, refuses another local user, and names its peer by uid, who cannot approve its
# own call; the audit log names each principal.
# shellcheck disable=SC2153 # CODE and BODY are al_api's (tests/lib.sh), not misspelt code and body
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
al_serve_bin
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
cat >"$confdir/p.yaml" <<'EOF'
version: 1
rules:
- name: asked
  tools: [code_execute]
  when:
  - param: code
    matches: asked
  risk: HIGH
  approval_timeout: 60s
- name: the-rest
  tools: ["*"]
  risk: LOW
  require_approval: false
approval:
  deny_above: HIGH
  channels: [http]
server:
  max_sandboxes: 16
  max_execs: 8
  idle_ttl: 10m
  max_lifetime: 1h
  pool: {}
  quota: {sessions: 2, sandboxes: 2, execs: 1, connections: 4}
EOF
chmod 0644 "$confdir/p.yaml"

al_serve_tokens "$dir/clients.token"
alice=$AL_ALICE
bob=$AL_BOB
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
sock="$dir/serve.sock"
al_serve_launch "$dir/serve" "airlock serve" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --config "$confdir/p.yaml" \
	--socket "$sock" --token-file "$dir/clients.token" --approver-token-file "$dir/reviewer.token" --audit "$dir/audit.jsonl"
SPID=$AL_SERVE_PID
PORT=$SERVE_PORT

# pending WHAT: waits until the reviewer sees a pending call; sets id (BODY holds the list).
pending() {
	id=
	for _ in $(seq 100); do
		al_api_as "$reviewer" GET /v1/approvals
		id=$(al_jget 'd["approvals"][0]["id"] if d["approvals"] else ""')
		[ -n "$id" ] && return 0
		sleep 0.1
	done
	al_fail "$1 is not waiting for approval"
}

# ---- TCP: a token or nothing --------------------------------------------------------------------
al_api_as "" GET /v1/health
al_assert_eq "$CODE" 401 "TCP without a token"
al_api_as "wrong-$m-0123456789abcdef" GET /v1/health
al_assert_eq "$CODE" 401 "TCP with a wrong token"

# ---- ownership: another client's sandbox is unknown to bob -------------------------------------
al_api_as "$alice" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"language": "shell"}'
al_assert_eq "$CODE" 201 "alice creates a sandbox: $BODY"
sb=$(al_jget 'd["sandbox_id"]')
al_api_as "$alice" PUT "/v1/sandboxes/$sb/files/secret.txt" --data-binary "alice-$m"
al_assert_eq "$CODE" 200 "alice writes her file"
al_api_as "$bob" GET "/v1/sandboxes/sb-not-$m/files/secret.txt"
unknown=$BODY
al_assert_eq "$CODE" 404 "bob reads an id that never existed"
al_api_as "$bob" GET "/v1/sandboxes/$sb/files/secret.txt"
al_assert_eq "$CODE" 404 "bob reads alice's file"
al_assert_eq "$(printf '%s' "$BODY" | sed "s/$sb/ID/")" "$(printf '%s' "$unknown" | sed "s/sb-not-$m/ID/")" \
	"bob's answer for alice's sandbox is the answer for an unknown id"
al_api_as "$bob" PUT "/v1/sandboxes/$sb/files/secret.txt" --data-binary "bob-$m"
al_assert_eq "$CODE" 404 "bob overwrites alice's file"
al_api_as "$bob" GET "/v1/sandboxes/$sb/files"
al_assert_eq "$CODE" 404 "bob lists alice's workspace"
al_api_as "$bob" POST "/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' -d "{\"command\": \"echo bob-$m > bob.txt\"}"
al_assert_eq "$CODE" 404 "bob runs code in alice's sandbox"
al_api_as "$bob" DELETE "/v1/sandboxes/$sb"
al_assert_eq "$CODE" 404 "bob destroys alice's sandbox"
al_api_as "$alice" GET "/v1/sandboxes/$sb/files/secret.txt"
al_assert_eq "$CODE:$BODY" "200:alice-$m" "alice's file after bob's attempts"
al_api_as "$alice" GET "/v1/sandboxes/$sb/files"
al_assert_not_contains "$BODY" "bob.txt" "bob's code never ran in alice's sandbox"

# An MCP session is its initializer's: bob with alice's session id is 404.
mcp_init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}'
sid=$(curl -q -s -m 30 -D - -o /dev/null -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' \
	-H 'Accept: application/json, text/event-stream' -d "$mcp_init" "http://127.0.0.1:$PORT/mcp" |
	tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
[ -n "$sid" ] || al_fail "alice's MCP session has no id"
al_api_as "$bob" POST /mcp -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' \
	-H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
al_assert_eq "$CODE" 404 "bob uses alice's MCP session"
al_api_as "$alice" POST /mcp -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' \
	-H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
al_assert_eq "$CODE" 202 "alice uses her MCP session"

# ---- Host: a port is digits only -------------------------------------------------------------------
# Whatever follows the colon is read (it was ignored: "127.0.0.1:80@evil" passed as loopback).
al_api_as "$alice" GET /v1/health -H 'Host: 127.0.0.1:80@evil.example'
al_assert_eq "$CODE" 403 "a Host whose port is followed by more"
al_api_as "$alice" GET /v1/health -H "Host: 127.0.0.1:$PORT"
al_assert_eq "$CODE" 200 "a Host naming this listener"

# ---- roles ----------------------------------------------------------------------------------------
al_api_as "$reviewer" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
al_assert_eq "$CODE" 403 "a reviewer's token creates a sandbox"
al_api_as "$alice" POST /v1/approvals/1 -H 'Content-Type: application/json' -d '{"approve": true}'
al_assert_eq "$CODE" 403 "a client's token decides an approval"

# ---- the whole request, bound by its digest --------------------------------------------------
# Padding hides the tail of a one-line preview; a right-to-left override reorders what a terminal
# shows. The reviewer must see both, and only the request shown may run.
pad=$(printf '%*s' 3000 '')
code="echo asked-$m;$pad touch hidden-$m # $(printf '\u202e')txt.exe"
body=$(CODE_TEXT=$code "$AL_PY" -c 'import json,os; print(json.dumps({"language": "shell", "code": os.environ["CODE_TEXT"]}))')
curl -q -s -m 90 -o "$dir/asked.out" -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' \
	-d "$body" "http://127.0.0.1:$PORT/v1/sandboxes/$sb/exec" &
cpid=$!
pending "alice's call"
al_assert_contains "$(al_jget 'd["approvals"][0]["request"]["code"]')" "touch hidden-$m" "the reviewer sees the padded tail"
al_assert_contains "$(al_jget 'd["approvals"][0]["code_visible"]')" '\u{202E}' "the override is spelled out"
al_assert_eq "$(al_jget 'd["approvals"][0]["code_bytes"]')" "$(printf '%s' "$code" | wc -c)" "the code's size"
al_assert_eq "$(al_jget 'd["approvals"][0]["principal"]')" "token:alice" "who asks"
digest=$(al_jget 'd["approvals"][0]["digest"]')
al_api_as "$bob" GET /v1/approvals
al_assert_eq "$(al_jget 'len(d["approvals"])')" 0 "bob sees none of alice's pending calls"
al_api_as "$alice" GET /v1/approvals
al_assert_eq "$(al_jget 'd["approvals"][0]["digest"]')" "$digest" "alice sees her own pending call"
other=sha256:$(printf 'another request' | sha256sum | cut -d' ' -f1)
al_api_as "$reviewer" POST "/v1/approvals/$id" -H 'Content-Type: application/json' -d "{\"approve\": true, \"digest\": \"$other\"}"
al_assert_eq "$CODE" 409 "an approval naming another request's digest"
al_api_as "$reviewer" POST "/v1/approvals/$id" -H 'Content-Type: application/json' -d '{"approve": true}'
al_assert_eq "$CODE" 409 "an approval naming no digest"
al_api_as "$alice" GET "/v1/sandboxes/$sb/files"
al_assert_not_contains "$BODY" "hidden-$m" "nothing ran before the approval"
al_api_as "$reviewer" POST "/v1/approvals/$id" -H 'Content-Type: application/json' -d "{\"approve\": true, \"digest\": \"$digest\"}"
al_assert_eq "$CODE" 200 "the reviewer approves what was shown"
wait "$cpid" || true
al_assert_contains "$(cat "$dir/asked.out")" "asked-$m" "the approved call ran"
al_api_as "$alice" GET "/v1/sandboxes/$sb/files"
al_assert_contains "$BODY" "hidden-$m" "what ran is the whole request the reviewer saw"

# ---- the Unix socket ---------------------------------------------------------------------------
al_assert_eq "$(stat -c '%a %u' "$sock")" "600 $AL_CALLER_UID" "the socket's mode and owner"
rc=0
setpriv --reuid=65533 --regid=65533 --clear-groups -- curl -q -s -m 10 --unix-socket "$sock" http://airlock/v1/health \
	>/dev/null 2>&1 || rc=$?
al_assert_eq "$rc" 7 "another local user connects to the socket (curl: 7, could not connect)"
# The server's own uid is a client there, known by uid, without any token.
lcurl() { "${AL_SETPRIV[@]}" curl -q -s -m 90 --unix-socket "$sock" "$@"; }
out=$(lcurl -o - -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' http://airlock/v1/sandboxes)
al_assert_eq "${out##*$'\n'}" 201 "a sandbox over the socket: $out"
lsb=$(printf '%s' "${out%$'\n'*}" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
lcurl -o "$dir/local.out" -X POST -H 'Content-Type: application/json' -d "{\"command\": \"echo asked-local-$m\"}" \
	"http://airlock/v1/sandboxes/$lsb/exec" &
cpid=$!
pending "the socket peer's call"
al_assert_eq "$(al_jget 'd["approvals"][0]["principal"]')" "uid:$AL_CALLER_UID" "the socket peer's principal"
digest=$(al_jget 'd["approvals"][0]["digest"]')
out=$(lcurl -o - -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' \
	-d "{\"approve\": true, \"digest\": \"$digest\"}" "http://airlock/v1/approvals/$id")
al_assert_eq "${out##*$'\n'}" 403 "the caller approves its own call"
if [ "$AL_CALLER_UID" = 0 ]; then
	al_assert_contains "$out" "own call" "root is an approver, but not of its own call"
fi
al_api_as "$reviewer" POST "/v1/approvals/$id" -H 'Content-Type: application/json' -d "{\"approve\": true, \"digest\": \"$digest\"}"
al_assert_eq "$CODE" 200 "the reviewer approves the socket peer's call"
wait "$cpid" || true
al_assert_contains "$(cat "$dir/local.out")" "asked-local-$m" "the socket peer's approved call ran"
# Alice's token gets nothing of the socket peer's sandbox either.
al_api_as "$alice" GET "/v1/sandboxes/$lsb/files"
al_assert_eq "$CODE" 404 "alice lists the socket peer's workspace"

# ---- quotas: one principal's flood leaves room for the others --------------------------------------
mcp_sessions() { # TOKEN N: N initialize calls; prints their HTTP codes
	for _ in $(seq "$2"); do
		curl -q -s -m 30 -o /dev/null -w '%{http_code} ' -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' -d "$mcp_init" "http://127.0.0.1:$PORT/mcp"
	done
}
al_assert_eq "$(mcp_sessions "$bob" 3)" "200 200 429 " "bob's MCP sessions beyond his quota of 2"
al_assert_eq "$(mcp_sessions "$alice" 1)" "200 " "alice's second session while bob is at his quota"
codes=
for _ in 1 2 3; do
	al_api_as "$bob" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
	codes="$codes$CODE "
	[ "$CODE" = 201 ] && bsb=$(al_jget 'd["sandbox_id"]')
done
al_assert_eq "$codes" "201 201 429 " "bob's sandboxes beyond his quota of 2"
al_assert_contains "$BODY" "quota" "the refusal names the quota"
al_api_as "$alice" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
al_assert_eq "$CODE" 201 "alice's second sandbox while bob is at his quota"
# Bob's first execution runs until the test lets it end (a file "stop" in his workspace; 60 s at
# most), so his second is asked while the first surely runs, however slow the host. Its shell
# carries the marker (the body comes from a file: no other command line does); seeing it on the
# host says the first was admitted.
cat >"$dir/first.json" <<EOF
{"command": "sh -c 'i=0; while [ ! -e stop ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done' $m-first"}
EOF
curl -q -s -m 90 -o /dev/null -H "Authorization: Bearer $bob" -H 'Content-Type: application/json' \
	-d @"$dir/first.json" "http://127.0.0.1:$PORT/v1/sandboxes/$bsb/exec" &
lpid=$!
for _ in $(seq 100); do
	[ -n "$(al_marker_pids "$m-first")" ] && break
	sleep 0.1
done
[ -n "$(al_marker_pids "$m-first")" ] || al_fail "bob's first execution never started"
al_api_as "$bob" POST "/v1/sandboxes/$bsb/exec" -H 'Content-Type: application/json' -d "{\"command\": \"echo second-$m\"}"
al_assert_eq "$CODE" 429 "bob's second execution while his first runs (quota 1)"
al_api_as "$alice" POST "/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' -d "{\"command\": \"echo alice-$m\"}"
al_assert_eq "$CODE" 200 "alice's execution meanwhile"
al_assert_contains "$BODY" "alice-$m" "alice's execution ran"
al_api_as "$bob" PUT "/v1/sandboxes/$bsb/files/stop" --data-binary stop
al_assert_eq "$CODE" 200 "bob lets his first execution end"
wait "$lpid" || true

# Connections: a principal's fifth open connection is refused (429, closed); others' are not.
cat >"$dir/conns.py" <<'PY'
import http.client, sys
port, bob, alice = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def get(c, token):
    c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    r.read()
    return r.status
held = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(4)]
codes = [get(c, bob) for c in held]
fifth = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
codes.append(get(fifth, bob))
codes.append(get(http.client.HTTPConnection("127.0.0.1", port, timeout=10), alice))
held[0].close()
# The slot frees once the server's thread has seen the close, which takes its own time under
# load: ask again (10 s at most) while the answer is the quota's 429; the last answer is judged.
import time
for _ in range(100):
    code = get(http.client.HTTPConnection("127.0.0.1", port, timeout=10), bob)
    if code != 429:
        break
    time.sleep(0.1)
codes.append(code)
print(" ".join(map(str, codes)))
PY
al_assert_eq "$("$AL_PY" "$dir/conns.py" "$PORT" "$bob" "$alice")" "200 200 200 200 429 200 200" \
	"bob's four connections, his fifth, alice's, and bob's again once one closed"

# ---- a flood of unauthenticated TCP connections leaves room for token holders -------------------
# Anyone who can reach the port holds 300 idle connections without a token, reopening each one the
# server ends; on loopback every local process is one address, so the per-address limit alone lets
# the flood take every slot. Unauthenticated connections have their own small cap (the oldest goes
# for a newer one) and a few seconds to present a token: a token holder's new connections are
# served throughout, and a connection it authenticated before keeps its slot. The socket's slots are
# its own either way.
cat >"$dir/flood.py" <<'PY'
import http.client, select, socket, sys, threading, time
port, n, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
auth = {"Authorization": "Bearer " + token}
def get(c):
    try:
        c.request("GET", "/v1/health", headers=auth)
        r = c.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException):
        return 0
kept = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
assert get(kept) == 200
stop, reopened, held = False, [0], []
def connect():
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return None
def flood():
    for _ in range(n):
        held.append(connect())
    up.set()
    while not stop:
        live = [s for s in held if s]
        ready = select.select(live, [], [], 0.1)[0] if live else []
        for i, s in enumerate(held):
            if s is None or s in ready:
                if s:
                    try:
                        if s.recv(4096):
                            continue
                    except OSError:
                        pass
                    s.close()
                    reopened[0] += 1
                held[i] = connect()
        time.sleep(0.01)
up = threading.Event()
t = threading.Thread(target=flood)
t.start()
up.wait(60)
print("flooding", flush=True)
time.sleep(1)
fresh, still = [], []
end = time.monotonic() + 8  # past the unauthenticated connections' deadline: they are reopened
while time.monotonic() < end:
    fresh.append(get(http.client.HTTPConnection("127.0.0.1", port, timeout=5)))
    still.append(get(kept))
    time.sleep(0.4)
stop = True
t.join()
print("fresh %d/%d kept %d/%d reopened %d" % (fresh.count(200), len(fresh), still.count(200), len(still),
      reopened[0]), flush=True)
PY
coproc FLOOD { exec "$AL_PY" "$dir/flood.py" "$PORT" 300 "$alice"; }
read -r -t 90 word <&"${FLOOD[0]}" || true
al_assert_eq "$word" flooding "300 unauthenticated idle connections from one address"
al_assert_eq "$(lcurl -o /dev/null -w '%{http_code}' http://airlock/v1/health)" 200 "the socket answers during the TCP flood"
read -r -t 90 result <&"${FLOOD[0]}" || true
wait "$FLOOD_PID" || true
# A token holder's request comes at once, so its new connection is rarely the oldest idle
# unauthenticated one: at least three in four are served (the old code served none: 0/20), and
# every request on its connection from before the flood (no longer unauthenticated). A client
# whose connect and request a loaded host pulls apart can lose that race to a churning flood, and
# retries. Connections reopened say the flood was held and cut, not refused.
case $result in
"fresh "*) ;;
*) al_fail "the flood's probe said nothing ($result)" ;;
esac
read -r _ fresh _ kept _ reopened <<<"$result"
[ "$reopened" -gt 0 ] || al_fail "the server never ended an unauthenticated connection of the flood ($result)"
al_log "a token holder's new connections during the flood: $result"
[ $((${fresh%/*} * 4)) -ge $((${fresh#*/} * 3)) ] && [ "${fresh#*/}" -gt 0 ] ||
	al_fail "a token holder's new connections during the flood were mostly refused ($result)"
al_assert_eq "${kept%/*}" "${kept#*/}" "a token holder's connection from before the flood ($result)"
tcp=$(curl -q -s -m 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" "http://127.0.0.1:$PORT/v1/health" || true)
al_assert_eq "$tcp" 200 "TCP answers once the flood is gone"

# ---- the audit log names every principal -----------------------------------------------------
kill -TERM "$SPID"
wait "$SPID" || al_fail "airlock serve did not exit 0 on SIGTERM"
[ ! -e "$sock" ] || al_fail "the socket is left after the server stopped"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_execute client.principal=token:alice approval.by=http approval.decision=approved approval.approver=token:reviewer "$dir/audit.jsonl" | wc -l)" 1 \
	"alice's approved exec, by principal and approver"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=start tool=code_execute client.principal=token:alice approval.approver=token:reviewer "$dir/audit.jsonl" | wc -l)" 1 \
	"its start record names the approver too"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_execute "client.principal=uid:$AL_CALLER_UID" "$dir/audit.jsonl" | wc -l)" 1 \
	"the socket peer's exec, by uid"
al_pass "principals and roles"
