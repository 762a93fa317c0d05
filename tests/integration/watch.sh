#!/usr/bin/env bash
# watch.sh — directory watch (issue 31) over airlock serve's JSON API with curl: events of files made
# by a background process and by the files API, recursive or not; a symlink the sandbox plants to a
# host directory is never followed; a flood of 20000 files keeps the stream and serve's memory
# bounded; the watch ends at once when its sandbox is destroyed, saying why; a client that leaves
# frees everything (serve's descriptors counted); the per-sandbox limit (429), other principals (404)
# and bad input (4xx) refused before any stream begins.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
hostdir=$(al_tmpdir 0777) # outside every sandbox: what a planted link points at
{
	serve_config_head
	cat <<'EOF'
server:
  max_sandboxes: 8
  idle_ttl: 10m
  pool: {}
EOF
} >"$confdir/w.yaml"
chmod 0644 "$confdir/w.yaml"
al_serve_tokens "$dir/serve.token"
bob=$AL_BOB
al_serve_start "$dir" --config "$confdir/w.yaml" --audit "$dir/audit.jsonl"
api=$AL_SERVE_URL/v1

mk() { curl -sS -XPOST "$api/sandboxes" -d '{}' | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])'; }
code() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
# inotify: serve's inotify descriptors (one per live watch; its other descriptors come and go with
# sandboxes and spares).
inotify() { find "/proc/$AL_SERVE_PID/fd" -mindepth 1 -maxdepth 1 -lname 'anon_inode:inotify' | wc -l; }
# watch NAME URL: a streaming client in the background (its pid in WPID), once its watch is armed
# (the 200 came: the manager added the watch before it).
watch() {
	curl -sS -N -D "$dir/$1.h" "${@:3}" "$2" >"$dir/$1.ndjson" 2>"$dir/$1.err" &
	WPID=$!
	for _ in $(seq 100); do
		grep -q '^HTTP/1.1 200' "$dir/$1.h" 2>/dev/null && return
		sleep 0.05
	done
	al_fail "watch $1 did not start: $(cat "$dir/$1.h" "$dir/$1.ndjson" "$dir/$1.err" 2>/dev/null)"
}
# events NAME: one "type path [from>to]" per event line of the stream NAME.
events() {
	"$AL_PY" - "$dir/$1.ndjson" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "type" in d:
        extra = " %s>%s" % (d.get("from", ""), d.get("to", "")) if d["type"] == "rename" else ""
        print("%s %s%s%s" % (d["type"], d["path"], "/" if d.get("is_dir") else "", extra))
EOF
}
# wait_running SANDBOX PID: until the background process ended (10 s at most).
wait_ended() {
	for _ in $(seq 100); do
		curl -sS "$api/sandboxes/$1/processes/$2" | grep -q '"running":false' && return
		sleep 0.1
	done
	al_fail "process $2 did not end"
}

sb=$(mk)
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/dirs/w")" 201 "w made"
curl -sS -XPOST "$api/sandboxes/$sb/exec" -d "{\"command\":\"ln -s $hostdir w/link\"}" >/dev/null
watch flat "$api/sandboxes/$sb/watch/w"
flat=$WPID
watch rec "$api/sandboxes/$sb/watch/w?recursive=true"
rec=$WPID
watch root "$api/sandboxes/$sb/watch"
root=$WPID

# Files made by a background process, and by the files API.
# shellcheck disable=SC2016 # the sandbox's shell expands it
r=$(curl -sS -XPOST "$api/sandboxes/$sb/exec" -d '{"command":"for i in 1 2 3; do echo $i > w/f$i; sleep 0.2; done; mkdir w/sub; echo x > w/sub/g; mv w/f1 w/f9; chmod 600 w/f2; rm w/f3","background":true}' | tail -n1)
pid=$(al_json_get "$r" result.process.pid)
wait_ended "$sb" "$pid"
al_assert_eq "$(code -XPUT "$api/sandboxes/$sb/files/w/api.txt" --data-binary hello)" 200 "a file put"
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb/files/w/api.txt")" 200 "... and removed"
al_assert_eq "$(code -XPUT "$api/sandboxes/$sb/files/top.txt" --data-binary top)" 200 "a file put at the top"
echo leak >"$hostdir/leak.txt" # where w/link points: never reported
mkdir "$hostdir/leakdir"
sleep 0.5
kill "$flat" "$rec" "$root"
wait "$flat" "$rec" "$root" 2>/dev/null || true # the clients leave
ev=$(events flat)
for want in "create w/f1" "write w/f1" "create w/f2" "write w/f3" "create w/sub/" "rename w/f9 w/f1>w/f9" \
	"chmod w/f2" "remove w/f3" "write w/api.txt" "remove w/api.txt"; do
	al_assert_contains "$ev" "$want" "the watch of w saw '$want'"
