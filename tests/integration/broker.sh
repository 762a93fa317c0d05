#!/bin/bash
# broker.sh — the credential broker: the job calls an HTTPS API through the proxy port and the
# supervisor adds the secret header; the secret is never in the sandbox's environment, /proc,
# files, output or the verdict. The upstream is a TLS test server on the host's loopback with a
# CA made here, passed to the broker with ca=; loopback is reached only because --allow-private
# names it (a broker's upstream is address-checked as any proxied connection).
. "$(dirname "$0")/../lib.sh"

command -v openssl >/dev/null || al_skip "openssl is not installed"
command -v curl >/dev/null || al_skip "curl is not installed"

j() { al_json_get "$AL_OUT" "$1"; }
dir=$(al_tmpdir)
al_test_certs "$dir" localhost
# A second CA the upstream's certificate does not chain to.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout "$dir/other.key" \
	-out "$dir/other.pem" 2>/dev/null
chmod 0644 "$dir"/*

# The upstream: records each request's line and headers, answers "upstream saw <path>"; /echo
# (the last segment) answers with the request's headers, gzipped when the request accepts gzip;
# /gz always gzips.
al_bg "$AL_PY" -c '
import gzip, http.server, os, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        seen = "".join("%s: %s\n" % kv for kv in self.headers.items())
        with open(sys.argv[2] + "/seen.log", "a") as f:
            f.write(self.requestline + "\n" + seen + "--\n")
        leaf = self.path.rsplit("/", 1)[-1]
        body = (seen if leaf == "echo" else "upstream saw " + self.path + "\n").encode()
        self.send_response(200)
        if leaf == "gz" or (leaf == "echo" and "gzip" in self.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body); self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    do_POST = do_GET
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2] + "/srv.pem", sys.argv[2] + "/srv.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.server_address[1]); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
' "$dir/port" "$dir"
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
read -r PORT <"$dir/port"

secret="s3cr3t-$(al_marker)-$RANDOM$RANDOM"
printf '%s\n' "$secret-file" >"$dir/secret.txt"
chmod 0644 "$dir/secret.txt"
export AL_TEST_SECRET="$secret"
broker="api=https://localhost:$PORT/v1,header=Authorization,scheme=Bearer,env=AL_TEST_SECRET,ca=$dir/ca.pem"
lo=(--allow-private 127.0.0.1/32)

# ---- the job reaches the upstream through the broker; the header is added outside
al_run run --json "${lo[@]}" --broker "$broker" -- sh -c '
echo "url=$AIRLOCK_BROKER_API_URL"
curl -sS -H "Authorization: forged" "$AIRLOCK_BROKER_API_URL/items?q=1"
env | sort
cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr "\0" "\n"
grep -rs . /etc /workspace /tmp 2>/dev/null | head -c 60000'
al_assert_rc 0
al_assert_contains "$(j stdout.data)" "url=http://127.0.0.1:3128/api" "the broker URL in the environment"
al_assert_contains "$(j stdout.data)" "upstream saw /v1/items?q=1" "the upstream's answer through the broker"
seen=$(cat "$dir/seen.log")
al_assert_contains "$seen" "GET /v1/items?q=1 HTTP/1.1" "the request line the upstream got"
al_assert_contains "$seen" "Authorization: Bearer $secret" "the injected header"
al_assert_not_contains "$seen" "forged" "the job's own Authorization header"
[ "$(grep -c '^Authorization:' "$dir/seen.log")" = 1 ] || al_fail "not exactly one Authorization header: $seen"
al_assert_not_contains "$AL_OUT" "$secret" "the verdict and everything the job could read"
al_assert_not_contains "$AL_ERR" "$secret" "airlock's stderr"
al_assert_eq "$(j proxy.records.0.kind)/$(j proxy.records.0.broker)/$(j proxy.records.0.decision)" "broker/api/allowed" "the broker record"
al_pass "broker: header added outside, secret nowhere inside"

# ---- a file as the secret source works the same
: >"$dir/seen.log"
al_run run --json --net loopback "${lo[@]}" --broker "api=https://localhost:$PORT,header=X-Api-Key,file=$dir/secret.txt,ca=$dir/ca.pem" -- \
	sh -c 'curl -sS "$AIRLOCK_BROKER_API_URL/k"'
al_assert_contains "$(j stdout.data)" "upstream saw /k" "file-sourced broker"
al_assert_contains "$(cat "$dir/seen.log")" "X-Api-Key: $secret-file" "the file's secret as the header"
al_pass "broker: secret from a file"

# ---- compression: the job's Accept-Encoding never reaches the upstream (which gets identity, so
# its echo stays raw and is cut), and an upstream that gzips anyway is refused with 502
: >"$dir/seen.log"
al_run run --json --net loopback "${lo[@]}" --broker "$broker" -- sh -c '
curl -sS --compressed -H "Accept-Encoding: gzip" "$AIRLOCK_BROKER_API_URL/echo"; echo
curl -sS --compressed -w "gz=%{http_code}\n" "$AIRLOCK_BROKER_API_URL/gz"'
al_assert_not_contains "$AL_OUT" "$secret" "a gzipped echo of the request, decoded by the job"
al_assert_contains "$(j stdout.data)" "gz=502" "an upstream response in gzip"
seen=$(cat "$dir/seen.log")
al_assert_contains "$seen" "Accept-Encoding: identity" "the Accept-Encoding the upstream got"
al_assert_not_contains "$seen" "gzip" "the job's Accept-Encoding upstream"
al_assert_contains "$AL_OUT" "content-encoded" "the proxy record says why the gzip response was refused"
al_pass "broker: no compressed response carries the secret past the scan"

# ---- an upstream whose certificate does not verify: 502, and nothing reaches it
: >"$dir/seen.log"
al_run run --json --net loopback "${lo[@]}" --broker "api=https://localhost:$PORT,header=Authorization,env=AL_TEST_SECRET,ca=$dir/other.pem" -- \
	sh -c 'curl -sS -o /dev/null -w "%{http_code}" "$AIRLOCK_BROKER_API_URL/x"'
al_assert_eq "$(j stdout.data)" 502 "an upstream that fails verification"
al_assert_eq "$(cat "$dir/seen.log")" "" "what the unverified upstream received"
al_pass "broker: certificates are verified"

# ---- the upstream's address is checked as any proxied connection's: without --allow-private the
# loopback upstream is refused (403, the reason recorded) and receives nothing
: >"$dir/seen.log"
al_run run --json --net loopback --broker "$broker" -- \
	sh -c 'curl -sS -w "\ncode=%{http_code}\n" "$AIRLOCK_BROKER_API_URL/x"'
al_assert_contains "$(j stdout.data)" "code=403" "a broker upstream on loopback without --allow-private"
al_assert_contains "$(j stdout.data)" "loopback" "the reason the job reads"
al_assert_eq "$(j proxy.records.0.kind)/$(j proxy.records.0.decision)/$(j proxy.records.0.reason)" "broker/denied/loopback" "the record"
al_assert_eq "$(cat "$dir/seen.log")" "" "what the loopback upstream received"
al_pass "broker: upstream addresses are checked (loopback needs --allow-private)"

# ---- bad input: exit 125, nothing started, the secret never echoed
for bad in "api=http://localhost:$PORT,header=A,env=AL_TEST_SECRET" "api=https://localhost:$PORT,header=A" \
	"api=https://localhost:$PORT,header=A,env=AL_UNSET_VARIABLE_X" "api=https://localhost:$PORT,header=A,file=$dir/missing" \
	"BAD NAME=https://localhost,header=A,env=AL_TEST_SECRET" \
	"api=https://localhost:$PORT,header=A,env=AL_TEST_SECRET,file=$dir/secret.txt"; do
	al_run run --net loopback --broker "$bad" -- /bin/true
	al_assert_rc 125
	al_assert_not_contains "$AL_ERR" "$secret" "the refusal message"
done
al_run run --net host --broker "$broker" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "--broker needs --net none or --net allow=..., not host" "a broker with the host's network (no proxy there)"
al_pass "bad broker input is refused with 125"
