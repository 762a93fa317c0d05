#!/usr/bin/env bash
# audit_closed.sh — the audit log fails closed (issue 16): with its log on a full 64 KiB tmpfs (in a
# private mount namespace around the server), airlock serve refuses a code_execute with a 503 that
# names the audit log, the code never runs (the file it would create does not exist afterwards),
# /v1/health says degraded and the metric counts it; freed space, the next call runs and is
# recorded, whole; MCP over HTTP is refused the same way. A torn tail left by hand is repaired on
# start (terminated and marked), and a server killed with SIGKILL during a long exec leaves that
# exec's start record. airlock mcp over stdio refuses the same way.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v unshare >/dev/null || al_skip "unshare is missing"
# The harness runs every mode as root (user mode drops to an unprivileged uid for airlock only):
# root mounts the small tmpfs, the server runs as the mode's user.
[ "$(id -u)" = 0 ] || al_fail "the full-disk namespace needs root to mount its tmpfs"
al_serve_bin
dir=$(al_tmpdir 0777)
m=$(al_marker)
confdir=$(al_tmpdir 0755)
printf 'version: 1\napproval:\n  auto_approve_up_to: HIGH\n' >"$confdir/auto.yaml"
chmod 0644 "$confdir/auto.yaml"
fs="$dir/fs" # the small filesystem's mount point, seen only by the server's mount namespace
mkdir -m 0777 "$fs"

# small.sh CMD...: CMD in a private mount namespace with a 64 KiB tmpfs on $fs; it execs all the
# way down, so the pid that started it is the server's, and /proc/PID/root$fs is that tmpfs.
cat >"$dir/small.sh" <<'SH'
fs=$1
shift
exec unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs -o size=64k,mode=0777 tmpfs "$0" && exec "$@"' \
	"$fs" "$@"
SH

# start_server NAME LOG [WRAPPER...]: airlock serve with its audit log at LOG; sets PORT, AL_SERVE_URL
# and SPID.
start_server() {
	local name=$1 log=$2
	shift 2
	al_serve_launch "$dir/$name" "airlock serve ($name)" "$@" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve \
		--config "$confdir/auto.yaml" --socket none --token-file "$dir/token" --audit "$log"
	SPID=$AL_SERVE_PID
	PORT=$SERVE_PORT
	al_serve_auth "$dir/token"
}

stop_server() {
	kill -TERM "$SPID" 2>/dev/null || true
	wait "$SPID" 2>/dev/null || true
}


create() {
	al_api POST /v1/sandboxes -d '{}'
	al_assert_eq "$CODE" 201 "create a sandbox: $BODY"
	SB=$(al_jget 'd["sandbox_id"]')
}

# run CODE: a shell exec in $SB; CODE gets the HTTP status, OUT the program's stdout.
run() {
	local req
	req=$("$AL_PY" -c 'import json,sys; print(json.dumps({"language":"shell","code":sys.argv[1]}))' "$1")
	al_api POST "/v1/sandboxes/$SB/exec" -H 'Content-Type: application/json' -d "$req"
	# NDJSON: the output streamed as {"stream":"stdout","data":...} lines, then the result.
	OUT=$(printf '%s\n' "$BODY" | "$AL_PY" -c 'import json,sys
out = [json.loads(l) for l in sys.stdin if l.strip()]
print("".join(o["data"] for o in out if o.get("stream") == "stdout"), end="")' 2>/dev/null) || OUT=
}

metric() { curl -s -m 10 "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }

# check_log FILE: every line of the log is empty or a whole JSON object (nothing torn).
check_log() {
	"$AL_PY" -c 'import json,sys
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"\n"), "the log ends in the middle of a line"
for i, l in enumerate(data.split(b"\n")[:-1]):
    assert not l or isinstance(json.loads(l), dict), "line %d is torn: %r" % (i + 1, l[:80])' "$1" ||
		al_fail "the audit log $1 holds a torn line"
}

# ---- a full disk: the call is refused, its code never runs ----------------------------------------

log="$fs/audit.jsonl"
start_server full "$log" sh "$dir/small.sh" "$fs"
L="/proc/$SPID/root$log" # the log, as seen from the server's namespace
create
run "echo before-$m"
al_assert_eq "$CODE/$OUT" "200/before-$m" "an exec while the log has room"
al_assert_eq "$(grep -c '"event":"start"' "$L")" 2 "start records: the create and the exec"

# Fill the tmpfs, then the log's last page up to 40 bytes with empty lines (readers ignore them):
# the next record gets a short write, which must leave nothing behind.
dd if=/dev/zero of="/proc/$SPID/root$fs/fill" bs=4k 2>/dev/null || true
size=$(stat -c %s "$L")
pad=$(((4096 - size % 4096) % 4096 - 40))
[ "$pad" -le 0 ] || head -c "$pad" /dev/zero | tr '\0' '\n' >>"$L"
before=$(stat -c %s "$L")
run "echo refused > refused-$m"
al_assert_eq "$CODE" 503 "an exec the audit log cannot record: $BODY"
al_assert_contains "$BODY" "audit log" "the refusal names the audit log"
al_assert_eq "$(stat -c %s "$L")" "$before" "the refused record's bytes were cut off again"
check_log "$L"
al_assert_not_contains "$(cat "$L")" "refused-$m" "no record of a call that did not run"
# The same over MCP on HTTP (/mcp): a tool error naming the audit log.
cat >"$dir/mcphttp.py" <<'PY'
import json, os, sys, urllib.request
base, sb, code = "http://127.0.0.1:%s/mcp" % sys.argv[1], sys.argv[2], sys.argv[3]
hdr = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
       "Authorization": "Bearer " + os.environ["AL_TOKEN"]}
