#!/usr/bin/env bash
# serve_secrets.sh — secrets by reference in airlock serve (issue 36): a profile of the service's
# configuration names secrets (for every principal one from airlock's environment and one written
# in the configuration; one from a file for the principal token:alice only). A sandbox made through
# the JSON API holds placeholders; the proxy puts the secret in their place toward echo.test (the
# echo upstream logs what it got) and never toward other.test (a second, unlisted upstream, which
# gets the placeholder). The secret is in nothing the sandbox can read (env, /proc/*/environ, its
# files), nor in the exec's verdict, the audit log, the admin view, `airlock config dump` or the
# server's stderr. Bob's sandbox of the same profile has no placeholder for alice's secret at all,
# and alice's placeholder sent from his sandbox stays a placeholder; a sandbox alice makes through
# MCP (streamable HTTP) gets hers the same. A profile whose network does not allow a secret's hosts
# is refused at load; a server whose secret variable is unset does not start. The upstreams live
# in a network namespace this test makes, with the test's CA, which airlock alone is given
# (network.upstream-ca); names resolve through a private /etc/hosts in the server's mount
# namespace. Made as root in both modes; airlock runs as the mode's user.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making the upstream host's network namespace needs root"
for t in ip curl openssl unshare; do command -v "$t" >/dev/null || al_skip "$t is missing"; done

