#!/usr/bin/env bash
# slow_client.sh — airlock serve's request deadline (server.request_timeout), judged from the
# client's side of the socket: a client trickling its headers a byte at a time, or its body, has
# its connection closed once the request has taken longer than the deadline to arrive (each byte
# would reset libmicrohttpd's idle timeout: without the deadline it holds a server thread for
# ever); a request sent in time is answered; an answer that takes longer than the deadline (a
# streamed exec) is ours, not the client's slowness, and is never cut.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
al_serve_bin
dir=$(al_tmpdir 0777)
cfgdir=$(al_tmpdir 0755) # as root, a config file anyone but root could change is refused
cat >"$cfgdir/slow.yaml" <<'YAML'
version: 1
server:
  request_timeout: 2s
rules:
- name: all
  tools: ["*"]
  risk: LOW
  require_approval: false
YAML
chmod 0644 "$cfgdir/slow.yaml"
al_serve_start "$dir" --config "$cfgdir/slow.yaml" --audit "$dir/audit.jsonl"
port=${AL_SERVE_URL##*:}
token=$(awk '{print $NF; exit}' "$dir/serve.token")

# trickle MODE: sends a request a byte every 0.25 s for up to 20 s; prints "closed after N.N s"
# when the server ends the connection first, "finished" when the whole request went out.
cat >"$dir/trickle.py" <<'PY'
import socket, sys, time
port, token, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode == "headers":
    req = ("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n" % token
           + "X-Slow: " + "a" * 200 + "\r\n\r\n")
    head, slow = b"", req.encode()
else:
    body = b'{"profile": "' + b"x" * 200 + b'"}'
    head = ("POST /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (token, len(body))).encode()
    slow = body
s = socket.create_connection(("127.0.0.1", port), timeout=30)
start = time.monotonic()
try:
    s.sendall(head)
    for i in range(len(slow)):
        s.send(slow[i:i + 1])
        time.sleep(0.25)
        if time.monotonic() - start > 20:
            break
        # the server may have closed: a read that is ready now tells (b"" or a reset)
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                print("closed after %.1f s" % (time.monotonic() - start)); sys.exit(0)
        except BlockingIOError:
            pass
        finally:
            s.setblocking(True)
    print("finished")
except (BrokenPipeError, ConnectionResetError):
    print("closed after %.1f s" % (time.monotonic() - start))
PY
for mode in headers body; do
	out=$("$AL_PY" "$dir/trickle.py" "$port" "$token" "$mode")
	case $out in
	"closed after "*) ;;
	*) al_fail "a client trickling its $mode for 20 s was never cut off ($out)" ;;
	esac
	secs=${out#closed after }
	secs=${secs% s}
	# Cut at the deadline (2 s), seen by the pump within its 1 s sweep; generous for a loaded host.
	"$AL_PY" -c "import sys; sys.exit(0 if 1.5 <= $secs <= 10 else 1)" ||
		al_fail "the trickled $mode were cut after $secs s, not at the 2 s deadline"
	al_pass "a client trickling its $mode is cut off at the deadline ($out)"
done

# The server still serves, and a request sent at once is answered.
al_assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$AL_SERVE_URL/v1/health")" 200 "a prompt request is answered"
# An answer longer than the deadline is not the client's slowness: a 4 s streamed exec completes.
sb=$(curl -s -X POST -H 'Content-Type: application/json' -d '{}' "$AL_SERVE_URL/v1/sandboxes")
sb=$(al_json_get "$sb" sandbox_id)
[ -n "$sb" ] || al_fail "no sandbox was created"
out=$(curl -s -N -X POST -H 'Content-Type: application/json' \
	-d '{"language":"shell","code":"sleep 4; echo slow-answer-done"}' "$AL_SERVE_URL/v1/sandboxes/$sb/exec")
al_assert_contains "$out" "slow-answer-done" "an answer that outlasts the deadline is never cut"
al_pass "the request deadline cuts slow clients only"