def post(msg):
    with urllib.request.urlopen(urllib.request.Request(base, json.dumps(msg).encode(), hdr), timeout=60) as r:
        hdr.setdefault("Mcp-Session-Id", r.headers.get("Mcp-Session-Id"))
        body = r.read().decode()
    return [json.loads(l[5:]) for l in body.splitlines() if l.startswith("data:")] or [json.loads(body or "null")]
post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
      "capabilities": {}, "clientInfo": {"name": "audit-closed", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"})
args = {"sandbox_id": sb, "language": "shell", "code": code}
print(json.dumps(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "code_execute", "arguments": args}})[-1]))
PY
r=$("$AL_PY" "$dir/mcphttp.py" "$PORT" "$SB" "echo refused > refused-mcp-$m") || al_fail "MCP over HTTP: $r"
al_assert_contains "$r" '"isError": true' "MCP over HTTP: the call the audit log cannot record is an error"
al_assert_contains "$r" "audit log" "MCP over HTTP: the error names the audit log"
al_api GET /v1/health
al_assert_eq "$CODE" 503 "health while the audit log fails: $BODY"
al_assert_contains "$BODY" '"status":"degraded"' "health says degraded"
al_assert_contains "$BODY" "audit log" "health names the audit log"
failures=$(metric airlock_audit_failures_total)
[ "${failures:-0}" -ge 1 ] || al_fail "airlock_audit_failures_total is '$failures' after a refused call"
al_assert_eq "$(metric airlock_audit_degraded)" 1 "airlock_audit_degraded while failing"

# Room again: the next call runs and is recorded, and the refused code had never run.
rm -f "/proc/$SPID/root$fs/fill"
run "touch ran-$m; ls"
al_assert_eq "$CODE" 200 "an exec once the disk has room: $BODY"
al_assert_contains "$OUT" "ran-$m" "the code of the call after the refusal ran (it can be seen)"
al_assert_not_contains "$OUT" "refused-$m" "the refused code never ran"
al_assert_not_contains "$OUT" "refused-mcp-$m" "the code refused over MCP never ran"
al_api GET /v1/health
al_assert_eq "$CODE" 200 "health once the log is written again: $BODY"
[ "$(metric airlock_audit_failures_total)" -ge "$failures" ] || al_fail "the failure count went down"
al_assert_eq "$(metric airlock_audit_degraded)" 0 "airlock_audit_degraded once records are written again"
check_log "$L"
"$AL_PY" -c 'import json,sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ran = [r for r in recs if "ran-" + sys.argv[2] in json.dumps(r)]
assert [r["event"] for r in ran] == ["start", "end"], [r["event"] for r in ran]
assert ran[0]["call_id"] == ran[1]["call_id"], ran
assert ran[0]["client"]["transport"] == "http" and ran[0]["client"]["principal"], ran[0]["client"]
assert ran[1]["result"]["status"] == "ok", ran[1]["result"]' "$L" "$m" ||
	al_fail "the call after the refusal: a start and an end record with one call id"
stop_server

# ---- a torn tail, left by a crash mid-write, is repaired on start ---------------------------------