dir=$(al_tmpdir 0777)
al_test_certs "$dir" echo.test other.test
chmod 0644 "$dir"/*

net="10.217.$((RANDOM % 250)).0"
al_netns_host "$net"
ADDR=$AL_NS_ADDR
# The upstream host (tests/net/https_upstream.py): each request goes to up.log; /echo answers
# with the headers it got, any other path with "hello PATH".
al_https_upstream "$dir"

# The secrets: one in the server's environment, alice's in a file only the server's user reads.
shared="shared-$(al_marker)-$RANDOM$RANDOM"
model="model-$(al_marker)-$RANDOM$RANDOM"
inline="inline-$(al_marker)-$RANDOM$RANDOM"
export AL_TEST_SHARED="$shared"
printf '%s\n' "$model" >"$dir/model.key"
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$dir/model.key"
chmod 0600 "$dir/model.key"

confdir=$(al_tmpdir 0755)
{
	serve_config_head
	cat <<EOF
approval:
  auto_approve_up_to: CRITICAL
network:
  registries:
    upstream: [echo.test, other.test]
  allow-private: [$net/30]
  upstream-ca: $dir/ca.pem
secrets:
  SHARED_KEY:
    env: AL_TEST_SHARED
    hosts: [echo.test]
  alice-model:
    variable: MODEL_KEY
    file: $dir/model.key
    hosts: [echo.test]
    principals: ["token:alice"]
  INLINE_KEY:
    value: $inline
    hosts: [echo.test]
profiles:
  agent:
    network: [upstream]
    filesystem: workspace
    require: [userns, pidns, mntns, netns, seccomp]
    secrets: [SHARED_KEY, alice-model, INLINE_KEY]
EOF
} >"$confdir/config.yaml"
# It writes a secret's value: readable by the server's user alone (a readable one is refused below).
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$confdir/config.yaml"
chmod 0600 "$confdir/config.yaml"
printf '127.0.0.1 localhost\n%s echo.test other.test\n' "$ADDR" >"$dir/serve-hosts"
chmod 0644 "$dir/serve-hosts"

al_serve_tokens "$dir/clients.token"
alice=$AL_ALICE
bob=$AL_BOB
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
al_serve_bin
# The server (and so its proxy's resolver) sees the test's hosts file in a mount namespace of its own.
al_serve_launch "$dir/serve" "airlock serve" unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/serve-hosts" \
	"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --socket none --token-file "$dir/clients.token" \
	--approver-token-file "$dir/reviewer.token" --config "$confdir/config.yaml" --audit "$dir/audit.jsonl"
url=$AL_SERVE_URL
# as TOKEN METHOD PATH [CURL ARGS...]: sets CODE and BODY.
as() {
	local t=$1 method=$2 path=$3
	shift 3
	BODY=$(curl -q -s -m 60 -o - -w '\n%{http_code}' -X "$method" -H "Authorization: Bearer $t" \
		-H 'Content-Type: application/json' "$url$path" "$@") || true
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}
# run TOKEN SANDBOX CODE: a shell exec with network; RES is its result (stdout, verdict...).
run() {
	local req
	req=$("$AL_PY" -c 'import json,sys; print(json.dumps({"language":"shell","code":sys.argv[1],"network_enabled":True}))' "$3")
	as "$1" POST "/v1/sandboxes/$2/exec" -d "$req"
	printf '%s\n' "$BODY" | grep '^{"result"' | tail -n 1 | "$AL_PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["result"]))' >"$dir/res.json" ||
		al_fail "no result line for exec in $2 ($CODE): $(printf '%s' "$BODY" | head -c 600)"
	ALL_RESULTS+="$BODY"
}
# r KEY.PATH: of the last exec's result (a file: the result is larger than an argument may be).
r() { al_json_get "$dir/res.json" "$1"; }
ALL_RESULTS=""
ca=$(cat "$dir/ca.pem")

# ---- alice: both placeholders; the secrets toward echo.test only
as "$alice" POST /v1/sandboxes -d '{"profile":"agent","network_enabled":true}'
al_assert_eq "$CODE" 201 "alice creates a sandbox of the agent profile: $BODY"
sa=$(al_json_get "$BODY" sandbox_id)
run "$alice" "$sa" "
echo \"model=\$MODEL_KEY\"
echo \"shared=\$SHARED_KEY\"
curl -sS -H \"X-Model: \$MODEL_KEY\" -H \"X-Shared: \$SHARED_KEY\" -H \"X-Inline: \$INLINE_KEY\" https://echo.test/alice-echo; echo \"rc=\$?\"
printf '%s\n' '$ca' >/tmp/test-ca.pem
curl -sS --cacert /tmp/test-ca.pem -H \"X-Model: \$MODEL_KEY\" -H \"X-Shared: \$SHARED_KEY\" https://other.test/alice-other; echo \"rc=\$?\"
"
out=$(r stdout)
al_assert_eq "$(r exit_code)" 0 "alice's exec: $(r stderr)"
al_assert_eq "$(r verdict.proxy.records.0.host)/$(r verdict.proxy.records.0.tls)" echo.test/airlock \
	"the request to echo.test: TLS terminated at airlock"
# Everything the job can read where a secret could have been put, printed for the test to search
# (the values never enter the sandbox, not even as a pattern to grep for).
run "$alice" "$sa" "
echo \"model=\$MODEL_KEY\"
echo '-- env'; env
echo '-- proc'; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n'
echo '-- files'; find /workspace /tmp /etc/ssl/airlock -type f -exec cat {} + 2>/dev/null | tr '\\0' '\\n'
find /etc -maxdepth 1 -type f -exec cat {} + 2>/dev/null | tr '\\0' '\\n'
echo '-- end'
"
view=$(r stdout)
al_assert_eq "$(r exit_code)" 0 "alice's second exec: $(r stderr)"
ph_model=$(printf '%s\n' "$out" | sed -n 's/^model=//p')
ph_shared=$(printf '%s\n' "$out" | sed -n 's/^shared=//p')
case "$ph_model" in airlock-secret:MODEL_KEY:????????????????????????????????) ;; *) al_fail "alice's MODEL_KEY is not a placeholder: '$ph_model'" ;; esac
case "$ph_shared" in airlock-secret:SHARED_KEY:????????????????????????????????) ;; *) al_fail "alice's SHARED_KEY is not a placeholder: '$ph_shared'" ;; esac
al_assert_contains "$out" "hello /alice-echo" "the request to echo.test, over TLS airlock terminated"
al_assert_contains "$out" "hello /alice-other" "the request to the unlisted upstream"
al_assert_contains "$view" "-- end" "the sandbox's view printed whole"
al_assert_contains "$view" "MODEL_KEY=$ph_model" "the same placeholder in the next exec's env"
al_assert_contains "$view" "BEGIN CERTIFICATE" "the files printed"
al_assert_not_contains "$view" "$model" "the sandbox's env, /proc/*/environ, /proc/*/cmdline and files"
al_assert_not_contains "$view" "$shared" "the sandbox's env, /proc/*/environ, /proc/*/cmdline and files"
al_assert_not_contains "$view" "$inline" "the sandbox's env, /proc/*/environ, /proc/*/cmdline and files"
echo_log=$(awk '/^echo.test GET \/alice-echo/,/^--$/' "$dir/up.log")
other_log=$(awk '/^other.test GET \/alice-other/,/^--$/' "$dir/up.log")
al_assert_contains "$echo_log" "X-Model: $model" "alice's file secret toward echo.test"
al_assert_contains "$echo_log" "X-Shared: $shared" "the environment secret toward echo.test"
al_assert_contains "$echo_log" "X-Inline: $inline" "the secret written in the configuration toward echo.test"
al_assert_contains "$other_log" "X-Model: $ph_model" "the unlisted upstream gets the placeholder"
al_assert_contains "$other_log" "X-Shared: $ph_shared" "the unlisted upstream gets the other placeholder"
al_assert_not_contains "$other_log" "$model" "what the unlisted upstream got"
al_assert_not_contains "$other_log" "$shared" "what the unlisted upstream got"
al_pass "serve: alice's sandbox holds placeholders, the secrets go to echo.test only"

# ---- bob: the profile's shared secret, never alice's; her placeholder stays one from his sandbox
as "$bob" POST /v1/sandboxes -d '{"profile":"agent","network_enabled":true}'
al_assert_eq "$CODE" 201 "bob creates a sandbox of the same profile: $BODY"
sb=$(al_json_get "$BODY" sandbox_id)
run "$bob" "$sb" "
echo \"model=\${MODEL_KEY-unset}\"
echo \"shared=\$SHARED_KEY\"
echo \"placeholders=\$(env | grep -c airlock-secret:MODEL_KEY)\"
curl -sS -H \"X-Steal: $ph_model\" -H \"X-Shared: \$SHARED_KEY\" https://echo.test/bob-echo; echo \"rc=\$?\"
"
out=$(r stdout)
al_assert_eq "$(r exit_code)" 0 "bob's exec: $(r stderr)"
al_assert_contains "$out" "model=unset" "bob's sandbox has no MODEL_KEY at all"
al_assert_contains "$out" "placeholders=0" "no placeholder of alice's secret in bob's environment"
ph_bob=$(printf '%s\n' "$out" | sed -n 's/^shared=//p')
case "$ph_bob" in airlock-secret:SHARED_KEY:????????????????????????????????) ;; *) al_fail "bob's SHARED_KEY is not a placeholder: '$ph_bob'" ;; esac
[ "$ph_bob" != "$ph_shared" ] || al_fail "bob's placeholder is alice's: placeholders must be per sandbox"
bob_log=$(awk '/^echo.test GET \/bob-echo/,/^--$/' "$dir/up.log")
al_assert_contains "$bob_log" "X-Shared: $shared" "the shared secret toward echo.test from bob's sandbox"
al_assert_contains "$bob_log" "X-Steal: $ph_model" "alice's placeholder sent from bob's sandbox stays a placeholder"
al_assert_not_contains "$bob_log" "$model" "what echo.test got from bob's sandbox"
al_pass "serve: bob's sandbox gets the profile's secret and nothing of alice's"

# ---- the same through MCP (streamable HTTP): alice's sandbox made by code_create_sandbox
install -m 0644 "$AL_SRC/tests/mcp/client.py" "$dir/client.py"
mcp_out=$(PYTHONPATH=$dir "$AL_PY" - "$url" "$alice" <<'PY'
import json, sys
from client import Http
c = Http(sys.argv[1], sys.argv[2])
c.initialize("serve_secrets")
def call(i, name, args):
    r = c.mcp({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}})
    return (r or {}).get("result", {}).get("structuredContent") or {"error": json.dumps(r)}
sb = call(2, "code_create_sandbox", {"profile": "agent", "network_enabled": True})["sandbox_id"]
r = call(3, "code_execute", {"sandbox_id": sb, "language": "shell", "network_enabled": True, "code":
    'echo "model=$MODEL_KEY"; curl -sS -H "X-Model: $MODEL_KEY" https://echo.test/mcp-echo'})
print(json.dumps(r))
PY
) || al_fail "the MCP client failed: $mcp_out"
ALL_RESULTS+="$mcp_out"
al_assert_contains "$mcp_out" 'model=airlock-secret:MODEL_KEY:' "alice's MCP sandbox holds the placeholder"
al_assert_contains "$mcp_out" "hello /mcp-echo" "the MCP exec's request to echo.test"
al_assert_contains "$(awk '/^echo.test GET \/mcp-echo/,/^--$/' "$dir/up.log")" "X-Model: $model" \
	"alice's secret toward echo.test from her MCP sandbox"
al_pass "serve: an MCP sandbox of the profile gets the same"

# ---- nowhere on the record: verdicts, the admin view, the audit log, the server's stderr
as "$reviewer" GET /v1/admin/sandboxes
al_assert_eq "$CODE" 200 "the admin view: $BODY"
admin=$BODY
names() { "$AL_PY" -c 'import json,sys
for s in json.loads(sys.argv[1])["sandboxes"]:
    if s["id"] == sys.argv[2]: print(",".join(s.get("secrets", [])))' "$admin" "$1"; }
al_assert_eq "$(names "$sa")" "SHARED_KEY,MODEL_KEY,INLINE_KEY" "the admin view names the variables of alice's sandbox"
al_assert_eq "$(names "$sb")" "SHARED_KEY,INLINE_KEY" "the admin view names the variables of bob's sandbox"
as "$alice" GET "/v1/sandboxes/$sa"
info=$BODY
for what in "$ALL_RESULTS" "$admin" "$info" "$(cat "$dir/audit.jsonl")" "$(cat "$dir/serve.err")"; do
	al_assert_not_contains "$what" "$model" "a record of the service"
	al_assert_not_contains "$what" "$shared" "a record of the service"
	al_assert_not_contains "$what" "$inline" "a record of the service"
done
# The configuration as `airlock config dump` prints it: sources by name, the written value redacted.
al_run --config "$confdir/config.yaml" config dump
al_assert_rc 0
al_assert_contains "$AL_OUT" "value: (redacted)" "the dump's value"
al_assert_contains "$AL_OUT" "env: AL_TEST_SHARED" "the dump names a variable"
al_assert_not_contains "$AL_OUT$AL_ERR" "$inline" "airlock config dump"
[ -s "$dir/audit.jsonl" ] || al_fail "no audit log was written"
al_pass "serve: the secrets are in no verdict, admin view, audit record or server message"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
# What it said while stopping too (with the sanitizers: its leak report, if any).
al_assert_not_contains "$(cat "$dir/serve.err")" "$model" "the server's stderr, to its end"
al_assert_not_contains "$(cat "$dir/serve.err")" "$inline" "the server's stderr, to its end"
al_assert_not_contains "$(cat "$dir/serve.err")" "Sanitizer" "the server's stderr, to its end"

# ---- refused at load: a secret the profile's network does not allow; a variable that is not set
sed 's/    hosts: \[echo.test\]$/    hosts: [api.elsewhere.test]/' "$confdir/config.yaml" >"$confdir/bad.yaml"
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$confdir/bad.yaml"
chmod 0600 "$confdir/bad.yaml"
al_run --config "$confdir/bad.yaml" config dump
al_assert_rc 125
al_assert_contains "$AL_ERR" "secret SHARED_KEY may go to api.elsewhere.test, which the profile's network (its registries) does not allow" "the refusal names the secret and the host"
cp "$confdir/config.yaml" "$confdir/readable.yaml"
chmod 0644 "$confdir/readable.yaml"
al_run --config "$confdir/readable.yaml" config dump
al_assert_rc 125
al_assert_contains "$AL_ERR" "secrets.INLINE_KEY writes its value in this file, which group or others may read (mode 0644)" "a readable file with a value"
al_assert_not_contains "$AL_OUT$AL_ERR" "$inline" "the refusal"
unset AL_TEST_SHARED
if serve_launch "$dir/serve2" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --socket none --token-file "$dir/clients.token" \
	--config "$confdir/config.yaml" --audit "$dir/audit2.jsonl"; then
	al_fail "airlock serve started with a secret whose variable is unset"
fi
wait "$SERVE_PID" 2>/dev/null || true
al_assert_contains "$(cat "$dir/serve2.err")" "secrets.SHARED_KEY: env=AL_TEST_SHARED is not set" "why the server did not start"
al_netns_host_del
al_pass "serve: secrets the network does not allow, or cannot read, are refused before anything runs"
