#!/usr/bin/env bash
# e2b.sh — E2B's official JavaScript SDK (npm "e2b", pinned by tests/e2b/package-lock.json), unchanged,
# against airlock serve's E2B front end (issue 33), switched over only by E2B_API_URL,
# E2B_SANDBOX_URL and E2B_API_KEY: create, info, list with a metadata filter, commands (foreground,
# streamed, background with list and kill, stdin, a non-zero exit as CommandExitError), a pty, files
# (text, bytes, list with depth, exists, rename, remove, makeDir, watch), setTimeout, pause, connect
# (which resumes), fork, a port of the sandbox through E2b-Sandbox-Port and getHost's Host (the owner's key,
# the traffic token; refused without either or with another's key, the server never reached),
# the polling watchers (CreateWatcher, GetWatcherEvents, RemoveWatcher) through the SDK's own Connect
# client, StreamInput as several envelopes of one request, signed download and upload URLs (a
# tampered, expired or read-for-write one refused), kill (tests/e2b/sdk.mjs); the code interpreter SDK's runCode with state, logs, errors, a
# matplotlib PNG, a DataFrame, javascript and bash contexts (tests/e2b/interp.mjs); two principals that cannot see each other's sandboxes; from outside:
# anonymous and wrong credentials refused on both planes, another principal's key or a forged
# access token never reaching a sandbox, a host listener a sandbox cannot reach, the audit log
# naming each call's principal.
. "$(dirname "$0")/../lib.sh"

command -v node >/dev/null || al_fail "node is missing (scripts/deps.sh installs it)"
command -v curl >/dev/null || al_fail "curl is missing"
sdk="$AL_SRC/tests/e2b"
[ -d "$sdk/node_modules/e2b" ] || al_fail "the E2B SDK is not installed in $sdk (scripts/deps.sh runs npm ci)"
al_serve_bin
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
# A sandbox domain: a Host "PORT-ID.e2b.test" names a sandbox (E2B_DOMAIN's addressing).
al_serve_config "$confdir/e2b.yaml" 'server:\n  http:\n    e2b_domain: e2b.test\n'

