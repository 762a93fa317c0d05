#!/usr/bin/env bash
# proxy_conns.sh — the issue-36 figure of what one connection through the egress layer costs the
# supervisor, which runs the proxy: a job holds N connections open at once to an HTTPS upstream on
# the host's loopback, through the proxy (a CONNECT tunnel: TLS end to end, airlock relays bytes)
# or terminated at airlock (a request rule: the job's TLS ends at airlock with the sandbox's CA,
# and airlock holds a TLS connection of its own to the upstream), and the supervisor's resident
# memory and threads are read from its /proc entry before and while they are open.
# Each connection has made one request and had its answer (so every buffer a request needs has
# been touched), then stays idle. --proxy-conns lifts the default of 64 connections a job may hold
# open. Not a test: prints a table.
# Usage: bench/proxy_conns.sh  (AIRLOCK=..., CONNS=200)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
find_airlock
conns=${CONNS:-200}
need openssl python3
bench_tls_dir
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The upstream: HTTP/1.1 over TLS, keep-alive, one thread per connection (it holds them all).
cat >"$dir/up.py" <<'PY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), H)
s.daemon_threads = True
s.request_queue_size = 1024
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1] + "/cert.pem", sys.argv[1] + "/key.pem")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
python3 "$dir/up.py" "$dir" "$port" &
srv=$!
python3 -c 'import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close(); break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("the upstream did not start")' "$port" || die "the upstream did not start"

# The job: N keep-alive HTTPS connections through the proxy (CONNECT, as clients honouring
# HTTPS_PROXY make them), one GET on each, then "ready" in a file and a wait while they stay open.
cat >"$dir/job.py" <<'PY'
import os, socket, ssl, sys, time
n, port, cafile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
px = os.environ["HTTPS_PROXY"].split("//")[1].rstrip("/")
phost, pport = px.rsplit(":", 1)
ctx = ssl.create_default_context(cafile=cafile)
held = []
for _ in range(n):
    s = socket.create_connection((phost, int(pport)))
    s.sendall(b"CONNECT bench.test:%d HTTP/1.1\r\nHost: bench.test:%d\r\n\r\n" % (port, port))
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert b" 200" in head.split(b"\r\n")[0], head
    t = ctx.wrap_socket(s, server_hostname="bench.test")
    t.sendall(b"GET / HTTP/1.1\r\nHost: bench.test:%d\r\n\r\n" % port)
    got = b""
    while not got.endswith(b"ok\n"):
        got += t.recv(4096)
    held.append(t)
print("ready", flush=True)
time.sleep(20)
PY

# measure MODE N: the supervisor's VmRSS (KiB) and Threads, N connections open (0: the job idle).
measure() {
	local mode=$1 n=$2 net ca
	net=(--net "allow=bench.test:$port")
	ca=/etc/bench.pem
	if [[ $mode == terminated ]]; then
		net=(--net "allow=GET bench.test:$port/" --upstream-ca "$dir/cert.pem")
		ca=/etc/ssl/airlock/bundle.pem
	fi
	rm -f "$dir/out"
	"$airlock" run --time 60s --cpus none --memory 1G --pids 256 --open-files 4096 --proxy-conns 1024 "${net[@]}" \
		--allow-private 127.0.0.1/32 --proxy-hosts "$dir/hosts" --ro "$dir/cert.pem:/etc/bench.pem" \
		--ro "$dir/job.py:/etc/job.py" -- python3 /etc/job.py "$n" "$port" "$ca" >"$dir/out" 2>"$dir/err" &
	local pid=$!
	for _ in $(seq 600); do
		grep -q ready "$dir/out" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || die "the job ended before its connections were open ($mode, $n): $(tail -n 3 "$dir/err")"
		sleep 0.1
	done
	grep -q ready "$dir/out" || die "the job did not open its $n connections ($mode)"
	sleep 0.5
	awk '/^VmRSS/ {r = $2} /^Threads/ {t = $2} END {print r, t}' "/proc/$pid/status"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

echo "| path | connections | supervisor RSS | threads | per connection: RSS |"
echo "|---|---:|---:|---:|---:|"
for mode in proxy terminated; do
	read -r rss0 thr0 < <(measure "$mode" 1)
	read -r rssn thrn < <(measure "$mode" "$((conns + 1))")
	python3 - "$mode" "$conns" "$rss0" "$thr0" "$rssn" "$thrn" <<'EOF'
import sys
mode, n, r0, t0, rn, tn = sys.argv[1], *map(int, sys.argv[2:])
label = {"proxy": "through the proxy (CONNECT tunnel)", "terminated": "terminated at airlock (a request rule)"}[mode]
print("| %s | 1 | %d KiB | %d | |" % (label, r0, t0))
print("| %s | %d | %d KiB | %d | %.1f KiB (%.2f threads) |" % (label, n + 1, rn, tn, (rn - r0) / n, (tn - t0) / n))
EOF
done
