#!/usr/bin/env bash
# console_api.sh — the console's routes from outside, with curl: the live approvals stream
# (GET /v1/approvals/events) brings a new pending call at once; an approver destroys a client's
# sandbox (DELETE /v1/admin/sandboxes/{id}: the running exec's process is gone from the host, the
# owner gets 404, the audit records name both, a client's token gets 403); and `airlock console`,
# the local approver's forwarder to the Unix socket: with its token a uid in server.approver_uids
# approves a pending call, without it (or with another Host or Origin) nothing is forwarded, and a
# uid that is no approver cannot approve through it.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
m=$(al_marker)
confdir=$(al_tmpdir 0755)
dir=$(al_tmpdir 0777)
uid=$AL_CALLER_UID
conf() { # FILE APPROVER_UID
	cat >"$1" <<EOF
version: 1
approval: {deny_above: CRITICAL, channels: [http]}
server: {approver_uids: [$2]}
rules:
- {name: asked, tools: [code_execute], risk: HIGH, approval_timeout: 30s, when: [{param: code, matches: "ask-me"}]}
- {name: the-rest, tools: ["*"], risk: LOW, require_approval: false}
EOF
	chmod 0644 "$1"
}
conf "$confdir/c.yaml" "$uid"
al_token_file "$dir/serve.token" alice >/dev/null
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
al_serve_start "$dir" --config "$confdir/c.yaml" --approver-token-file "$dir/reviewer.token" \
	--audit "$dir/audit.jsonl" --socket "$dir/s.sock"
R=(-H "Authorization: Bearer $reviewer")
j() { "$AL_PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

sb=$(curl -sf -XPOST "$AL_SERVE_URL/v1/sandboxes" -d '{}' | j 'd["sandbox_id"]')

# ---- the live stream: the list at once, then a new pending call without polling
curl -q -sN "${R[@]}" "$AL_SERVE_URL/v1/approvals/events" >"$dir/events" 2>/dev/null &
AL_BG_PIDS+=($!)
for _ in $(seq 50); do grep -q '^event: approvals' "$dir/events" 2>/dev/null && break; sleep 0.1; done
al_assert_contains "$(head -n2 "$dir/events")" '"approvals":[]' "the stream opens with the (empty) pending list"
curl -sf -XPOST "$AL_SERVE_URL/v1/sandboxes/$sb/exec" -d "{\"language\":\"shell\",\"code\":\"echo ask-me $m\"}" \
	>"$dir/exec.out" 2>&1 &
AL_BG_PIDS+=($!)
# The stream sends the list only when the queue changes (else a keepalive comment): the call in the
# stream's file came over the stream, however long a loaded host took to queue it (10 s at most).
for _ in $(seq 100); do grep -q "ask-me $m" "$dir/events" && break; sleep 0.1; done
al_assert_contains "$(cat "$dir/events")" "ask-me $m" "the pending call arrives on the stream"
al_assert_contains "$(cat "$dir/events")" '"code_marked":"echo >>>ask-me<<<' "with the rule's match marked"
code=$(curl -q -s -o /dev/null -w '%{http_code}' --max-time 10 "$AL_SERVE_URL/v1/approvals/events")
al_assert_eq "$code" 401 "the stream without a token"

# ---- airlock console: the local approver's forwarder to the Unix socket
al_run console --socket "$dir/s.sock" --listen 0.0.0.0:0
al_assert_rc 125
al_assert_contains "$AL_ERR" "loopback only" "a listener beyond loopback is refused"
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" console --socket "$dir/s.sock" --port-file "$dir/fwd.port" >"$dir/fwd.out" 2>&1 &
AL_BG_PIDS+=($!)
for _ in $(seq 50); do [ -s "$dir/fwd.port" ] && break; sleep 0.1; done
[ -s "$dir/fwd.port" ] || { cat "$dir/fwd.out" >&2; al_fail "airlock console did not start"; }
F="http://127.0.0.1:$(cat "$dir/fwd.port")"
tok=$(sed -n 's/.*#token=\([0-9a-f]*\).*/\1/p' "$dir/fwd.out")
al_assert_contains "$(cat "$dir/fwd.out")" "$F/console#token=" "it prints the URL with its token"
T=(-H "Authorization: Bearer $tok")
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' "$F/console")" 200 "the console's page needs no token"
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' "$F/v1/approvals")" 401 "nothing else is forwarded without the token"
other=${tok%?}0
[ "$other" != "$tok" ] || other=${tok%?}1
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $other" "$F/v1/approvals")" 401 \
	"nor with another token"
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' "${T[@]}" -H 'Host: evil.example:80' "$F/v1/approvals")" 403 \
	"another Host (DNS rebinding) is refused"
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' "${T[@]}" -H 'Origin: http://evil.example' "$F/v1/approvals")" 403 \
	"another Origin is refused"
twice=$("$AL_PY" -c '
import socket, sys
port, tok = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("GET /v1/approvals HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nHost: evil.example\r\nAuthorization: Bearer %s\r\n\r\n" % (port, tok)).encode())
print(s.recv(100).split(b" ")[1].decode())' "${F##*:}" "$tok")
al_assert_eq "$twice" 403 "two Host headers are refused"
read -r id digest < <(curl -q -sf "${T[@]}" "$F/v1/approvals" |
	j '" ".join(str(a["id"]) + " " + a["digest"] for a in d["approvals"] if "ask-me" in a["request"]["code"])')
out=$(curl -q -s "${T[@]}" -XPOST "$F/v1/approvals/$id" -H "Origin: $F" -d "{\"approve\":true,\"digest\":\"$digest\"}")
al_assert_contains "$out" '"approved":true' "uid $uid (an approver) approves through the forwarder"
for _ in $(seq 100); do grep -q '"result"' "$dir/exec.out" && break; sleep 0.1; done
al_assert_contains "$(cat "$dir/exec.out")" "ask-me $m" "the approved call ran"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_execute approval.approver="uid:$uid" "$dir/audit.jsonl" |
	grep -c "ask-me")" 1 "the audit log names the forwarder's uid as the approver"

