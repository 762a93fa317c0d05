#!/usr/bin/env bash
# egress.sh — the egress capture (issue 36): under an allowlist, programs that ignore the proxy
# variables (curl --noproxy '*', a raw Python socket) reach allowed names through the proxy's own
# checks: the sandbox's resolver gives each allowed name an address of airlock's, unknown names
# NXDOMAIN at once, literal addresses fail at once, a listed name resolving to loopback or the
# metadata address is refused, each attempt is recorded with its name and "via": "capture". The
# explicit proxy keeps working, and its refusals name the host and the reason in the text a client
# prints. Then the same in a held sandbox of airlock serve. The upstream host lives in a network
# namespace this test makes (HTTPS with the test's CA on 443, a banner-and-echo server on 22, a
# plain listener on 80); names resolve through the test's hosts file (--proxy-hosts; for serve, a
# private /etc/hosts). Made as root in both modes; airlock runs as the mode's user.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || al_skip "making the upstream host's network namespace needs root"
for t in ip curl openssl unshare; do command -v "$t" >/dev/null || al_skip "$t is missing"; done

j() { al_json_get "$AL_OUT" "$1"; }
# rec FIELD [N]: field of the N-th (default 0) record.
rec() { al_json_get "$AL_OUT" "proxy.records.${2:-0}.$1"; }
# recs: every record as kind/host/port/decision, one a line (connections end in any order).
recs() {
	"$AL_PY" -c 'import json,sys; [print("%s/%s/%s/%s" % (r["kind"], r["host"], r["port"], r["decision"])) for r in json.loads(sys.argv[1])["proxy"]["records"]]' "$AL_OUT"
}

