#!/usr/bin/env bash
# serve_fresh.sh — the service on a fresh machine, under a hardened umask, against hostile
# workspaces (issue 15): airlock serve and airlock mcp start in a private mount namespace whose
# /var/log, /var/lib and /run are empty (and, unprivileged, with an empty $HOME), under umask 077,
# without --audit; then, judged from outside: the audit log and its directory were made with safe
# modes; files written over HTTP and MCP are readable by the code and node starts; ps and
# /proc/self work in a held exec and show only its processes; FIFOs and symlinks planted in
# workspaces never block the server (8 sandboxes of them, destroy and SIGTERM still finish), and
# a GET of a socket there is refused with 400; 16 parallel reads of a 16 MiB file leave the
# server's peak RSS far below 16 x 16 MiB; bad URLs and numbers get 400 and a refused path creates nothing; a streamed exec cut by SIGTERM ends with a
# line saying so; `airlock audit tail` refuses a FIFO at once.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v unshare >/dev/null || al_skip "unshare is missing"
[ "$(id -u)" = 0 ] || al_skip "the fresh-machine namespace needs root to mount its tmpfs"
al_serve_bin
dir=$(al_tmpdir 0777)
m=$(al_marker)
home="$dir/home"
mkdir -m 0700 "$home"
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$home"
confdir=$(al_tmpdir 0755) # a config's directory may be writable by its owner only
printf 'version: 1\napproval:\n  auto_approve_up_to: HIGH\n' >"$confdir/auto.yaml"
chmod 0644 "$confdir/auto.yaml"
cp "$AL_SRC/tests/mcp/client.py" "$dir/"
chmod 0644 "$dir/client.py"

# fresh.sh HOME CMD...: CMD in a private mount namespace with empty /var/log, /var/lib and /run,
# under umask 077, with nothing of our environment but PATH and an empty HOME. It execs all the
# way down: the pid that started it is the server's.
cat >"$dir/fresh.sh" <<'SH'
umask 077
home=$1
shift
exec unshare -m sh -c 'mount --make-rprivate / && for d in /var/log /var/lib /run; do
	mount -t tmpfs -o mode=0755 tmpfs "$d" || exit 1; done && exec "$@"' fresh \
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" "$@"
SH
fresh=(sh "$dir/fresh.sh" "$home" "${AL_SETPRIV[@]}")

# The audit log a server with no --audit writes, as seen from its own mount namespace.
audit_of() {
	if [ "$AL_CALLER_UID" = 0 ]; then
		echo "/proc/$1/root/var/log/airlock/audit.jsonl"
	else
		echo "$home/.local/state/airlock/audit.jsonl"
	fi
}

# check_audit PID: the log exists with mode 0600 in a 0700 directory, and has records.
check_audit() {
	local f
	f=$(audit_of "$1")
	[ -f "$f" ] || al_fail "no audit log at $f"
	al_assert_eq "$(stat -c %a "$f")" 600 "the audit log's mode"
	al_assert_eq "$(stat -c %a "$(dirname "$f")")" 700 "the audit log directory's mode"
	al_assert_contains "$(cat "$f")" '"tool":"code_execute"' "audit records of the fresh server"
}

# ---- airlock serve ------------------------------------------------------------------------------

(exec "${fresh[@]}" "$AL_AIRLOCK_BIN" serve --config "$confdir/auto.yaml" --http 127.0.0.1:0 --port-file "$dir/port" \
	--token-file "$dir/token" 2>"$dir/serve.err") &
