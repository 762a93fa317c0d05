#!/usr/bin/env bash
# ports.sh — a server on a held sandbox's own loopback reached through airlock serve (issue 31):
# python3 -m http.server in the sandbox fetched with curl (a file, a 50 MiB answer streamed with
# the server's memory bounded, a POST body passed on), a WebSocket echo through node's client,
# owner-only access (no credential 401, another principal 404, a wrong or another port's token 401,
# the right token and its cookie work) with the sandbox's server logging no refused request, bad
# ports 400, nothing listening 502, and a proxied WebSocket closed when the sandbox is destroyed.
# shellcheck disable=SC2153 # CODE and BODY are al_api's (tests/lib.sh), not misspelt code and body
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v node >/dev/null || al_skip "node is missing"
node --experimental-websocket -e 'if (typeof WebSocket !== "function") process.exit(1)' 2>/dev/null ||
	al_skip "node has no WebSocket client (node 20.10 or later)"
al_serve_bin
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
{
	serve_config_head
	cat <<'EOF'
server:
  max_sandboxes: 8
  idle_ttl: 10m
  max_lifetime: 1h
  pool: {}
EOF
} >"$confdir/p.yaml"
chmod 0644 "$confdir/p.yaml"

al_serve_tokens "$dir/clients.token"
alice=$AL_ALICE
bob=$AL_BOB
al_serve_launch "$dir/serve" "airlock serve" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --config "$confdir/p.yaml" \
	--socket none --token-file "$dir/clients.token" --audit "$dir/audit.jsonl"
SPID=$AL_SERVE_PID
PORT=$SERVE_PORT
base=$AL_SERVE_URL


al_api_as "$alice" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"limits":{"disk_mb":256}}'
al_assert_eq "$CODE" 201 "create a sandbox: $BODY"
sb=$(al_jget 'd["sandbox_id"]')
al_api_as "$alice" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
al_assert_eq "$CODE" 201 "create a second sandbox: $BODY"
other=$(al_jget 'd["sandbox_id"]')

# A WebSocket echo server of the standard library only (the handshake by hand, RFC 6455).
cat >"$dir/ws.py" <<'EOF'
import asyncio, base64, hashlib
G = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
async def handle(r, w):
    head = await r.readuntil(b"\r\n\r\n")
    print("ws request", head.split(b"\r\n")[0].decode(), flush=True)
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    acc = base64.b64encode(hashlib.sha1(key + G).digest())
    w.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + acc + b"\r\n\r\n")
    while True:
        h = await r.readexactly(2)
        op, n = h[0] & 15, h[1] & 127
        if n == 126:
            n = int.from_bytes(await r.readexactly(2), "big")
        mask = await r.readexactly(4) if h[1] & 128 else b"\0\0\0\0"
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(await r.readexactly(n)))
        if op == 8:
            break
        out = b"echo:" + data
        w.write(bytes([0x81, len(out)]) + out)
        await w.drain()
    w.close()
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", 8001)
    async with srv:
        await srv.serve_forever()
asyncio.run(main())
EOF
al_api_as "$alice" PUT "/v1/sandboxes/$sb/files/ws.py" --data-binary "@$dir/ws.py"
al_assert_eq "$CODE" 200 "PUT ws.py: $BODY"
al_api_as "$alice" PUT "/v1/sandboxes/$sb/files/site/index.html" --data-binary "hello $m"
al_assert_eq "$CODE" 200 "PUT index.html: $BODY"

# The servers live while this streaming exec does (its output is the servers' request log).
code="yes airlock-$m | head -c 52428800 > site/big.bin; cd site; (timeout 50 python3 -u ../ws.py &);"
code+=" timeout 50 python3 -u -m http.server 8000 --bind 127.0.0.1"
curl -q -s -N -m 60 -H "Authorization: Bearer $alice" -H 'Content-Type: application/json' -X POST \
	"$base/v1/sandboxes/$sb/exec" -d "$("$AL_PY" -c 'import json,sys; print(json.dumps({"language":"shell","code":sys.argv[1]}))' "$code")" \
	>"$dir/exec.ndjson" 2>&1 &
EXEC_PID=$!
AL_BG_PIDS+=("$EXEC_PID")
for _ in $(seq 150); do
	al_api_as "$alice" GET "/v1/sandboxes/$sb/ports"
	case $BODY in *'"port":8000'*'"port":8001'*) break ;; esac
	sleep 0.1
