#!/usr/bin/env bash
# tls.sh — TLS terminated at airlock (issue 36): for hosts whose allowlist entries carry request
# rules or to which a secret may go, the job's TLS ends at airlock with the sandbox's own CA, each
# request of a kept-alive connection is held to the rules (GET allowed, POST refused with a 403
# naming the rule), a placeholder becomes the secret only toward its host (the echo upstream sees
# it, the second upstream sees the placeholder), an echo of the secret is cut, and the secret is in
# nothing the job can read, nor in the verdict. The job trusts the system's store plus exactly one
# new certificate. The upstreams live in a network namespace this test makes, with the test's CA,
# which airlock alone is given (--upstream-ca). Made as root in both modes; airlock runs as the
# mode's user.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making the upstream host's network namespace needs root"
for t in ip curl openssl; do command -v "$t" >/dev/null || al_skip "$t is missing"; done

j() { al_json_get "$AL_OUT" "$1"; }
# recs: every record as via/tls/host/method/path/status/decision, one a line.
recs() {
	"$AL_PY" -c 'import json,sys
for r in json.loads(sys.argv[1])["proxy"]["records"]:
    print("%s/%s/%s/%s/%s/%s/%s" % (r["via"], r["tls"], r["host"], r.get("method"), r.get("path"), r["status"], r["decision"]))' "$AL_OUT"
}