SPID=$!
AL_BG_PIDS+=("$SPID")
for _ in $(seq 100); do
	[ -s "$dir/port" ] && break
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
[ -s "$dir/port" ] || { cat "$dir/serve.err" >&2; al_fail "airlock serve did not start on a fresh machine"; }
PORT=$(cat "$dir/port")
url="http://127.0.0.1:$PORT"
al_serve_auth "$dir/token" # TCP needs a token: the fresh server generated one (mode 0600)
al_assert_eq "$(stat -c %a "$dir/token")" 600 "the generated token's mode"
if [ "$AL_CALLER_UID" = 0 ]; then
	# Root's default listener is the Unix socket in /run/airlock, which did not exist: made, mode
	# 0600, and it answers (as seen through the server's own mount namespace).
	sock=/proc/$SPID/root/run/airlock/serve.sock
	al_assert_eq "$(stat -c %a "$sock")" 600 "the socket's mode"
	al_assert_eq "$(curl -q -s -m 10 -o /dev/null -w '%{http_code}' --unix-socket "$sock" http://airlock/v1/health)" 200 \
		"health over the Unix socket, without a token"
fi

# api METHOD PATH [CURL ARGS...]: sets CODE and BODY (10 s at most: nothing here may block).
api() {
	local method=$1 path=$2
	shift 2
	BODY=$(curl -s -m 10 --path-as-is -o - -w '\n%{http_code}' -X "$method" "$url$path" "$@") || true
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}
create() {
	api POST /v1/sandboxes -d '{}'
	al_assert_eq "$CODE" 201 "create a sandbox: $BODY"
	printf '%s' "$BODY" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])'
}
# run SB CODE: a shell exec; OUT gets its stdout (from the final result line), CODE the HTTP status.
run() {
	local req
	# fresh: each a held exec of its own (what this file checks), not a cell of the shell context.
	req=$("$AL_PY" -c 'import json,sys; print(json.dumps({"language":"shell","code":sys.argv[1],"fresh":True}))' "$2")
	api POST "/v1/sandboxes/$1/exec" -d "$req" -m 30
	OUT=$(printf '%s\n' "$BODY" | grep '^{"result"' | tail -n 1 | "$AL_PY" -c 'import json,sys
r = json.load(sys.stdin).get("result") or {}
print(r.get("stdout", ""), end="")' 2>/dev/null) || OUT=
}

sb=$(create)

# umask 077: a file written over HTTP is the code's to read, and node starts.
api PUT "/v1/sandboxes/$sb/files/d/in.txt" --data-binary "hello $m"
al_assert_eq "$CODE" 200 "PUT under umask 077: $BODY"
node_check=
if command -v node >/dev/null; then node_check='; node -e "console.log(\"node-ok\")"'; fi
run "$sb" "cat d/in.txt; echo; stat -c %a d d/in.txt /etc$node_check"
al_assert_contains "$OUT" "hello $m" "the code reads a file PUT under umask 077"
al_assert_eq "$(printf '%s\n' "$OUT" | sed -n 2,4p | tr '\n' ' ')" "755 644 755 " "modes of the PUT directory, file and the sandbox's /etc"
[ -z "$node_check" ] || al_assert_contains "$OUT" "node-ok" "node starts in a sandbox of a server under umask 077"

# ps in a held exec: its own /proc. /proc/self names the shell itself ($$), and ps lists the
# exec's processes only: its init (pid 1), the shell, sleep and ps.
# The background child is sleep once it has exec'd: wait for that (under load the fork may still be
# bash when ps reads it).
run "$sb" 'sleep 30 & b=$!; for i in $(seq 200); do read -r c </proc/$b/comm; [ "$c" = sleep ] && break; sleep 0.01; done; read -r p _ </proc/self/stat; [ "$p" = "$$" ] && echo self-ok; l=$(ps -e -o pid=,args=); echo ps-rc=$?; printf "%s\n" "$l"'
al_assert_contains "$OUT" "self-ok" "/proc/self in a held exec names the process itself"
al_assert_contains "$OUT" "ps-rc=0" "ps in a held exec"
al_assert_eq "$(printf '%s\n' "$OUT" | sed -n '3,$p' | awk '{print NR <= 3 ? $1 : "ps"}' | tr '\n' ' ')" "1 2 3 ps " \
	"the pids ps sees in a held exec (init, the shell, sleep, then ps itself): $OUT"
al_assert_contains "$(printf '%s\n' "$OUT" | sed -n 3p)" "airlock-init" "the exec's init is pid 1: $OUT"
al_assert_contains "$(printf '%s\n' "$OUT" | sed -n 5p)" "sleep 30" "the exec's background process: $OUT"
run "$sb" 'awk '"'"'$2 == "/proc" { o = $4 } END { print o }'"'"' /proc/self/mounts'
al_assert_contains "$OUT" "ro," "the exec's own /proc is read-only"

# code_install_package: without a route to the registry, refused at once and saying so (npm
# retried for 71 s); pip installs into the workspace despite Debian's PEP 668 marker, and a later
# exec imports the package (a wheel from the workspace: no registry needed).
for mgr in pip npm; do
	t0=$(date +%s%N)
	api POST "/v1/sandboxes/$sb/packages" -d "{\"manager\":\"$mgr\",\"packages\":[\"left-pad\"]}"
	ms=$((($(date +%s%N) - t0) / 1000000))
	al_assert_contains "$BODY" "no network" "$mgr install in a sandbox without network: $CODE"
	[ "$ms" -lt 3000 ] || al_fail "$mgr install without network took $ms ms to fail"
done
whl=airlock_demo-1.0-py3-none-any.whl
"$AL_PY" "$AL_SRC/tests/mcp/mkwheel.py" "whl-$m" "$dir/$whl"
api PUT "/v1/sandboxes/$sb/files/$whl" --data-binary "@$dir/$whl"
al_assert_eq "$CODE" 200 "PUT the wheel: $BODY"
api POST "/v1/sandboxes/$sb/packages" -d "{\"manager\":\"pip\",\"packages\":[\"/workspace/$whl\"]}" -m 120
al_assert_contains "$BODY" '"exit_code":0' "pip install of a wheel on Debian 12 (PEP 668)"
req='{"language":"python","code":"import airlock_demo; print(airlock_demo.MARK)"}'
api POST "/v1/sandboxes/$sb/exec" -d "$req" -m 30
al_assert_contains "$BODY" "\"stdout\":\"whl-$m\\n\"" "a later exec imports the installed package"

# Bad requests: 4xx, and a refused path creates nothing.
api PUT "/v1/sandboxes/$sb/files/bad%ff%fe.txt" --data-binary x
al_assert_eq "$CODE" 400 "a URL path that is not UTF-8: $BODY"
api PUT "/v1/sandboxes/$sb/files/config.py%00.txt" --data-binary x
al_assert_eq "$CODE" 400 "%00 in a file path: $BODY"
api GET "/v1/sandboxes/$sb/files?path=%ff"
al_assert_eq "$CODE" 400 "a path argument that is not UTF-8: $BODY"
api POST /v1/sandboxes -d '{"limits":{"cpus":1e-300}}'
al_assert_eq "$CODE" 400 "cpus 1e-300: $BODY"
api PUT "/v1/sandboxes/$sb/files/d1/d2/d3/../../../../x" --data-binary x
[ "$CODE" -ge 400 ] && [ "$CODE" -lt 500 ] || al_fail "a path escaping through '..': $CODE $BODY"
api GET "/v1/sandboxes/$sb/files"
al_assert_eq "$CODE" 200 "list the workspace"
al_assert_not_contains "$BODY" '"config.py"' "the %00 path wrote config.py"
al_assert_not_contains "$BODY" '"d1"' "the refused path left its parents behind"

# Memory: 16 parallel reads of a 16 MiB file. The server's peak RSS (VmHWM, reset first) may not
# grow with the file: buffering each read whole took ~32 MiB a reader (512 MiB here).
run "$sb" 'head -c 16777216 /dev/urandom >big; sha256sum big'
sum=${OUT%% *}
[ ${#sum} = 64 ] || al_fail "no digest of the big file: $OUT"
curl -s -m 30 "$url/v1/sandboxes/$sb/files/big" -o /dev/null
before=$(awk '/^VmRSS/{print $2}' "/proc/$SPID/status")
echo 5 >"/proc/$SPID/clear_refs"
bg=()
for i in $(seq 16); do
	curl -s -m 60 "$url/v1/sandboxes/$sb/files/big" -o "$dir/big.$i" &
	bg+=($!)
done
wait "${bg[@]}" # not a bare wait: the server is a job of ours too
peak=$(awk '/^VmHWM/{print $2}' "/proc/$SPID/status")
al_log "RSS before ${before} kB, peak during 16 reads of 16 MiB ${peak} kB (+$((peak - before)) kB)"
for i in $(seq 16); do
	al_assert_eq "$(sha256sum <"$dir/big.$i" | cut -d' ' -f1)" "$sum" "read $i of the big file"
done
rm -f "$dir"/big.*
[ $((peak - before)) -lt 32768 ] || al_fail "16 reads of 16 MiB grew the server by $((peak - before)) kB (limit 32768)"

# FIFOs, a symlink: planted by code, never opened blocking. The code file of the next exec is
# replaced (the exec runs), a PUT or GET of f is refused at once, in 8 sandboxes together.
plant='rm -f .airlock/main.sh; mkfifo .airlock/main.sh f; ln -s /etc/hostname l; echo planted'
sbs=()
for i in $(seq 8); do
	s=$(create)
	sbs+=("$s")
	# In half of them the code file's directory itself becomes a FIFO.
	[ "$i" -le 4 ] || plant='rm .airlock/main.sh; rmdir .airlock; mkfifo .airlock f; ln -s /etc/hostname l; echo planted'
	run "$s" "$plant"
	al_assert_eq "$OUT" planted "plant FIFOs in sandbox $i"
done
# A socket the code bound in its workspace: a GET is refused with 400 naming it (opening one fails
# with ENXIO, which was answered 500).
run "${sbs[0]}" 'python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")" && [ -S sock ] && echo bound'
al_assert_eq "$OUT" bound "bind a socket in the workspace"
api GET "/v1/sandboxes/${sbs[0]}/files/sock"
al_assert_eq "$CODE" 400 "GET of a socket: $BODY"
al_assert_contains "$BODY" "not a regular file" "the refusal of a socket says why"
t0=$(date +%s)
bg=()
for s in "${sbs[@]}"; do
	curl -s -m 10 -o "$dir/put.$s" -w '%{http_code}' -X PUT "$url/v1/sandboxes/$s/files/f" --data-binary x >"$dir/put.$s.code" &
	bg+=($!)
	curl -s -m 10 -o "$dir/get.$s" -w '%{http_code}' "$url/v1/sandboxes/$s/files/f" >"$dir/get.$s.code" &
	bg+=($!)
	curl -s -m 10 -o /dev/null -w '%{http_code}' -X PUT "$url/v1/sandboxes/$s/files/l" --data-binary x >"$dir/ln.$s.code" &
	bg+=($!)
done
wait "${bg[@]}"
for s in "${sbs[@]}"; do
	al_assert_eq "$(cat "$dir/put.$s.code")" 400 "PUT onto a FIFO ($s)"
	al_assert_contains "$(cat "$dir/put.$s")" "not a regular file" "the PUT refusal says why"
	al_assert_eq "$(cat "$dir/get.$s.code")" 400 "GET of a FIFO ($s)"
	al_assert_eq "$(cat "$dir/ln.$s.code")" 400 "PUT onto a symlink ($s)"
done
bg=()
for s in "${sbs[@]}"; do
	run "$s" 'echo again' &
	bg+=($!)
done
wait "${bg[@]}"
[ $(($(date +%s) - t0)) -le 15 ] || al_fail "the FIFO requests took $(($(date +%s) - t0)) s"
for s in "${sbs[@]}"; do
	run "$s" 'echo again; cat l'
	al_assert_eq "$(printf '%s\n' "$OUT" | head -n 1)" again "an exec after its code file became a FIFO ($s)"
done
run "$sb" 'echo others-served'
al_assert_eq "$OUT" others-served "another sandbox is served while FIFOs wait in 8"
for s in "${sbs[@]:4}"; do
	api DELETE "/v1/sandboxes/$s"
	al_assert_eq "$CODE" 200 "destroy a sandbox with FIFOs"
done

# SIGTERM while an exec streams: the stream ends with a line saying it was stopped, and the
# server exits (with four FIFO sandboxes still alive) within seconds.
curl -s -N -m 30 -X POST "$url/v1/sandboxes/$sb/exec" \
	-d '{"language":"shell","code":"echo started; sleep 60"}' >"$dir/stream.ndjson" &
cpid=$!
for _ in $(seq 100); do
	grep -q started "$dir/stream.ndjson" 2>/dev/null && break
	sleep 0.1
done
al_assert_contains "$(cat "$dir/stream.ndjson")" started "the streamed exec started"
check_audit "$SPID"
kill -TERM "$SPID"
for _ in $(seq 150); do
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$SPID" 2>/dev/null || al_fail "airlock serve still runs 15 s after SIGTERM"
wait "$cpid" || true
al_assert_contains "$(tail -n 1 "$dir/stream.ndjson")" '"stopped":true' "the stream's last line after SIGTERM"
al_assert_contains "$(tail -n 1 "$dir/stream.ndjson")" 'server is stopping' "the last line says why"

# ---- airlock mcp --------------------------------------------------------------------------------

cat >"$dir/mcp.py" <<'PY'
import json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Client
mark, go, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
c = Client(cmd)
fails = []
def sc(r):
    res = r.get("result") or {}
    if res.get("isError"):
        fails.append("error: %s" % json.dumps(r)[:400])
    return res.get("structuredContent") or {}
c.initialize()
sb = sc(c.call("code_create_sandbox", {"language": "shell"}))["sandbox_id"]
sc(c.call("code_write_file", {"sandbox_id": sb, "path": "sub/in.txt", "content": "mcp " + mark}))
out = sc(c.call("code_execute", {"sandbox_id": sb, "language": "shell",
                                  "code": "cat sub/in.txt; echo; stat -c %a sub sub/in.txt"}))
if out.get("stdout") != "mcp %s\n755\n644\n" % mark:
    fails.append("exec after write_file under umask 077: %s" % json.dumps(out)[:400])
print(c.p.pid, flush=True)
for _ in range(600):  # the harness checks the audit log while the server runs
    if os.path.exists(go):
        break
    time.sleep(0.1)
c.close()
print("\n".join(fails), file=sys.stderr)
sys.exit(1 if fails else 0)
PY
chmod 0644 "$dir/mcp.py"
"$AL_PY" "$dir/mcp.py" "$m" "$dir/mcp.go" "${fresh[@]}" "$AL_AIRLOCK_BIN" mcp --approve auto=HIGH \
	>"$dir/mcp.out" 2>"$dir/mcp.err" &
mpid=$!
AL_BG_PIDS+=("$mpid")
for _ in $(seq 300); do
	[ -s "$dir/mcp.out" ] && break
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
[ -s "$dir/mcp.out" ] || { cat "$dir/mcp.err" >&2; al_fail "airlock mcp on a fresh machine did not answer"; }
check_audit "$(head -n 1 "$dir/mcp.out")"
touch "$dir/mcp.go"
rc=0
wait "$mpid" || rc=$?
[ "$rc" = 0 ] || { cat "$dir/mcp.err" >&2; al_fail "airlock mcp on a fresh machine under umask 077"; }

# `airlock audit tail` on a FIFO: refused at once, not a read that waits for a writer.
mkfifo -m 0666 "$dir/fifo.jsonl"
rc=0
timeout 10 "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" audit tail "$dir/fifo.jsonl" >/dev/null 2>"$dir/tail.err" || rc=$?
[ "$rc" != 124 ] || al_fail "airlock audit tail waited on a FIFO"
[ "$rc" != 0 ] || al_fail "airlock audit tail accepted a FIFO"
al_assert_contains "$(cat "$dir/tail.err")" "not a regular file" "audit tail's refusal"
al_pass "the service on a fresh machine, under umask 077, against planted FIFOs"