done
al_assert_not_contains "$ev" "w/sub/g" "a watch that is not recursive stays out of w/sub"
al_assert_not_contains "$ev" ".airlock-" "the files API's own temporary names are not shown"
al_assert_eq "$(printf '%s\n' "$ev" | grep -c '^write w/f1$')" 1 "the writes of one echo are one write event"
rev=$(events rec)
al_assert_contains "$rev" "create w/sub/g" "the recursive watch follows the new w/sub"
al_assert_contains "$rev" "rename w/f9 w/f1>w/f9" "... and sees the rest"
al_assert_contains "$(events root)" "write top.txt" "the workspace's own watch sees its entries... "
al_assert_not_contains "$(events root)" "w/f2" "... but not inside w"
for e in flat rec root; do
	al_assert_not_contains "$(cat "$dir/$e.ndjson")" "leak" "$e: nothing from the host directory w/link points at"
done
al_pass "events of a background process and the files API, recursive or not, links never followed"

# A watch through the planted link, or of it, is refused; the host directory is never watched.
al_assert_eq "$(code "$api/sandboxes/$sb/watch/w/link")" 400 "a watch of a symlink to the host"
al_assert_eq "$(code "$api/sandboxes/$sb/watch/w/link/leakdir")" 400 "a watch through it"
watch rec2 "$api/sandboxes/$sb/watch?recursive=true"
rec2=$WPID
echo again >"$hostdir/leakdir/x"
curl -sS -XPOST "$api/sandboxes/$sb/exec" -d '{"command":"touch w/seen"}' >/dev/null
sleep 0.3
kill "$rec2"
wait "$rec2" 2>/dev/null || true
al_assert_contains "$(events rec2)" "w/seen" "a recursive watch started later sees the sandbox's files"
al_assert_not_contains "$(cat "$dir/rec2.ndjson")" "leakdir" "... and not the host's"
al_pass "a symlink to a host directory is never followed"

# The per-sandbox limit: 16 watches, the 17th is 429; other principals get 404; bad input 4xx.
many=()
for i in $(seq 16); do
	watch "lim$i" "$api/sandboxes/$sb/watch"
	many+=("$WPID")
done
al_assert_eq "$(code "$api/sandboxes/$sb/watch")" 429 "a 17th watch of one sandbox"
al_assert_eq "$(inotify)" 16 "serve holds one inotify descriptor per watch"
kill "${many[@]}"
wait "${many[@]}" 2>/dev/null || true
# serve lets a watch go when it sees its client's connection closed: not at once on a busy host, and
# until then the sandbox's 16 are taken (the next watches below would be 429).
for _ in $(seq 100); do
	[ "$(inotify)" = 0 ] && break
	sleep 0.1
done
al_assert_eq "$(inotify)" 0 "serve lets go of the watches whose clients left"
al_assert_eq "$(curl -q -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $bob" "$api/sandboxes/$sb/watch")" 404 \
	"another principal's sandbox"
al_assert_eq "$(code "$api/sandboxes/nosuch/watch")" 404 "an unknown sandbox"
al_assert_eq "$(code "$api/sandboxes/$sb/watch/no/such/dir")" 404 "a missing directory"
al_assert_eq "$(code "$api/sandboxes/$sb/watch/w/f9")" 400 "a file, not a directory"
al_assert_eq "$(code --path-as-is "$api/sandboxes/$sb/watch/../../etc")" 400 "a path that leaves the workspace"
al_assert_eq "$(code "$api/sandboxes/$sb/watch/w%2F..%2F..")" 400 "... percent-encoded"
al_assert_eq "$(code "$api/sandboxes/$sb/watch?recursive=yes")" 400 "recursive=yes"
msg=$(curl -sS "$api/sandboxes/$sb/watch/w/f9")
al_assert_contains "$msg" "not a directory: w/f9" "the refusal names the path"
for _ in $(seq 20); do
	[ "$(inotify)" = 0 ] && break
	sleep 0.1