tlog="$dir/torn.jsonl"
rec='{"time":"2025-01-31T12:00:00.000Z","event":"call","client":{"transport":"http","peer":null,"principal":null},"sandbox":null,"tool":"code_list_files","params":{},"risk":null,"approval":{"decision":"none","by":null,"approver":null},"result":{"status":"invalid","duration_ms":0},"resources":null,"proxy":null}'
half='{"time":"2025-01-31T12:00:01.000Z","event":"start","call_id":"x-1","client":{"trans'
printf '%s\n%s\n%s' "$rec" "$rec" "$half" >"$tlog"
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$tlog"
chmod 0600 "$tlog"
start_server torn "$tlog"
create
stop_server
al_run audit tail -n 100 "$tlog"
al_assert_rc 0
al_assert_contains "$AL_ERR" "skipped 1 torn or invalid line" "tail skips the torn line alone"
al_assert_eq "$(printf '%s\n' "$AL_OUT" | wc -l)" 5 "tail: two records, the repair mark, the create's start and end"
"$AL_PY" -c 'import json,sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[2] == sys.argv[2], "the torn bytes are kept on a line of their own: %r" % lines[2]
mark = json.loads(lines[3])
assert mark["event"] == "repair" and mark["repair"] == {"offset": 2 * (len(sys.argv[3]) + 1), "bytes": len(sys.argv[2]), "kind": "unterminated"}, mark
nxt = json.loads(lines[4])
assert nxt["event"] == "start" and nxt["tool"] == "code_create_sandbox", nxt
assert all(isinstance(json.loads(l), dict) for i, l in enumerate(lines) if l and i != 2), "another torn line"' \
	"$tlog" "$half" "$rec" ||
	al_fail "the torn tail was not repaired and marked, or the next record is not on its own line"

# ---- SIGKILL during a long exec leaves its start record --------------------------------------------

start_server killed "$tlog"
create
# The body from a file: the marker must be in no command line but the sandbox's shell's.
printf '{"language":"shell","code":"sh -c '"'"'sleep 30; :'"'"' %s-long"}' "$m" >"$dir/long.json"
curl -s -m 60 -X POST "http://127.0.0.1:$PORT/v1/sandboxes/$SB/exec" -H 'Content-Type: application/json' \
	-d @"$dir/long.json" >/dev/null 2>&1 &
AL_BG_PIDS+=($!)
# The exec is in flight: its shell (named by the marker) runs in the sandbox.
for _ in $(seq 100); do
	[ -n "$(al_marker_pids "$m-long")" ] && break
	sleep 0.1
done
[ -n "$(al_marker_pids "$m-long")" ] || al_fail "the long exec never started"
kill -KILL "$SPID"
wait "$SPID" 2>/dev/null || true
"$AL_PY" -c 'import json,sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip() and l.startswith("{") and l.endswith("}\n")]
long = [r for r in recs if sys.argv[2] in json.dumps(r)]
assert [r["event"] for r in long] == ["start"], [r["event"] for r in long]
assert long[0]["tool"] == "code_execute" and long[0]["call_id"], long[0]' "$tlog" "$m-long" ||
	al_fail "a server killed during an exec: the start record, and no end"
al_wait_marker_gone "$m-long" 10 || al_fail "the exec outlived its SIGKILLed server"

# ---- airlock mcp over stdio: refused the same way -------------------------------------------------

cp "$AL_SRC/tests/mcp/client.py" "$dir/"
chmod 0644 "$dir/client.py"
cat >"$dir/stdio.py" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[0]))
from client import Client
fs, m, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
c = Client(cmd)
c.initialize()
root = "/proc/%d/root%s" % (c.p.pid, fs)
def run(code):
    r = c.call("code_execute", {"sandbox_id": sb, "language": "shell", "code": code})["result"]
    return r.get("isError"), json.dumps(r)
sb = c.call("code_create_sandbox", {"language": "shell"})["result"]["structuredContent"]["sandbox_id"]
try:
    with open(root + "/fill", "wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()
except OSError:
    pass
with open(root + "/audit.jsonl", "ab") as f:  # the log's last page, filled with empty lines
    try:
        f.write(b"\n" * ((4096 - os.path.getsize(root + "/audit.jsonl") % 4096) % 4096))
    except OSError:
        pass
err, text = run("echo refused > refused-" + m)
assert err and "audit log" in text, "stdio: refused with an error naming the audit log: " + text
os.unlink(root + "/fill")
err, text = run("touch ran-" + m + "; ls")
assert not err and "ran-" + m in text and "refused-" + m not in text, "stdio: the refused code never ran: " + text
recs = [json.loads(l) for l in open(root + "/audit.jsonl") if l.strip()]
assert not [r for r in recs if "refused-" + m in json.dumps(r)], "stdio: a record of the refused call"
assert [r["event"] for r in recs if "ran-" + m in json.dumps(r)] == ["start", "end"], "stdio: start and end"
c.close()
PY
AL_MCP_PIDS="$dir/pids" "$AL_PY" "$dir/stdio.py" "$fs" "$m" sh "$dir/small.sh" "$fs" "${AL_SETPRIV[@]}" \
	"$AL_AIRLOCK_BIN" mcp --config "$confdir/auto.yaml" --audit "$fs/audit.jsonl" ||
	al_fail "airlock mcp over stdio with a full audit disk"
al_pass "the audit log fails closed"
