#!/usr/bin/env bash
# broker_hosts.sh — the credential broker's upstream leg is the proxy's own (issue 36): a broker
# upstream named only in the --proxy-hosts file is reached at the address the file gives, through
# the same address checks as every proxied connection (its private address needs --allow-private:
# without it, 403 and nothing reaches the host); one broker adds two secret headers, each arriving
# once, and the job's forged copies of both names are replaced, never sent. The upstream lives in
# a network namespace this test makes, with the test's CA (given to the broker with ca=). Made as
# root in both modes; airlock runs as the mode's user.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making the upstream host's network namespace needs root"
for t in ip curl openssl; do command -v "$t" >/dev/null || al_skip "$t is missing"; done

j() { al_json_get "$AL_OUT" "$1"; }
dir=$(al_tmpdir 0777)
# A name only the hosts file knows: .invalid never resolves anywhere else (RFC 6761).
name=api.broker.invalid
al_test_certs "$dir" "$name"
chmod 0644 "$dir"/*

net="10.217.$((RANDOM % 250)).0"
al_netns_host "$net"
ADDR=$AL_NS_ADDR
# The upstream host (tests/net/https_upstream.py): each request goes to up.log; /echo answers
# with the headers it got, any other path with "hello PATH".
al_https_upstream "$dir"

printf '%s %s\n' "$ADDR" "$name" >"$dir/hosts"
chmod 0644 "$dir/hosts"
secret="s3cr3t-$(al_marker)-$RANDOM$RANDOM"
key="k3y-$(al_marker)-$RANDOM$RANDOM"
printf '%s\n' "$key" >"$dir/key.txt"
chmod 0644 "$dir/key.txt"
export AL_TEST_SECRET="$secret"
broker="api=https://$name/v1,header=Authorization,scheme=Bearer,env=AL_TEST_SECRET,header=X-Api-Key,file=$dir/key.txt,ca=$dir/ca.pem"

# ---- reached through the hosts file, two headers put in, the job's forged ones replaced
al_run run --json --proxy-hosts "$dir/hosts" --allow-private "$net/30" --broker "$broker" -- sh -c '
curl -sS -H "Authorization: Bearer forged-auth" -H "x-api-key: forged-key" "$AIRLOCK_BROKER_API_URL/items?q=1"
env | sort
cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr "\0" "\n"'
al_assert_rc 0
al_assert_contains "$(j stdout.data)" "hello /v1/items?q=1" "the answer of an upstream named only in --proxy-hosts"
log=$(cat "$dir/up.log")
al_assert_contains "$log" "GET /v1/items?q=1 HTTP/1.1" "the request line the upstream got"
al_assert_contains "$log" "Host: $name" "the Host the upstream got"
al_assert_contains "$log" "Authorization: Bearer $secret" "the first secret header"
al_assert_contains "$log" "X-Api-Key: $key" "the second secret header"
al_assert_not_contains "$log" "forged" "the job's forged headers"
al_assert_not_contains "$log" "airlock-secret:" "a placeholder left in place"
[ "$(grep -ci '^Authorization:' "$dir/up.log")" = 1 ] || al_fail "not exactly one Authorization header: $log"
[ "$(grep -ci '^X-Api-Key:' "$dir/up.log")" = 1 ] || al_fail "not exactly one X-Api-Key header: $log"
al_assert_not_contains "$AL_OUT" "$secret" "the verdict and what the job could read (the first secret)"
al_assert_not_contains "$AL_OUT" "$key" "the verdict and what the job could read (the second secret)"
al_assert_not_contains "$AL_ERR" "$secret" "airlock's stderr"
al_assert_eq "$(j proxy.records.0.kind)/$(j proxy.records.0.broker)/$(j proxy.records.0.address)/$(j proxy.records.0.decision)" \
	"broker/api/$ADDR/allowed" "the broker record: the address the hosts file gave"
al_pass "broker: an upstream named only in --proxy-hosts, two headers, forged ones replaced"

# ---- the same upstream without --allow-private: its private address is refused, nothing reaches it
: >"$dir/up.log"
al_run run --json --proxy-hosts "$dir/hosts" --broker "$broker" -- \
	sh -c 'curl -sS -w "\ncode=%{http_code}\n" "$AIRLOCK_BROKER_API_URL/x"'
al_assert_contains "$(j stdout.data)" "code=403" "a broker upstream at a private address without --allow-private"
al_assert_eq "$(j proxy.records.0.kind)/$(j proxy.records.0.address)/$(j proxy.records.0.decision)/$(j proxy.records.0.reason)" \
	"broker/$ADDR/denied/private" "the record of the refusal"
al_assert_eq "$(cat "$dir/up.log")" "" "what the refused upstream received"
al_pass "broker: upstream addresses are checked as every proxied connection's"
al_netns_host_del