done
al_assert_contains "$BODY" '"port":8000' "the ports list shows the http.server"
al_assert_contains "$BODY" '"address":"127.0.0.1"' "the ports list names the address"
al_assert_contains "$BODY" '"port":8001' "the ports list shows the WebSocket server"
al_api_as "$bob" GET "/v1/sandboxes/$sb/ports"
al_assert_eq "$CODE" 404 "another principal lists nothing: $BODY"

# served: the log of the sandbox's server so far (its requests, one line each).
served() { grep -c '"GET \|"POST ' "$dir/exec.ndjson" || true; }

# ---- HTTP through serve ------------------------------------------------------------------------
al_api_as "$alice" GET "/v1/sandboxes/$sb/ports/8000/index.html"
al_assert_eq "$CODE" 200 "GET a file through the proxy"
al_assert_eq "$BODY" "hello $m" "the file's content"
hdrs=$(curl -q -s -D - -o /dev/null -H "Authorization: Bearer $alice" "$base/v1/sandboxes/$sb/ports/8000/index.html")
al_assert_contains "$hdrs" "Content-Security-Policy: sandbox" "a proxied page runs in an opaque origin"
al_api_as "$alice" GET "/v1/sandboxes/$sb/ports/8000"
al_assert_eq "$CODE" 308 "the port's root without its slash is redirected"
al_api_as "$alice" POST "/v1/sandboxes/$sb/ports/8000/upload" --data-binary "posted $m"
al_assert_eq "$CODE" 501 "a POST reaches the server (http.server answers 501 Unsupported method)"
for _ in $(seq 50); do
	grep -q 'POST /upload HTTP/1.1' "$dir/exec.ndjson" && break
	sleep 0.1
done
grep -q 'POST /upload HTTP/1.1' "$dir/exec.ndjson" || al_fail "the sandbox's server saw no POST /upload"

# 50 MiB streamed: the server's peak RSS grows by far less than the answer.
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$SPID/status"; }
before=$(hwm)
sum=$(curl -q -s -m 60 -H "Authorization: Bearer $alice" "$base/v1/sandboxes/$sb/ports/8000/big.bin" | sha256sum)
want=$(head -c 52428800 < <(yes "airlock-$m") | sha256sum) # no pipe into head: yes's SIGPIPE would fail it
al_assert_eq "$sum" "$want" "a 50 MiB answer arrives whole"
after=$(hwm)
al_log "serve's peak RSS: ${before} KiB before the 50 MiB answer, ${after} KiB after"
[ $((after - before)) -lt 16384 ] || al_fail "serve's peak RSS grew by $((after - before)) KiB for a 50 MiB answer"

# ---- who may --------------------------------------------------------------------------------
seen=$(served)
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html"
al_assert_eq "$CODE" 401 "no credential"
al_api_as "$bob" GET "/v1/sandboxes/$sb/ports/8000/index.html"
al_assert_eq "$CODE" 404 "another principal: $BODY"
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html" -H "X-Airlock-Port-Token: not-a-token-$m"
al_assert_eq "$CODE" 401 "a wrong port token: $BODY"
al_api_as "$alice" POST "/v1/sandboxes/$other/ports/8000/token" -d '{}'
al_assert_eq "$CODE" 201 "a token of the other sandbox: $BODY"
othertok=$(al_jget 'd["token"]')
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html" -H "X-Airlock-Port-Token: $othertok"
al_assert_eq "$CODE" 401 "another sandbox's token"
al_api_as "$alice" POST "/v1/sandboxes/$sb/ports/8001/token" -d '{}'
al_assert_eq "$CODE" 201 "a token for port 8001: $BODY"
wstok=$(al_jget 'd["token"]')
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html" -H "X-Airlock-Port-Token: $wstok"
al_assert_eq "$CODE" 401 "another port's token"
al_api_as "$bob" POST "/v1/sandboxes/$sb/ports/8000/token" -d '{}'
al_assert_eq "$CODE" 404 "another principal gets no token"
al_api_as "" POST "/v1/sandboxes/$sb/ports/8000/token" -H "X-Airlock-Port-Token: $wstok" -d '{}'
al_assert_eq "$CODE" 401 "a port token makes no token"
sleep 0.3
al_assert_eq "$(served)" "$seen" "the sandbox's server saw none of the refused requests"