dir=$(al_tmpdir 0777)
m=$(al_marker)
al_test_certs "$dir" good.test meta.test rebind.test
chmod 0644 "$dir"/*

# ---- the upstream host, on a /30 of a private range in a namespace of its own
net="10.215.$((RANDOM % 250)).0"
al_netns_host "$net"
ADDR=$AL_NS_ADDR
cat >"$dir/up.py" <<'PY'
import os, socket, ssl, sys, threading
d, addr = sys.argv[1], sys.argv[2]
def log(s):
    with open(d + "/up.log", "a") as f: f.write(s + "\n")
def https(c):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(d + "/srv.pem", d + "/srv.key")
    try:
        t = ctx.wrap_socket(c, server_side=True)
        req = t.recv(4096).decode(errors="replace"); path = req.split(" ")[1] if " " in req else "?"
        log("443 " + path)
        body = ("hello " + path + "\n").encode()
        t.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body); t.close()
    except Exception as e: log("443 error %s" % e)
def banner(c):
    log("22 conn"); c.sendall(b"SSH-2.0-airlock-test\r\n")
    data = c.recv(100); c.sendall(b"echo " + data); c.close()
def plain(c):
    log("80 conn"); c.close()
def serve(port, fn):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((addr, port)); s.listen(16)
    while True:
        c, _ = s.accept(); threading.Thread(target=fn, args=(c,), daemon=True).start()
for port, fn in ((443, https), (22, banner), (80, plain)):
    threading.Thread(target=serve, args=(port, fn), daemon=True).start()
open(d + "/up.ready", "w").write("ok\n")
threading.Event().wait()
PY
al_bg ip netns exec "$AL_NS" "$AL_PY" "$dir/up.py" "$dir" "$ADDR"
al_wait_started "$dir/up.ready" "the upstream host"
: >"$dir/up.log"
chmod 0666 "$dir/up.log"

printf '%s good.test\n169.254.169.254 meta.test\n127.0.0.1 rebind.test\n' "$ADDR" >"$dir/hosts"
chmod 0644 "$dir/hosts"
allow="good.test,good.test:22,meta.test,rebind.test"
base=(--proxy-hosts "$dir/hosts" --allow-private "$net/30" --ro "$dir/ca.pem:/etc/test-ca.pem" --net "allow=$allow")

# ---- curl --noproxy '*': through the capture, TLS verified end to end with the test's CA
al_run run --json "${base[@]}" -- sh -c "cat /etc/resolv.conf >&2; curl -sS --noproxy '*' --cacert /etc/test-ca.pem https://good.test/capture-$m"
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "hello /capture-$m" "what curl --noproxy fetched"
al_assert_contains "$(j stderr.data)" "nameserver 127.53.0.1" "the sandbox's resolv.conf"
al_assert_eq "$(rec kind)/$(rec via)/$(rec tls)/$(rec decision)" "capture/capture/passthrough/allowed" "the capture record"
al_assert_eq "$(rec host)/$(rec port)/$(rec address)" "good.test/443/$ADDR" "the record's name, port and address"
[ "$(rec bytes_down)" -gt 500 ] || al_fail "no TLS bytes counted downstream: $(rec bytes_down)"
[ "$(rec bytes_up)" -gt 100 ] || al_fail "no TLS bytes counted upstream: $(rec bytes_up)"
al_assert_eq "$(al_json_type "$AL_OUT" proxy.records.1)" missing "only the one connection recorded"
al_assert_eq "$(j proxy.capture.dns)" "127.53.0.1:53" "the capture's resolver"
al_assert_contains "$(j proxy.capture.ports)" "22" "the capture's ports"
al_assert_contains "$(cat "$dir/up.log")" "443 /capture-$m" "the upstream's log"
al_pass "curl --noproxy reaches an allowed name through the capture, recorded with name, port, address and bytes"

# ---- a raw Python socket: the banner server on an allowed port 22, and TLS on 443
al_run run --json "${base[@]}" -- /usr/bin/python3 -c '
import socket, ssl
s = socket.create_connection(("good.test", 22), timeout=10)
print(s.recv(100).decode().strip()); s.sendall(b"ping"); print(s.recv(100).decode().strip())
ctx = ssl.create_default_context(cafile="/etc/test-ca.pem")
with ctx.wrap_socket(socket.create_connection(("good.test", 443), timeout=10), server_hostname="good.test") as t:
    t.sendall(b"GET /raw HTTP/1.0\r\nHost: good.test\r\n\r\n")
    print(t.recv(4096).decode().split("\r\n\r\n", 1)[1].strip())
print(socket.gethostbyname("good.test"))
'
al_assert_rc 0
out=$(j stdout.data)
al_assert_eq "$(printf '%s\n' "$out" | sed -n 1,3p)" "$(printf 'SSH-2.0-airlock-test\necho ping\nhello /raw')" "what the raw socket read"
case "$(printf '%s\n' "$out" | sed -n 4p)" in 127.18.*) ;; *) al_fail "good.test resolved to $(printf '%s\n' "$out" | sed -n 4p), not a capture address" ;; esac
al_assert_eq "$(recs | sort)" "$(printf 'capture/good.test/22/allowed\ncapture/good.test/443/allowed')" "the records"
al_pass "a raw socket reaches allowed names on their allowed ports"

# ---- refused: an unknown name (NXDOMAIN, the resolver's own error), a literal address, an
# address our resolver never gave, a port not listed for the name, metadata and loopback targets
: >"$dir/up.log"
al_run run --json "${base[@]}" -- /usr/bin/python3 -c '
import errno, socket, sys
def attempt(host, port):
    try:
        s = socket.create_connection((host, port), timeout=10); s.settimeout(10)
        return "open %r" % s.recv(10)
    except socket.gaierror as e: return "gaierror %d" % e.errno
    except socket.timeout: return "timeout"
    except OSError as e: return errno.errorcode.get(e.errno, str(e))
for host, port in (("other.test", 443), (sys.argv[1], 443), ("1.2.3.4", 443), ("127.0.0.1", 443),
                   ("good.test", 80), ("meta.test", 443), ("rebind.test", 443)):
    print(host, port, attempt(host, port))
' "$ADDR"
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'other.test 443 gaierror %d\n%s 443 ENETUNREACH\n1.2.3.4 443 ENETUNREACH\n127.0.0.1 443 ECONNRESET\ngood.test 80 ECONNRESET\nmeta.test 443 ECONNRESET\nrebind.test 443 ECONNRESET' "$("$AL_PY" -c 'import socket; print(socket.EAI_NONAME)')" "$ADDR")" \
	"how each refused attempt failed"
al_assert_eq "$(rec kind 0)/$(rec host 0)/$(rec decision 0)/$(rec reason 0)" "dns/other.test/denied/not in the allowlist" "the refused name's record"
al_assert_eq "$(rec host 1)/$(rec decision 1)/$(rec reason 1)" "127.0.0.1/denied/not an address of a name airlock resolved" "the unnamed address's record"
al_assert_eq "$(rec host 2)/$(rec port 2)/$(rec reason 2)" "good.test/80/host or port not on the allowlist" "the unlisted port's record"
al_assert_eq "$(rec host 3)/$(rec reason 3)/$(rec address 3)" "meta.test/link-local/metadata/169.254.169.254" "the metadata record"
al_assert_eq "$(rec host 4)/$(rec reason 4)/$(rec address 4)" "rebind.test/loopback/127.0.0.1" "the rebinding record"
[ "$(j proxy.capture.nxdomain)" -ge 1 ] || al_fail "NXDOMAIN answers counted: $(j proxy.capture.nxdomain)"
al_assert_eq "$(cat "$dir/up.log")" "" "what the upstream saw of the refused attempts"
# curl's own words for the unknown name: the resolver's error, not a timeout.
al_run run --json "${base[@]}" -- curl -sS --noproxy '*' https://other.test/
al_assert_eq "$(j exit_code)" 6 "curl's exit code for an unknown name (could not resolve)"
al_assert_contains "$(j stderr.data)" "Could not resolve host: other.test" "what curl says"
al_pass "unknown names get NXDOMAIN, literals no route, unnamed addresses, unlisted ports, metadata and loopback a reset; all recorded"

# ---- the resolver itself: UDP and TCP, AAAA empty, malformed queries FORMERR
al_run run --json "${base[@]}" -- /usr/bin/python3 -c '
import socket, struct
def q(name, t, id=7):
    return struct.pack(">HHHHHH", id, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", t, 1)
def show(r): return "rcode=%d an=%d" % (r[3] & 15, struct.unpack(">H", r[6:8])[0])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5); u.connect(("127.53.0.1", 53))
for name, t in (("good.test", 1), ("good.test", 28), ("nope.test", 1)):
    u.send(q(name, t)); print("udp", name, t, show(u.recv(512)))
u.send(q("good.test", 1)[:16]); print("udp garbage", show(u.recv(512)))  # cut inside the name
s = socket.create_connection(("127.53.0.1", 53), timeout=5)
m = q("good.test", 1); s.sendall(struct.pack(">H", len(m)) + m)
n = struct.unpack(">H", s.recv(2))[0]; r = s.recv(n); print("tcp good.test", show(r), socket.inet_ntoa(r[-4:]))
'
al_assert_rc 0
out=$(j stdout.data)
al_assert_contains "$out" "udp good.test 1 rcode=0 an=1" "A of an allowed name over UDP"
al_assert_contains "$out" "udp good.test 28 rcode=0 an=0" "AAAA of an allowed name: empty"
al_assert_contains "$out" "udp nope.test 1 rcode=3 an=0" "an unknown name: NXDOMAIN"
al_assert_contains "$out" "udp garbage rcode=1 an=0" "garbage: FORMERR"
al_assert_contains "$out" "tcp good.test rcode=0 an=1 127.18." "A over TCP"
al_assert_eq "$(j proxy.capture.malformed)" 1 "malformed queries counted"
al_pass "the resolver answers over UDP and TCP, AAAA empty, garbage FORMERR"

# ---- the explicit proxy as before, and its refusal's text naming the host and the reason
al_run run --json "${base[@]}" -- /usr/bin/python3 -c '
import http.client, subprocess
print(subprocess.run(["curl", "-sS", "--cacert", "/etc/test-ca.pem", "https://good.test/proxied"], capture_output=True, text=True).stdout.strip())
c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=10); c.set_tunnel("other.test", 443)
try: c.connect()
except OSError as e: print(e)
'
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "$(printf 'hello /proxied\nTunnel connection failed: 403 Forbidden (airlock: other.test refused: host or port not on the allowlist)')" \
	"the proxied fetch, and what Python (and so pip) says of a refused CONNECT"
al_assert_eq "$(rec kind 0)/$(rec via 0)/$(rec host 0)/$(rec decision 0)" "connect/proxy/good.test/allowed" "the CONNECT record"
al_assert_eq "$(rec kind 1)/$(rec via 1)/$(rec decision 1)" "connect/proxy/denied" "the refused CONNECT's record"
al_pass "HTTPS_PROXY works as before; a refusal's status line names the host and the reason"

# ---- a held sandbox of airlock serve: the same capture, its names kept between execs
confdir=$(al_tmpdir 0755)
cat >"$confdir/config.yaml" <<EOF
version: 1
approval:
  auto_approve_up_to: CRITICAL
network:
  registries:
    upstream: ["good.test", "good.test:22"]
  allow-private: [$net/30]
profiles:
  egress:
    namespaces: true
    network: [upstream]
    filesystem: workspace
    seccomp: default
    require: [userns, pidns, mntns, netns, seccomp]
EOF
chmod 0644 "$confdir/config.yaml"
printf '127.0.0.1 localhost\n%s good.test\n' "$ADDR" >"$dir/serve-hosts"
chmod 0644 "$dir/serve-hosts"
al_serve_bin
# The server (and so its proxy's resolver) sees the test's hosts file in a mount namespace of its own.
al_serve_launch "$dir/serve" "airlock serve" unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/serve-hosts" \
	"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --socket none --token-file "$dir/serve.token" --config "$confdir/config.yaml" \
	--audit "$dir/audit.jsonl"
al_serve_auth "$dir/serve.token"
run() {
	local req
	req=$("$AL_PY" -c 'import json,sys; print(json.dumps({"language":"shell","code":sys.argv[2],"network_enabled":True,"fresh":True}))' "$1" "$2")
	al_api POST "/v1/sandboxes/$1/exec" -H 'Content-Type: application/json' -d "$req"
	al_api_result "exec in $1"
}
r() { al_json_get "$RES" "$1"; }
al_api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"profile":"egress","network_enabled":true}'
al_assert_eq "$CODE" 201 "create a sandbox of the egress profile: $BODY"
sb=$(al_json_get "$BODY" sandbox_id)
ca=$(cat "$dir/ca.pem")
run "$sb" "printf '%s\n' '$ca' >/tmp/ca.pem; getent hosts good.test | cut -d' ' -f1; curl -sS --noproxy '*' --cacert /tmp/ca.pem https://good.test/held-$m"
addr1=$(r stdout | sed -n 1p)
case "$addr1" in 127.18.*) ;; *) al_fail "good.test resolved to '$addr1' in the held sandbox: $(r stdout) $(r stderr)" ;; esac
al_assert_eq "$(r stdout | sed -n 2p)" "hello /held-$m" "what curl --noproxy fetched in the held sandbox"
al_assert_eq "$(r verdict.proxy.records.0.kind)/$(r verdict.proxy.records.0.host)/$(r verdict.proxy.records.0.decision)" \
	"capture/good.test/allowed" "the held exec's capture record"
# The audit record of that exec names the host and the capture too.
arec=$(grep '"tool":"code_execute"' "$dir/audit.jsonl" | grep "\"sandbox\":\"$sb\"" | tail -n 1)
al_assert_eq "$(al_json_get "$arec" proxy.0.kind)/$(al_json_get "$arec" proxy.0.via)/$(al_json_get "$arec" proxy.0.host)" \
	"capture/capture/good.test" "the audit record's egress"
run "$sb" "getent hosts good.test | cut -d' ' -f1; getent hosts other.test || echo nxdomain"
al_assert_eq "$(r stdout)" "$(printf '%s\nnxdomain' "$addr1")" "the next exec: the same address, and NXDOMAIN for an unknown name"
al_assert_eq "$(r verdict.proxy.records.0.kind)/$(r verdict.proxy.records.0.host)" "dns/other.test" "the next exec's own record"
al_assert_eq "$(al_json_type "$RES" verdict.proxy.records.1)" missing "no record of the first exec again"
# network_enabled with nothing to reach (the default profile names no registry, the request no
# allowed_domains) is refused at once.
al_api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"network_enabled":true}'
al_assert_eq "$CODE" 400 "create with network_enabled and nothing allowed: $BODY"
al_assert_contains "$BODY" "allows no host" "the refusal names the cause"
al_api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"network_enabled":true,"allowed_domains":["good.test"]}'
al_assert_eq "$CODE" 201 "create with network_enabled and allowed_domains: $BODY"
kill -TERM "$SERVE_PID"
al_netns_host_del
al_pass "a held sandbox of airlock serve captures the same way; its names are kept from exec to exec; network with nothing allowed is refused at create"