done
al_assert_eq "$(inotify)" 0 "serve's inotify descriptors once every client left"
al_pass "limit, owner only, bad input; a client that leaves frees everything"

# MCP: code_watch watches for a while and answers with the events.
# Files keep appearing for 8 s, so some appear during the wait however long the session's set-up takes.
curl -sS -XPOST "$api/sandboxes/$sb/exec" -d '{"command":"for i in $(seq 40); do touch w/mcp-made-$i; sleep 0.2; done","background":true}' >/dev/null
PYTHONPATH="$AL_SRC/tests/mcp" "$AL_PY" - "$AL_SERVE_URL" "$sb" <<'PY' >"$dir/mcp.out" || al_fail "code_watch over MCP: $(cat "$dir/mcp.out")"
import os, sys
from client import Http  # tests/mcp/client.py: MCP over streamable HTTP
h, sb = Http(sys.argv[1], os.environ["AL_TOKEN"]), sys.argv[2]
h.initialize("t")
def call(i, args):
    return h.mcp({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "code_watch", "arguments": args}})["result"]
r = call(2, {"sandbox_id": sb, "path": "w", "wait": 2})
sc = r["structuredContent"]
assert not r["isError"] and sc["ended"] == "timeout", r
assert any(e["type"] == "create" and e["path"].startswith("w/mcp-made-") and not e["is_dir"] for e in sc["events"]), r
r = call(3, {"sandbox_id": sb, "path": "../x", "wait": 1})
assert r["isError"] and "escapes the workspace" in r["content"][0]["text"], r
print("ok")
PY
al_assert_eq "$(cat "$dir/mcp.out")" ok "code_watch over MCP: the events of its wait"
al_pass "code_watch over MCP"

# A flood: 20000 files made fast; the stream stays bounded, serve's memory too, and the watch ends
# within a second of its sandbox's destroy, its last line saying why.
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/dirs/flood")" 201 "flood made"
rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$AL_SERVE_PID/status")
watch flood "$api/sandboxes/$sb/watch/flood"
fl=$WPID
r=$(curl -sS -XPOST "$api/sandboxes/$sb/exec" -d '{"language":"python","code":"for i in range(20000):\n    open(\"flood/f%d\" % i, \"w\").write(\"x\")\n","fresh":true,"timeout":30}' | tail -n1)
al_assert_eq "$(al_json_get "$r" result.exit_code)" 0 "20000 files made"
sleep 0.5
rss1=$(awk '/^VmRSS/ {print $2}' "/proc/$AL_SERVE_PID/status")
# Under ASan the allocator keeps freed memory in quarantine (256 MiB): only a bound past that tells.
bound=65536
[ -n "${AL_SANITIZED:-}" ] && bound=524288
[ $((rss1 - rss0)) -lt "$bound" ] || al_fail "serve's RSS grew by $((rss1 - rss0)) KiB during the flood"
t0=$(date +%s%N)
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb")" 200 "the sandbox destroyed"
wait "$fl" || al_fail "the watch's client failed: $(cat "$dir/flood.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 1500 ] || al_fail "the watch ended ${ms} ms after its sandbox's destroy"
last=$(tail -n1 "$dir/flood.ndjson")
al_assert_eq "$(al_json_get "$last" result.ended)" destroyed "the last line says the sandbox went"
al_assert_contains "$(al_json_get "$last" result.message)" "destroyed" "... in words"
n=$(($(wc -l <"$dir/flood.ndjson") - 1))
[ "$n" -le 40100 ] || al_fail "$n events for 20000 files: writes not coalesced"
"$AL_PY" - "$last" <<'EOF' || al_fail "the flood was neither coalesced nor reported as an overflow: $last"
import json, sys
d = json.loads(sys.argv[1])
r = d["result"]
sys.exit(0 if r["coalesced"] > 0 or r["overflows"] > 0 or d.get("stream_dropped_events", 0) > 0 else 1)
EOF
al_log "flood: $n events, rss +$((rss1 - rss0)) KiB, ended ${ms} ms after the destroy: $last"
al_pass "a flood stays bounded; the watch ends with its sandbox"