# E2B's keys are "e2b_" and hex: client tokens of the token file like any other (docs/e2b.md).
key() { printf 'e2b_%s' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
alice=$(key)
bob=$(key)
printf 'alice %s\nbob %s\n' "$alice" "$bob" >"$dir/serve.token"
chmod 0600 "$dir/serve.token"
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$dir/serve.token"
al_serve_start "$dir" --config "$confdir/e2b.yaml" --audit "$dir/audit.jsonl" --state-dir none
url=$AL_SERVE_URL

# A host listener on loopback that records every connection: a sandbox must never reach it.
"$AL_PY" - "$dir/host.port" "$dir/host.seen" <<'EOF' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("connection\n"); c.close()
EOF
AL_BG_PIDS+=("$!")
for _ in $(seq 50); do [ -s "$dir/host.port" ] && break; sleep 0.1; done
host_port=$(cat "$dir/host.port")

# ---- the SDK's own run ----------------------------------------------------------------------------
out=$(cd "$sdk" && AL_MARKER=$m E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_API_KEY=$alice E2B_OTHER_KEY=$bob \
	timeout 300 node sdk.mjs 2>"$dir/sdk.err") ||
	{ printf '%s\n' "$out"; cat "$dir/sdk.err" "$dir/serve.err" >&2; al_fail "the E2B SDK's run (see above)"; }
al_log "$out"
al_assert_contains "$out" "ok: all" "the SDK's run"
out=$(cd "$sdk" && E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_API_KEY=$alice timeout 300 node interp.mjs 2>"$dir/interp.err") ||
	{ printf '%s\n' "$out"; cat "$dir/interp.err" "$dir/serve.err" >&2; al_fail "the code interpreter SDK's run (see above)"; }
al_log "$out"
al_assert_contains "$out" "ok: all" "the code interpreter SDK's run"

# ---- from outside: who reaches what ------------------------------------------------------------------
# req METHOD PATH [CURL ARGS...]: sets CODE and BODY (no credential unless given).
req() {
	local method=$1 path=$2
	shift 2
	# Connect's envelopes hold NUL bytes: dropped (what the checks read is their JSON).
	BODY=$(curl -q -s -m 30 -o - -w '\n%{http_code}' -X "$method" "$url$path" "$@" | tr -d '\0') || true
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}

req GET /v2/sandboxes
al_assert_eq "$CODE" 401 "the control plane without an API key"
req POST /v2/sandboxes -H "X-API-Key: e2b_$m" -d '{}'
al_assert_eq "$CODE" 401 "the control plane with a wrong API key"
req POST /v2/sandboxes -H "X-API-Key: $alice" -H 'Content-Type: application/json' \
	-d '{"templateID": "base", "timeout": 120, "metadata": {"t": "'"$m"'"}}'
al_assert_eq "$CODE" 201 "alice creates a sandbox: $BODY"
sb=$(al_jget 'd["sandboxID"]')
token=$(al_jget 'd["envdAccessToken"]')
[ "${#token}" = 64 ] || al_fail "no access token in the create's answer: $BODY"
req POST /v2/sandboxes -H "X-API-Key: $alice" -d '{"templateID": "no-such-template-'"$m"'"}'
al_assert_eq "$CODE" 400 "an unknown template"
al_assert_contains "$BODY" "unknown template" "an unknown template is named so"

# envd: one Connect call, streamed (an envelope) or unary.
envelope() { "$AL_PY" -c 'import sys,struct; m=sys.argv[1].encode(); sys.stdout.buffer.write(b"\0"+struct.pack(">I",len(m))+m)' "$1"; }
envelope "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"printf ran-$m > /home/user/ran.txt; echo out-$m\"]}}" >"$dir/start.bin"
start() { req POST /process.Process/Start -H "E2b-Sandbox-Id: $sb" -H 'Content-Type: application/connect+json' \
	--data-binary @"$dir/start.bin" "$@"; }
start
al_assert_eq "$CODE" 401 "envd without an access token"
start -H "X-Access-Token: $(printf '%064d' 0)"
al_assert_eq "$CODE" 401 "envd with a forged access token"
envelope "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"echo bob > /home/user/bob.txt\"]}}" >"$dir/bob.bin"
req POST /process.Process/Start -H "E2b-Sandbox-Id: $sb" -H "X-API-Key: $bob" -H 'Content-Type: application/connect+json' \
	--data-binary @"$dir/bob.bin"
al_assert_contains "$BODY" "not_found" "bob's API key on alice's sandbox: not found"
start -H "X-Access-Token: $token"
al_assert_eq "$CODE" 200 "envd with the sandbox's access token"
al_assert_contains "$BODY" "end" "the stream ends with the process's end event"
req GET "/files?path=/home/user/ran.txt" -H "E2b-Sandbox-Id: $sb" -H "X-Access-Token: $token"
al_assert_eq "$CODE:$BODY" "200:ran-$m" "the command ran, as alice"
req GET "/files?path=bob.txt" -H "E2b-Sandbox-Id: $sb" -H "X-Access-Token: $token"
al_assert_eq "$CODE" 404 "bob's command never ran in alice's sandbox"
req GET "/files?path=ran.txt" -H "Host: 49983-$sb.e2b.test" -H "X-Access-Token: $token"
al_assert_eq "$CODE:$BODY" "200:ran-$m" "the sandbox by its Host under the configured domain"
req GET "/files?path=ran.txt" -H "Host: 49983-$sb.e2b.test"
al_assert_eq "$CODE" 401 "the Host alone is no credential"
req GET "/files?path=ran.txt" -H "Host: 49983-$sb.elsewhere.example" -H "X-Access-Token: $token"
al_assert_eq "$CODE" 403 "a Host under another domain (no DNS rebinding onto a loopback listener)"
req POST /filesystem.Filesystem/Stat -H "E2b-Sandbox-Id: $sb" -H "X-Access-Token: $token" \
	-H 'Content-Type: application/json' -d '{"path": "/etc/passwd"}'
al_assert_eq "$CODE" 403 "a path outside the workspace (Connect's permission_denied)"
al_assert_contains "$BODY" '"code":"permission_denied"' "a Connect error body"

# The sandbox cannot reach the host's loopback.
envelope "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"(exec 3<>/dev/tcp/127.0.0.1/$host_port) 2>/dev/null && echo reached || echo unreachable\"]}}" >"$dir/start.bin"
start -H "X-Access-Token: $token"
al_assert_contains "$BODY" '"stdout":"dW5yZWFjaGFibGUK"' "the sandbox reports the host listener unreachable"
[ ! -s "$dir/host.seen" ] || al_fail "a connection reached the host listener from the sandbox"

# The code interpreter's port: its traffic token or the access token, nothing less.
traffic=$(curl -q -s -m 30 -X POST "$url/v2/sandboxes/$sb/connect" -H "X-API-Key: $alice" -d '{}' |
	"$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["trafficAccessToken"])')
req GET /contexts -H "E2b-Sandbox-Id: $sb" -H 'E2b-Sandbox-Port: 49999'
al_assert_eq "$CODE" 401 "the interpreter's contexts without a token"
req GET /contexts -H "E2b-Sandbox-Id: $sb" -H 'E2b-Sandbox-Port: 49999' -H "E2B-Traffic-Access-Token: $traffic"
al_assert_eq "$CODE" 200 "the interpreter's contexts with the sandbox's traffic token"
req POST /execute -H "E2b-Sandbox-Id: $sb" -H 'E2b-Sandbox-Port: 49999' -H "E2B-Traffic-Access-Token: $traffic" \
	-H 'Content-Type: application/json' -d '{"code": "6 * 7"}'
al_assert_contains "$BODY" '"text":"42"' "a cell through the interpreter's port"
req GET "/files?path=ran.txt" -H "E2b-Sandbox-Id: $sb" -H "E2B-Traffic-Access-Token: $traffic"
al_assert_eq "$CODE" 401 "the traffic token does not open envd"

req DELETE "/sandboxes/$sb" -H "X-API-Key: $bob"
al_assert_eq "$CODE" 404 "bob kills alice's sandbox"
req DELETE "/sandboxes/$sb" -H "X-API-Key: $alice"
al_assert_eq "$CODE" 204 "alice kills her sandbox"

# Every E2B call went through the call runner: the audit log names its principal.
grep -q '"transport":"e2b","peer":"[^"]*","principal":"token:alice"' "$dir/audit.jsonl" ||
	al_fail "the audit log names no E2B call of alice's"
grep -q '"transport":"e2b","peer":"[^"]*","principal":"token:bob"' "$dir/audit.jsonl" ||
	al_fail "the audit log names no E2B call of bob's"
kill -TERM "$AL_SERVE_PID"
wait "$AL_SERVE_PID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_pass "the official E2B SDK, unchanged, against airlock serve"
