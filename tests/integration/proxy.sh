#!/bin/bash
# proxy.sh — the allowlist posture: the egress proxy on the sandbox's own 127.0.0.1 reaches
# allowed names only, checks every resolved address (loopback and private refused unless
# allow_private covers them), records every attempt, survives garbage, and is the only way
# out. Test servers run on the host's loopback (and, as root, in a network namespace this test
# makes); names resolve through a test-only hosts file given with --proxy-hosts.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is not installed"
command -v openssl >/dev/null || al_skip "openssl is not installed"

j() { al_json_get "$AL_OUT" "$1"; }
if ! al_backend_is native && ! al_backend_enforces egress_proxy; then
	# gVisor's network stack offers no way to hand its listening socket to airlock: the
	# allowlist posture and the broker are refused by name (backend_layers.egress_proxy false).
	al_expect_refusal 'egress proxy' --net allow=good.test:443
	al_expect_refusal 'egress proxy' --net allow=good.test:443 --proxy-http
	exit 0
fi
# rec FIELD [N]: field of the N-th (default 0) connection record.
rec() { al_json_get "$AL_OUT" "proxy.records.${2:-0}.$1"; }

dir=$(al_tmpdir)
# A CA and a server certificate for good.test, so curl inside verifies TLS through CONNECT.
al_test_certs "$dir" good.test
chmod 0644 "$dir"/*

# One HTTP and one HTTPS server on the host's loopback; each answers "hello <path>".
al_http_host "$dir" TLS
HTTP_PORT=$AL_HTTP_PORT TLS_PORT=$AL_TLS_PORT

printf '127.0.0.1 good.test loop.test\n10.99.1.2 private.test\n' >"$dir/hosts"
chmod 0644 "$dir/hosts"
base=(--proxy-hosts "$dir/hosts" --ro "$dir/ca.pem:/etc/test-ca.pem")

# ---- an allowed name through CONNECT (TLS verified end to end) and plain HTTP
al_run run --json "${base[@]}" --net "allow=good.test:$TLS_PORT,good.test:$HTTP_PORT" --allow-private 127.0.0.1/32 \
	--proxy-http -- sh -c "curl -sS --cacert /etc/test-ca.pem https://good.test:$TLS_PORT/tls && curl -sS http://good.test:$HTTP_PORT/plain"
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'hello /tls\nhello /plain')" "what curl fetched through the proxy"
al_assert_eq "$(j enforced.network)" allow "enforced.network"
al_assert_eq "$(j proxy.allowed)" 2 "allowed connections"
al_assert_eq "$(rec kind 0)/$(rec decision 0)/$(rec host 0)/$(rec port 0)/$(rec address 0)" \
	"connect/allowed/good.test/$TLS_PORT/127.0.0.1" "the CONNECT record"
al_assert_eq "$(rec kind 1)/$(rec decision 1)" "http/allowed" "the plain-HTTP record"
[ "$(rec bytes_down 0)" -gt 100 ] || al_fail "no TLS bytes counted downstream: $(rec bytes_down 0)"
[ "$(rec bytes_up 0)" -gt 100 ] || al_fail "no TLS bytes counted upstream: $(rec bytes_up 0)"
al_pass "allowed name: https through CONNECT and plain http, recorded with bytes"

# ---- not on the list: 403 with a reason; plain HTTP without --proxy-http: 403
al_run run --json "${base[@]}" --net "allow=good.test:$TLS_PORT" --allow-private 127.0.0.1/32 -- sh -c \
	"curl -sS -o /dev/null -w '%{http_code} ' -x http://127.0.0.1:3128 http://good.test:$HTTP_PORT/x; curl -sS -p -o /dev/null -w '%{http_code} ' http://loop.test:$TLS_PORT/ 2>&1 | grep -o 'CONNECT tunnel failed, response [0-9]*'"
al_assert_contains "$(j stdout.data)" "403 " "plain HTTP when not enabled"
al_assert_contains "$(j stdout.data)" "response 403" "CONNECT to a name not on the list"
al_assert_eq "$(rec decision 0)/$(rec reason 0)" "denied/plain HTTP is not enabled (use https through CONNECT)" "plain-HTTP refusal record"
al_assert_eq "$(rec decision 1)/$(rec host 1)/$(rec reason 1)" "denied/loop.test/host or port not on the allowlist" "not-on-list record"
al_pass "names and ports not on the list are refused with 403"

# ---- a listed name that resolves to loopback (a rebinding attempt) or a private range
: >"$dir/access.log"
al_run run --json "${base[@]}" --net "allow=good.test:$TLS_PORT,private.test:$TLS_PORT" -- sh -c \
	"curl -sS -p http://good.test:$TLS_PORT/ 2>&1; curl -sS -p http://private.test:$TLS_PORT/ 2>&1; true"
al_assert_eq "$(rec decision 0)/$(rec reason 0)/$(rec address 0)" "denied/loopback/127.0.0.1" "allowed name resolving to 127.0.0.1"
al_assert_eq "$(rec decision 1)/$(rec reason 1)/$(rec address 1)" "denied/private/10.99.1.2" "allowed name resolving to 10/8"
! grep -q . "$dir/access.log" || al_fail "a refused request reached the server: $(cat "$dir/access.log")"
al_pass "loopback and private addresses of allowed names are refused without allow_private"

# ---- IP literals only when listed literally
al_run run --json "${base[@]}" --net "allow=good.test:$HTTP_PORT" --allow-private 127.0.0.1/32 -- sh -c \
	"NO_PROXY= no_proxy= curl -sS -p http://127.0.0.1:$HTTP_PORT/ 2>&1; true"
al_assert_eq "$(rec decision 0)/$(rec reason 0)" "denied/IP literal not on the allowlist" "unlisted IP literal"
al_run run --json --net "allow=127.0.0.1:$HTTP_PORT" --allow-private 127.0.0.1/32 -- sh -c \
	"NO_PROXY= no_proxy= curl -sS -p http://127.0.0.1:$HTTP_PORT/literal"
al_assert_eq "$(j stdout.data)" "hello /literal" "a listed IP literal"
al_pass "IP literals: only when listed"

# ---- ignoring the proxy gets nowhere: no route but the proxy
log="$AL_TEST_ROOT/listen.log"
al_listen "$log"
al_probe --net "allow=good.test" -- connect 127.0.0.1 "$AL_LISTEN_TCP"
al_assert_eq "$(al_kv connect)" ECONNREFUSED "direct TCP to the host's listener"
al_probe --net "allow=good.test" -- connect 10.99.1.2 80
al_assert_contains "$(al_kv connect)" "ENETUNREACH" "direct TCP to a non-local address"
al_probe --net "allow=good.test" -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
sleep 0.2
al_assert_eq "$(cat "$log")" "" "what the host listener saw"
al_listen_stop
al_pass "programs that ignore the proxy variables simply fail"

# ---- garbage, limits and timeouts never hurt the proxy
# Two runs, so that no answer depends on how fast the proxy's threads end: the first has
# a short idle timeout (for the 408), the second a long one, so the held connections
# cannot time out and free their slots before the connection over the limit arrives. Both ask
# the proxy one thing a connection, and print the first line of its answer.
ask='
import socket, sys, time
def ask(data, wait=5):
    s = socket.create_connection(("127.0.0.1", 3128)); s.settimeout(wait)
    if data: s.sendall(data)
    try: r = s.recv(200)
    except socket.timeout: r = b"TIMEOUT"
    s.close(); return r.split(b"\r\n")[0].decode()
'
al_run run --json --net "allow=127.0.0.1:$HTTP_PORT" --allow-private 127.0.0.1/32 --proxy-idle 1s -- \
	/usr/bin/python3 -c "$ask"'
print(ask(b"\x00\xff garbage\r\n\r\n"))
print(ask(b"GET / HTTP/1.1\nHost: x\n\n"))
print(ask(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"))  # TLS sent to a plain proxy
print(ask(b"GET http://x/" + b"a" * 20000))
print(ask(b"GET http://127.0.0.1:%s/ HTTP/2.0\r\n\r\n" % sys.argv[1].encode()))
print(ask(None))
print(ask(b"CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n" % sys.argv[1].encode()))
' "$HTTP_PORT"
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'HTTP/1.1 400 Bad Request\nHTTP/1.1 400 Bad Request\nHTTP/1.1 400 Bad Request\nHTTP/1.1 431 Request Header Fields Too Large\nHTTP/1.1 505 HTTP Version Not Supported\nHTTP/1.1 408 Request Timeout\nHTTP/1.1 200 Connection established')" \
	"answers to garbage, an idle client, then a good request"
al_assert_eq "$(j proxy.malformed)" 5 "malformed requests counted"

# The proxy accepts in arrival order, so the three held connections have their slots
# before the fourth is looked at. Once they are closed, their slots come free as soon as
# the proxy's threads see the end: asked again until then (each 503 is counted too).
al_run run --json --net "allow=127.0.0.1:$HTTP_PORT" --allow-private 127.0.0.1/32 --proxy-conns 3 --proxy-idle 60s -- \
	/usr/bin/python3 -c "$ask"'
connect = b"CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n" % sys.argv[1].encode()
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(3)]
print(ask(connect))
for h in held: h.close()
again = 0
for _ in range(200):
    a = ask(connect)
    if not a.startswith("HTTP/1.1 503"): break
    again += 1; time.sleep(0.05)
print(a)
sys.stderr.write("%d\n" % again)
' "$HTTP_PORT"
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'HTTP/1.1 503 Service Unavailable\nHTTP/1.1 200 Connection established')" \
	"a connection over the limit, then a good request once the held ones are closed"
al_assert_eq "$(j proxy.over_limit)" "$((1 + $(j stderr.data)))" "connections over the limit counted"
al_pass "garbage gets 4xx, idle clients 408, the limit 503, and the proxy keeps serving"

# ---- as root: a test host in a network namespace of our own, on a private range
if [ "$AL_TEST_MODE" = root ] && [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
	al_netns_host 10.213.77.0
	al_bg ip netns exec "$AL_NS" "$AL_PY" -c '
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"netns host\n"; self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.HTTPServer(("10.213.77.2", 8080), H).serve_forever()'
	for _ in $(seq 50); do curl -s -o /dev/null http://10.213.77.2:8080/ && break; sleep 0.1; done
	printf '10.213.77.2 registry.test\n' >"$dir/hosts2"
	chmod 0644 "$dir/hosts2"
	al_run run --json --proxy-hosts "$dir/hosts2" --net allow=registry.test:8080 -- sh -c 'curl -sS -p http://registry.test:8080/ 2>&1; true'
	al_assert_eq "$(rec decision 0)/$(rec reason 0)" "denied/private" "a private test host without allow_private"
	al_run run --json --proxy-hosts "$dir/hosts2" --net allow=registry.test:8080 --allow-private 10.213.77.0/30 -- \
		curl -sS -p http://registry.test:8080/
	al_assert_eq "$(j stdout.data)" "netns host" "a private test host with allow_private"
	al_assert_eq "$(rec address 0)" 10.213.77.2 "the address connected to"
	al_netns_host_del
	al_pass "a test host in its own network namespace: refused, then allowed by allow_private"
fi

# ---- bad input: exit 125, nothing started
for bad in "--net allow=" "--net allow=*.com" "--net allow=a..b" "--allow-private 10.0.0.0/33" \
	"--allow-private 0.0.0.0/0" "--proxy-conns 0" "--proxy-hosts relative/file"; do
	# shellcheck disable=SC2086
	al_run run $bad -- /bin/true
	al_assert_rc 125
done
al_pass "bad network input is refused with 125"
