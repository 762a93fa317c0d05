#!/usr/bin/env bash
# pause_disk.sh — pause to disk (issue 32), judged from outside with curl and on the host: a pause
# with to_disk=true keeps the sandbox's files and metadata in the state directory and releases the
# rest — its background process gone from the host, its cgroup removed — while it stays listed,
# paused, under its id; the answer says what was kept and what was released; its next exec makes it
# again under the same id (its files back, its context's first cell saying its state was lost); an
# explicit resume says which state was kept; a pause to disk is refused while a call runs in it,
# another principal gets 404, a bad to_disk is 400; a restart brings one paused to disk back; a
# destroy of one removes its state; a server without a state directory refuses with 501.
: "${AL_GUARD_TIMEOUT:=240}"
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
state="$dir/state"
al_serve_config "$confdir/disk.yaml" 'server:\n  max_lifetime: 1h\n  pool: {}\n'
al_serve_tokens "$dir/serve.token"
bob=$AL_BOB
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
start() { # [ARGS...] (default: --state-dir STATE)
	rm -f "$dir/serve.port"
	[ $# != 0 ] || set -- --state-dir "$state"
	al_serve_start "$dir" --config "$confdir/disk.yaml" --audit "$dir/audit.jsonl" \
		--approver-token-file "$dir/reviewer.token" "$@"
	url=$AL_SERVE_URL
}
sh_json() { "$AL_PY" -c 'import json,sys; print(json.dumps({"language": "shell", "code": sys.argv[1], "fresh": True}))' "$1"; }
admin_row() { # ID: the approver's listing of it, in BODY
	BODY=$(curl -q -sS -m 30 -H "Authorization: Bearer $reviewer" "$url/v1/admin/sandboxes" |
		"$AL_PY" -c 'import json,sys; print(json.dumps([x for x in json.load(sys.stdin)["sandboxes"] if x["id"] == sys.argv[1]][0]))' "$1")
}
# The cgroup directories host pid $1 is in, one per line (every v1 hierarchy and the v2 one).
cgroup_dirs() {
	"$AL_PY" - "$1" <<'PY'
import os, sys
mounts = []
for l in open("/proc/self/mountinfo"):
    f = l.split()
    sep = f.index("-")
    if f[sep + 1] in ("cgroup", "cgroup2"):
        mounts.append((f[sep + 1], f[4], set(f[-1].split(","))))
for l in open(f"/proc/{sys.argv[1]}/cgroup"):
    _, ctrls, path = l.rstrip("\n").split(":", 2)
    for kind, where, opts in mounts:
        if (kind == "cgroup2" and ctrls == "") or (kind == "cgroup" and ctrls and set(ctrls.split(",")) <= opts):
            print(where + path)
PY
}

start
m=$(al_marker)
al_api POST /v1/sandboxes -d '{"metadata": {"app": "disk"}}'
[ "$CODE" = 201 ] || al_fail "create: HTTP $CODE: $BODY"
a=$(al_jget 'd["sandbox_id"]')
al_api_exec "$a" "$(sh_json 'mkdir -p pkg && echo installed >pkg/lib.py && head -c 2000000 /dev/urandom >big && md5sum big')"
sum=$(al_jget 'd["result"]["stdout"]')
al_api_exec "$a" '{"language": "python", "context_id": "calc", "code": "x = 41"}'
al_api_exec "$a" "$("$AL_PY" -c 'import json,sys; print(json.dumps({"command": sys.argv[1], "background": True}))' "exec sh -c 'while :; do sleep 1; done' keep-$m")"
[ "$(al_jget 'd["result"]["status"]')" = started ] || al_fail "the background process did not start: $BODY"
pid=""
for _ in $(seq 100); do
	pid=$(pgrep -f -- "keep-$m" | head -n1) && [ -n "$pid" ] && break
	sleep 0.05
done
[ -n "$pid" ] || al_fail "the background process is not seen on the host"
# Its own: not the ones this test is in too (a hierarchy airlock makes no cgroup in).
mapfile -t cgs < <(comm -23 <(cgroup_dirs "$pid" | sort -u) <(cgroup_dirs "$$" | sort -u))
((${#cgs[@]})) || al_fail "no cgroup found for the background process $pid"
for d in "${cgs[@]}"; do [ -d "$d" ] || al_fail "its cgroup $d is not there"; done

# ---- refused: another principal, a bad value, a call running in it
BODY=$(curl -q -sS -m 30 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $bob" "$url/v1/sandboxes/$a/pause?to_disk=true") || true
al_assert_eq "$BODY" 404 "bob's pause to disk of alice's sandbox"
al_api POST "/v1/sandboxes/$a/pause?to_disk=yes"
al_assert_eq "$CODE" 400 "to_disk=yes"
curl -sS -m 60 -o /dev/null -X POST "$url/v1/sandboxes/$a/exec" -d "$(sh_json 'sleep 3')" &
busy=$!
for _ in $(seq 100); do
	admin_row "$a"
	[ "$(al_jget 'd["exec_running"]')" = True ] && break
	sleep 0.05
done
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
al_assert_eq "$CODE" 429 "a pause to disk while an exec runs in it"
al_assert_contains "$BODY" "in the foreground" "... says why"
wait "$busy"
al_pass "a pause to disk is refused for another principal (404), a bad value (400), a running call (429)"

# ---- paused to disk: files and metadata kept, processes and memory released
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
[ "$CODE" = 200 ] || al_fail "pause to disk: HTTP $CODE: $BODY"
al_assert_eq "$(al_jget 'd["state"], d["on_disk"], d["kept"], d["changed"]')" "('paused', True, 'files and metadata', True)" "the pause's answer"
al_assert_contains "$(al_jget 'd["released"]')" "processes and their memory" "... says what was released"
for _ in $(seq 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.05
done
! kill -0 "$pid" 2>/dev/null || al_fail "the background process $pid still runs after the pause to disk"
[ -z "$(pgrep -f -- "keep-$m")" ] || al_fail "a process of the sandbox is left on the host: $(pgrep -af -- "keep-$m")"
for d in "${cgs[@]}"; do [ ! -d "$d" ] || al_fail "its cgroup $d is still there after the pause to disk"; done
admin_row "$a"
al_assert_eq "$(al_jget 'd["state"], d["on_disk"], d["kept"], d["memory_bytes"], d["cpu_s"]')" "('paused', True, True, None, None)" "the approver's listing"
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$CODE $(al_jget 'd["state"], d["metadata"]')" "200 ('paused', {'app': 'disk'})" "the owner's info"
[ -s "$state/$a/files/big" ] || al_fail "its files are not in the state directory"
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
al_assert_eq "$CODE $(al_jget 'd["changed"], d["on_disk"]')" "200 (False, True)" "a second pause to disk"
al_pass "paused to disk: listed and paused under its id, its process and cgroup gone from the host, its files on disk"

# ---- made again by its next call: the files back, the context's state lost and said so
al_api_exec "$a" "$(sh_json 'cat pkg/lib.py; md5sum big')"
al_assert_eq "$(al_jget 'd["result"]["stdout"]')" "installed
$sum" "the files after the pause to disk, read by the next exec"
al_assert_eq "$(al_jget 'd["result"].get("resumed")')" True "the exec says it resumed the sandbox"
al_api_exec "$a" '{"language": "python", "context_id": "calc", "code": "x + 1"}'
al_assert_eq "$(al_jget 'd["result"]["cell"]["restarted"], d["result"]["cell"].get("restart_reason"), d["result"]["cell"]["error"]["ename"]')" \
	"(True, 'paused-to-disk', 'NameError')" "the context's first cell after the pause to disk"
al_assert_contains "$(al_jget 'd["result"]["stderr"]')" "the sandbox was paused to disk since this context's last cell" "... its stderr"
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$(al_jget 'd["sandbox_id"], d["state"]')" "('$a', 'running')" "the same id, running"
al_pass "its next call makes it again under the same id: files back, the context says its state was lost"

# ---- an explicit resume says which state was kept
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
[ "$CODE" = 200 ] || al_fail "pause to disk again: HTTP $CODE: $BODY"
al_api POST "/v1/sandboxes/$a/resume"
al_assert_eq "$CODE $(al_jget 'd["state"], d["on_disk"], d["kept"], d["changed"]')" "200 ('running', False, 'files and metadata', True)" "the resume's answer"
al_assert_contains "$(al_jget 'd["released"]')" "ended at the pause to disk" "... says what was not kept"
al_api POST "/v1/sandboxes/$a/pause"
al_api POST "/v1/sandboxes/$a/resume"
al_assert_eq "$(al_jget 'd["kept"], d["released"]')" "('everything: files, processes, memory', None)" "a resume after a pause in place"
al_pass "a resume says which state was kept"

# ---- a restart keeps one paused to disk; a destroy removes its state
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
[ "$CODE" = 200 ] || al_fail "pause to disk before the restart: HTTP $CODE: $BODY"
al_serve_stop TERM
start
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$CODE $(al_jget 'd["state"]')" "200 paused" "after a restart"
# Not held: no memory or CPU of its own to report, as before the restart.
admin_row "$a"
al_assert_eq "$(al_jget 'd["on_disk"], d["memory_bytes"], d["cpu_s"]')" "(True, None, None)" "the approver's listing after a restart"
al_api_exec "$a" "$(sh_json 'md5sum big')"
al_assert_eq "$(al_jget 'd["result"]["stdout"]')" "$sum" "its files after the restart"
al_assert_eq "$(al_jget 'd["result"].get("resumed")')" True "the first exec after the restart says it resumed the sandbox"
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
al_api DELETE "/v1/sandboxes/$a"
al_assert_eq "$CODE" 200 "destroy one paused to disk"
[ ! -e "$state/$a" ] || al_fail "its state is still in the state directory"
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$CODE" 404 "after its destroy"
al_serve_stop TERM
al_pass "a restart keeps one paused to disk on disk, its next call makes it again; a destroy removes its state"

# ---- no state directory: refused
start --state-dir none
al_api POST /v1/sandboxes -d '{}'
b=$(al_jget 'd["sandbox_id"]')
al_api POST "/v1/sandboxes/$b/pause?to_disk=true"
al_assert_eq "$CODE" 501 "a pause to disk without a state directory"
al_assert_contains "$BODY" "paused in place only" "... says why"
al_api GET "/v1/sandboxes/$b"
al_assert_eq "$(al_jget 'd["state"]')" running "it was not paused"
al_serve_stop TERM
al_pass "without a state directory a pause to disk is refused with 501, and nothing changes"