dir=$(al_tmpdir 0777)
al_test_certs "$dir" echo.test other.test
chmod 0644 "$dir"/*

net="10.216.$((RANDOM % 250)).0"
al_netns_host "$net"
ADDR=$AL_NS_ADDR
# The upstream host (tests/net/https_upstream.py): each request goes to up.log; /echo answers
# with the headers it got, any other path with "hello PATH".
al_https_upstream "$dir"

printf '%s echo.test\n%s other.test\n' "$ADDR" "$ADDR" >"$dir/hosts"
chmod 0644 "$dir/hosts"
secret="s3cr3t-$(al_marker)-$RANDOM$RANDOM"
export AL_TEST_SECRET="$secret"
base=(--proxy-hosts "$dir/hosts" --allow-private "$net/30" --upstream-ca "$dir/ca.pem"
	--ro "$dir/ca.pem:/etc/test-ca.pem"
	--net "allow=GET|HEAD echo.test/ok/,other.test"
	--secret "API_KEY,env=AL_TEST_SECRET,hosts=echo.test")

# ---- through the proxy and the capture: rules per request, the placeholder, the trust store
al_run run --json "${base[@]}" -- sh -c '
echo "key=$API_KEY"
curl -sS -H "X-Key: $API_KEY" https://echo.test/ok/first; echo
curl -sS -o /dev/null -w "post=%{http_code}\n" -X POST -d x=1 https://echo.test/ok/post
curl -sS -w "\nother-path=%{http_code}\n" https://echo.test/admin
curl -sS --noproxy "*" -w "\ncapture=%{http_code}\n" https://echo.test/ok/capture
curl -sS -H "X-Key: $API_KEY" https://echo.test/ok/echo; echo "echo-rc=$?"
curl -sS --cacert /etc/test-ca.pem -H "X-Key: $API_KEY" https://other.test/ok/echo; echo
python3 - <<PY
import http.client, ssl
c = http.client.HTTPSConnection("127.0.0.1", 3128, context=ssl.create_default_context())
c.set_tunnel("echo.test", 443)
for m, p in (("GET", "/ok/a"), ("POST", "/ok/b")):
    c.request(m, p, body=b"" if m == "POST" else None); r = c.getresponse(); b = r.read()
    print("keepalive %s %s %d %s" % (m, p, r.status, b.decode().strip()[:200]))
PY
echo "bundle=$(grep -c "BEGIN CERTIFICATE" $SSL_CERT_FILE) ca=$(grep -c "BEGIN CERTIFICATE" $NODE_EXTRA_CA_CERTS)"
echo "vars=$REQUESTS_CA_BUNDLE $CURL_CA_BUNDLE $PIP_CERT"
openssl x509 -noout -subject -in $NODE_EXTRA_CA_CERTS
env | sort | grep -c "'"$secret"'" || true
cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr "\0" "\n" | grep -c "'"$secret"'" || true
grep -rsl "'"$secret"'" /etc /workspace /tmp 2>/dev/null | head -3
'
out=$(j stdout.data)
al_assert_rc 0
ph=$(printf '%s\n' "$out" | sed -n 's/^key=//p')
case "$ph" in airlock-secret:API_KEY:????????????????????????????????) ;; *) al_fail "the job's API_KEY is not a placeholder: '$ph'" ;; esac
al_assert_contains "$out" "hello /ok/first" "a GET the rule allows, over terminated TLS"
al_assert_contains "$out" "post=403" "a POST the rule refuses"
al_assert_contains "$out" "refused: no rule allows this request; the rules for this host: GET|HEAD echo.test:443/ok/" "the 403 names the rule"
al_assert_contains "$out" "other-path=403" "a path outside the prefix"
al_assert_contains "$out" "hello /ok/capture" "a proxy-unaware client, terminated through the capture"
al_assert_contains "$out" "capture=200" "the capture's status"
al_assert_contains "$out" "keepalive GET /ok/a 200 hello /ok/a" "the first request of a kept-alive connection"
al_assert_contains "$out" "keepalive POST /ok/b 403" "the second request of the same connection, refused"
al_assert_contains "$out" "X-Key: $ph" "the unlisted upstream's echo: the placeholder, never the secret"
sys=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
al_assert_contains "$out" "bundle=$((sys + 1)) ca=1" "the job's bundle: the system's plus one CA"
al_assert_contains "$out" "vars=/etc/ssl/airlock/bundle.pem /etc/ssl/airlock/bundle.pem /etc/ssl/airlock/bundle.pem" "the bundle variables"
al_assert_contains "$out" "airlock sandbox CA" "the one new certificate is the sandbox's CA"
log=$(cat "$dir/up.log")
al_assert_contains "$log" "X-Key: $secret" "the secret toward its host"
al_assert_not_contains "$(grep -A8 '^other.test' "$dir/up.log")" "$secret" "what the unlisted upstream got"
al_assert_contains "$(grep -A8 '^other.test' "$dir/up.log")" "X-Key: $ph" "the placeholder at the unlisted upstream"
al_assert_not_contains "$log" "POST /ok/post" "the refused POST never reached the upstream"
al_assert_not_contains "$log" "/admin" "the refused path never reached the upstream"
al_assert_not_contains "$AL_OUT" "$secret" "the verdict, and everything the job printed (env, /proc, files, the echo)"
al_assert_not_contains "$AL_ERR" "$secret" "airlock's stderr"
r=$(recs)
al_assert_contains "$r" "proxy/airlock/echo.test/GET//ok/first/200/allowed" "the record of an allowed request"
# What each GET answered 200 fetched is named by the SHA-256 of the body relayed (provenance);
# nothing for a refused request nor for a tunnel airlock could not see into.
digests=$("$AL_PY" -c 'import json, sys
for r in json.loads(sys.argv[1])["proxy"]["records"]:
    print("%s %s %s %s" % (r.get("method"), r.get("path"), r["status"], r.get("sha256")))' "$AL_OUT")
al_assert_contains "$digests" "GET /ok/first 200 $(printf 'hello /ok/first\n' | sha256sum | cut -d' ' -f1)" "the digest of a GET's body"
al_assert_contains "$digests" "GET /ok/a 200 $(printf 'hello /ok/a\n' | sha256sum | cut -d' ' -f1)" "the digest of a kept-alive connection's GET"
al_assert_contains "$digests" "POST /ok/b 403 None" "no digest for a refused request"
al_assert_contains "$digests" "None None 0 None" "no digest for a tunnel"
al_assert_contains "$r" "proxy/airlock/echo.test/POST//ok/post/403/denied" "the record of a refused request"
al_assert_contains "$r" "capture/airlock/echo.test/GET//ok/capture/200/allowed" "the capture's terminated record"
al_assert_contains "$r" "proxy/passthrough/other.test/None/None/0/allowed" "the unlisted host: a tunnel, name and port only"
al_assert_contains "$AL_OUT" "upstream response contained the secret; cut off" "the echo of the secret, cut"
al_pass "tls: rules per request, the secret toward its host only, the sandbox's CA alone trusted"

# ---- an upstream airlock cannot verify: 502, nothing reaches it
: >"$dir/up.log"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout "$dir/other.key" -out "$dir/other.pem" 2>/dev/null
chmod 0644 "$dir/other.pem"
al_run run --json --proxy-hosts "$dir/hosts" --allow-private "$net/30" --upstream-ca "$dir/other.pem" \
	--net "allow=GET echo.test/ok/" -- sh -c 'curl -sS -o /dev/null -w "%{http_code}" https://echo.test/ok/x'
al_assert_eq "$(j stdout.data)" 502 "an upstream whose certificate does not verify"
al_assert_eq "$(cat "$dir/up.log")" "" "what the unverified upstream received"
al_pass "tls: upstream certificates are verified"

# ---- on an image: its own trust store plus the sandbox's CA (its /etc is its own, read-only)
export AIRLOCK_IMAGES=$dir/store
"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$dir/bb.tar" bin-only
chmod a+r "$dir/bb.tar"
al_run image import "$dir/bb.tar" bb
al_assert_rc 0
al_run run --image bb --proxy-hosts "$dir/hosts" --allow-private "$net/30" --net "allow=GET echo.test/ok/" \
	--secret "API_KEY,env=AL_TEST_SECRET,hosts=echo.test" -- \
	sh -c 'echo "$SSL_CERT_FILE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS"; cat "$SSL_CERT_FILE"; echo ==; cat "$NODE_EXTRA_CA_CERTS"'
al_assert_rc 0
al_assert_eq "$(printf '%s\n' "$AL_OUT" | head -n 1)" \
	"/.airlock-etc/ssl/bundle.pem /.airlock-etc/ssl/bundle.pem /.airlock-etc/ssl/ca.pem" "the trust store's files on an image"
bundle=$(printf '%s\n' "$AL_OUT" | sed -n '2,/^==$/p' | sed '$d')
cert=$(printf '%s\n' "$AL_OUT" | sed -n '/^==$/,$p' | sed 1d)
al_assert_contains "$bundle" "# the bin-only image's own CA bundle" "the image's own bundle, in the job's"
al_assert_contains "$cert" "BEGIN CERTIFICATE" "the sandbox's CA"
al_assert_eq "$(printf '%s\n' "$bundle" | tail -n "$(printf '%s\n' "$cert" | wc -l)")" "$cert" "the bundle ends with the sandbox's CA"
host_line=$(sed -n 2p /etc/ssl/certs/ca-certificates.crt)
[ -z "$host_line" ] || al_assert_not_contains "$bundle" "$host_line" "the host's bundle, in an image's trust store"
al_pass "tls: on an image, the job trusts the image's store plus the sandbox's CA"

# ---- bad input: a clear error, exit 125
al_run run --net "allow=FETCH echo.test" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "methods are GET, HEAD" "an unknown method"
al_run run --net none --secret "API_KEY,env=AL_TEST_SECRET,hosts=echo.test" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "--secret needs --net allow=" "a secret without an allowlist"
al_run run --net allow=echo.test --secret "API_KEY,env=AL_UNSET_VARIABLE_X,hosts=echo.test" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "not set" "an unset secret variable"
al_pass "tls: bad rules and secrets are refused"