# ---- an approver destroys a client's sandbox; a client cannot
curl -sf -XPOST "$AL_SERVE_URL/v1/sandboxes/$sb/exec" -d "{\"language\":\"shell\",\"code\":\"sleep 2$((RANDOM % 100)).$$\"}" \
	>/dev/null 2>&1 &
AL_BG_PIDS+=($!)
for _ in $(seq 50); do tag=$(pgrep -f "^sleep 2[0-9]*\.$$\$" || true); [ -n "$tag" ] && break; sleep 0.1; done
[ -n "$tag" ] || al_fail "the exec to destroy did not start"
al_assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -XDELETE "$AL_SERVE_URL/v1/admin/sandboxes/$sb")" 403 \
	"a client's token cannot use the admin route"
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' "${R[@]}" -XDELETE "$AL_SERVE_URL/v1/admin/sandboxes/sb-0000")" 404 \
	"an unknown sandbox: 404"
out=$(curl -q -s "${R[@]}" -XDELETE "$AL_SERVE_URL/v1/admin/sandboxes/$sb")
al_assert_contains "$out" '"destroyed":true' "the approver destroys it"
for _ in $(seq 50); do kill -0 "$tag" 2>/dev/null || break; sleep 0.1; done
kill -0 "$tag" 2>/dev/null && al_fail "the destroyed sandbox's process $tag still runs"
al_assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$AL_SERVE_URL/v1/sandboxes/$sb/files")" 404 "its owner gets 404"
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep tool=code_destroy_sandbox client.principal=token:reviewer \
	client.on_behalf_of=token:alice "sandbox=$sb" "$dir/audit.jsonl" | wc -l)" 2 \
	"its start and end records name the approver and the owner"

# ---- a uid that is no approver cannot approve through its forwarder
kill "$AL_SERVE_PID"
wait "$AL_SERVE_PID" 2>/dev/null || true
conf "$confdir/c2.yaml" 4242
d2=$(al_tmpdir 0777)
al_token_file "$d2/serve.token" alice >/dev/null
al_serve_start "$d2" --config "$confdir/c2.yaml" --audit "$d2/audit.jsonl" --socket "$d2/s.sock"
sb=$(curl -sf -XPOST "$AL_SERVE_URL/v1/sandboxes" -d '{}' | j 'd["sandbox_id"]')
curl -sf -XPOST "$AL_SERVE_URL/v1/sandboxes/$sb/exec" -d "{\"language\":\"shell\",\"code\":\"echo ask-me 2$m\"}" \
	>/dev/null 2>&1 &
AL_BG_PIDS+=($!)
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" console --socket "$d2/s.sock" --port-file "$d2/fwd.port" >"$d2/fwd.out" 2>&1 &
AL_BG_PIDS+=($!)
for _ in $(seq 50); do [ -s "$d2/fwd.port" ] && break; sleep 0.1; done
F="http://127.0.0.1:$(cat "$d2/fwd.port")"
T=(-H "Authorization: Bearer $(sed -n 's/.*#token=\([0-9a-f]*\).*/\1/p' "$d2/fwd.out")")
for _ in $(seq 50); do
	n=$(curl -q -s -H "Authorization: Bearer $AL_TOKEN" "$AL_SERVE_URL/v1/approvals" | j 'len(d["approvals"])')
	[ "$n" = 1 ] && break
	sleep 0.1
done
al_assert_eq "$(curl -q -s "${T[@]}" "$F/v1/approvals" | j 'len(d["approvals"])')" 0 \
	"uid $uid, no approver here, sees no other principal's pending call"
al_assert_eq "$(curl -q -s -o /dev/null -w '%{http_code}' "${T[@]}" -XPOST "$F/v1/approvals/1" -d '{"approve":false}')" 403 \
	"and cannot decide it"
al_pass "the console's API: live approvals, an approver's destroy, the local forwarder"