al_api_as "$alice" POST "/v1/sandboxes/$sb/ports/8000/token" -d '{"ttl_seconds":600}'
al_assert_eq "$CODE" 201 "a token for port 8000: $BODY"
tok=$(al_jget 'd["token"]')
al_assert_contains "$(al_jget 'd["expires_at"]')" "T" "the token says when it ends"
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html" -H "X-Airlock-Port-Token: $tok"
al_assert_eq "$BODY" "hello $m" "the right token in the header"
hdrs=$(curl -q -s -D - -o /dev/null "$base/v1/sandboxes/$sb/ports/8000/index.html?airlock_token=$tok")
al_assert_contains "$hdrs" "Set-Cookie: airlock_port_token=$tok; Path=/v1/sandboxes/$sb/ports/8000; HttpOnly" \
	"the token in the URL comes back as a cookie of the port's path"
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html" -b "airlock_port_token=$tok"
al_assert_eq "$BODY" "hello $m" "the cookie opens the port"
al_assert_not_contains "$(cat "$dir/exec.ndjson")" "$tok" "the sandbox's server never saw the token"

# ---- bad input ------------------------------------------------------------------------------
for p in 0 65536 -1 abc 8e3; do
	al_api_as "$alice" GET "/v1/sandboxes/$sb/ports/$p/"
	al_assert_eq "$CODE" 400 "port $p: $BODY"
	al_assert_contains "$BODY" "1 to 65535" "port $p names the range"
done
al_api_as "$alice" GET "/v1/sandboxes/$sb/ports/8002/"
al_assert_eq "$CODE" 502 "nothing listening: $BODY"
al_assert_contains "$BODY" "nothing listens on port 8002" "the 502 says why"
al_api_as "$alice" POST "/v1/sandboxes/$sb/ports/8000/token" -d '{"ttl_seconds":-5}'
al_assert_eq "$CODE" 400 "a negative lifetime: $BODY"

# ---- WebSocket ------------------------------------------------------------------------------
cat >"$dir/ws.mjs" <<'EOF'
// node --experimental-websocket ws.mjs URL TOKEN MODE: MODE "echo" sends one frame and prints the
// answer; "hold" prints "open" and waits for the close (the sandbox destroyed), printing "closed".
const [url, token, mode] = process.argv.slice(2);
const ws = new WebSocket(url + "?airlock_token=" + token);
const timer = setTimeout(() => { console.log("timeout"); process.exit(2); }, 20000);
ws.onopen = () => { if (mode === "echo") ws.send("ping"); else console.log("open"); };
ws.onmessage = (e) => { console.log(String(e.data)); if (mode === "echo") { clearTimeout(timer); ws.close(); } };
ws.onclose = () => { if (mode === "hold") { console.log("closed"); clearTimeout(timer); } };
ws.onerror = (e) => { console.log("error " + (e.message || "")); process.exit(1); };
EOF
wsurl="ws://127.0.0.1:$PORT/v1/sandboxes/$sb/ports/8001/"
out=$(node --no-warnings --experimental-websocket "$dir/ws.mjs" "$wsurl" "$wstok" echo 2>&1) || true
al_assert_eq "$out" "echo:ping" "a WebSocket frame through serve and back"
out=$(node --no-warnings --experimental-websocket "$dir/ws.mjs" "$wsurl" "$tok" echo 2>&1) || true
al_assert_contains "$out" "error" "port 8000's token opens no WebSocket on 8001"

node --no-warnings --experimental-websocket "$dir/ws.mjs" "$wsurl" "$wstok" hold >"$dir/hold.out" 2>&1 &
HOLD_PID=$!
AL_BG_PIDS+=("$HOLD_PID")
for _ in $(seq 100); do
	grep -q open "$dir/hold.out" && break
	sleep 0.1
done
al_assert_contains "$(cat "$dir/hold.out")" open "a WebSocket held open"
al_api_as "$alice" DELETE "/v1/sandboxes/$sb"
al_assert_eq "$CODE" 200 "destroy the sandbox: $BODY"
for _ in $(seq 100); do
	grep -q closed "$dir/hold.out" && break
	sleep 0.1
done
al_assert_contains "$(cat "$dir/hold.out")" closed "the proxied WebSocket closed with its sandbox"
wait "$HOLD_PID" || true
al_api_as "" GET "/v1/sandboxes/$sb/ports/8000/index.html" -H "X-Airlock-Port-Token: $tok"
al_assert_eq "$CODE" 401 "the token died with its sandbox"
wait "$EXEC_PID" || true

kill -TERM "$SPID"
wait "$SPID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_pass "a sandbox's ports through serve"
