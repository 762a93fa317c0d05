#!/usr/bin/env bash
# oci_runtime.sh — `airlock oci` (airlock-runc) without containerd: the OCI runtime spec's lifecycle
# (state transitions, errors for unknown ids, double create, kill of a stopped container, delete),
# exec, ps, pause, events and refusals, judged from outside (processes, cgroups, state directories).
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
work=$(al_tmpdir)
state="$work/state"
mark=$(al_marker)
cgparent="airlock-it-$mark"

# A bundle: a busybox rootfs, the probes bound read-only at /probe, runc spec's mounts and masks.
mkbundle() { # DIR ARGS-JSON [EXTRA-PYTHON]
	mkdir -p "$1/rootfs/bin"
	cp /bin/busybox "$1/rootfs/bin/busybox"
	for a in sh sleep echo cat id true; do ln -sf busybox "$1/rootfs/bin/$a"; done
	"$AL_PY" - "$1" "$2" "$AL_PROBE_DIR" "$cgparent" "${3:-}" <<'EOF'
import json, os, sys
d, args, probe, cg, extra = sys.argv[1:6]
c = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "hostname": "box",
     "process": {"args": json.loads(args), "env": ["PATH=/bin"], "cwd": "/",
                 "user": {"uid": 0, "gid": 0}, "noNewPrivileges": True,
                 "capabilities": {k: ["CAP_CHOWN", "CAP_KILL"] for k in ("bounding", "effective", "permitted")}},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
                {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["newinstance", "ptmxmode=0666"]},
                {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]},
                {"destination": "/probe", "type": "bind", "source": probe, "options": ["rbind", "ro"]}],
     "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")],
               "cgroupsPath": "/%s/%s" % (cg, os.path.basename(d)),
               "resources": {"pids": {"limit": 64}},
               "maskedPaths": ["/proc/kcore", "/proc/keys"], "readonlyPaths": ["/proc/sys", "/proc/bus"]}}
exec(extra)
json.dump(c, open(os.path.join(d, "config.json"), "w"))
EOF
}
oci() { al_run oci --root "$state" "$@"; }
# The audit log and the verdicts of this test's containers stay in its directory.
export AIRLOCK_AUDIT="$work/audit/audit.jsonl" AIRLOCK_VERDICT_DIR="$work/verdicts"
status_of() { oci state "$1"; al_json_get "$AL_OUT" status; }
# The exit status keeper of a container (its pid in state.json), and whether a pid is gone (a
# zombie counts: its parent, here the machine's init, reaps it in its own time).
keeper_of() { "$AL_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["keeper"]["pid"])' "$state/$1/state.json"; }
gone() { [ ! -d "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
# keeper_gone PID: delete ends the keeper with a SIGKILL it does not wait for: gone within 5 s.
keeper_gone() {
	for _ in $(seq 50); do
		gone "$1" && return 0
		sleep 0.1
	done
	gone "$1"
}
# The verdict's end: "status exit_code signal" (null where JSON has null).
verdict_end() {
	"$AL_PY" -c 'import json, sys; v = json.load(open(sys.argv[1]))
print(" ".join(json.dumps(v[k]) for k in ("status", "exit_code", "signal")).replace(chr(34), ""))' "$AIRLOCK_VERDICT_DIR/$1"
}
wait_status() { # ID STATUS
	for _ in $(seq 50); do [ "$(status_of "$1")" = "$2" ] && return 0; sleep 0.1; done
	al_fail "container $1 did not become $2 (is $(status_of "$1"))"
}
cg_dir() { printf '/sys/fs/cgroup/pids/%s/%s' "$cgparent" "$1"; }
# Every hierarchy (v1 and v2) but cpuset, which the runtime leaves alone, has PID in container ID's
# cgroup: as the process itself sees it (it joined v1 itself, v2 at birth).
in_cgroups() { # PID ID WHAT
	local bad
	bad=$(grep -v ':cpuset:' "/proc/$1/cgroup" | grep -v ":/$cgparent/$2\$") || true
	[ -z "$bad" ] || al_fail "$3 is not in container $2's cgroup everywhere: $bad"
}
# The parent cgroups the containers' paths made (runc leaves them too): removed, once empty.
cleanup_cg() {
	local h
	for h in /sys/fs/cgroup/*/"$cgparent" /sys/fs/cgroup/"$cgparent"; do
		[ ! -d "$h" ] || rmdir "$h" 2>/dev/null || al_log "could not remove $h"
	done
}
trap 'cleanup_cg; al_inner_cleanup' EXIT

if [ "$AL_TEST_MODE" = user ]; then
	# A confined container without a user namespace in its config maps a range of host ids:
	# an unprivileged caller cannot, and is told so before anything is made.
	mkbundle "$work/u1" '["true"]'
	chmod -R a+rX "$work"
	state="$(al_tmpdir 0777)/state"
	oci create --bundle "$work/u1" u1
	al_assert_rc 1
	al_assert_contains "$AL_ERR" "needs root" "the refusal says why"
	[ ! -e "$state/u1" ] || al_fail "a refused create left $state/u1"
	oci state nosuch
	al_assert_rc 1
	al_assert_contains "$AL_ERR" "does not exist" "an unknown id"
	exit 0
fi

# ---- unknown ids -------------------------------------------------------------------------------
for cmd in state start delete kill pause ps; do
	oci "$cmd" nosuch
	al_assert_rc 1
	al_assert_contains "$AL_ERR" "does not exist" "$cmd of an unknown id"
done
oci delete --force nosuch
al_assert_rc 0

# ---- create, double create, start, state transitions -----------------------------------------------
mkbundle "$work/c1" "[\"sh\", \"-c\", \"echo started-$mark; exec sleep 60\"]" 'c["annotations"] = {"io.airlock.verdict": "c1.json"}' 
oci create --bundle "$work/c1" --pid-file "$work/c1.pid" c1
al_assert_rc 0
c1out=$AL_OUT_FILE # create's stdout is the container's
al_assert_eq "$(status_of c1)" created "status after create"
in_cgroups "$(cat "$work/c1.pid")" c1 "the created init"
k1=$(keeper_of c1)
al_assert_eq "$(cat "/proc/$k1/comm")" airlock-keeper "a verdict was asked: the exit status keeper runs"
grep -qx "$k1" "$(cg_dir c1)/cgroup.procs" && al_fail "the keeper is in the container's cgroup"
grep -q '^CapEff:[[:space:]]*0000000000000000' "/proc/$k1/status" || al_fail "the keeper holds capabilities"
grep -q '^CapBnd:[[:space:]]*0000000000000000' "/proc/$k1/status" || al_fail "the keeper's bounding set is not empty"
# Its stdio on /dev/null, the init's pidfd and the state directory: never the container's stdio or
# the exec fifo (start's open of it would then succeed after the init died).
al_assert_eq "$(find "/proc/$k1/fd" -mindepth 1 | wc -l) $(readlink "/proc/$k1/fd/1")" "5 /dev/null" "the keeper's descriptors"
find "/proc/$k1/fd" -mindepth 1 -lname '*exec.fifo*' | grep -q . && al_fail "the keeper holds the exec fifo"
oci state c1
pid=$(al_json_get "$AL_OUT" pid)
al_assert_eq "$(cat "$work/c1.pid")" "$pid" "the pid file names the init"
[ -d "/proc/$pid" ] || al_fail "the init $pid is not alive after create"
al_assert_eq "$(al_host_uid "$pid")" "$AL_ID_BASE" "the container's root is host uid id_base, not root"
grep -q "started-$mark" "$c1out" && al_fail "the process ran before start"
oci create --bundle "$work/c1" c1
al_assert_rc 1
al_assert_contains "$AL_ERR" "already exists" "a second create of one id"
al_assert_eq "$(status_of c1)" created "the first container is untouched by the second create"
mkbundle "$work/c1b" '["true"]' 'c["linux"]["cgroupsPath"] = "/%s/c1" % cg'
oci create --bundle "$work/c1b" c1b
al_assert_rc 1
al_assert_contains "$AL_ERR" "already holds processes" "a second container in c1's cgroup"
oci start c1
al_assert_rc 0
wait_status c1 running
for _ in $(seq 50); do grep -q "started-$mark" "$c1out" && break; sleep 0.1; done
al_assert_contains "$(cat "$c1out")" "started-$mark" "the process ran after start, with create's stdout"
oci start c1
al_assert_rc 1
al_assert_contains "$AL_ERR" "running" "start of a running container"
oci delete c1
al_assert_rc 1
al_assert_contains "$AL_ERR" "not stopped" "delete of a running container without --force"
al_assert_eq "$(status_of c1)" running "a refused delete leaves it running"

# ---- confinement, from outside ----------------------------------------------------------------
grep -q '^CapEff:[[:space:]]*0000000000000000' "/proc/$pid/status" || al_fail "the init holds capabilities: $(grep Cap "/proc/$pid/status")"
grep -q '^CapBnd:[[:space:]]*0000000000000000' "/proc/$pid/status" || al_fail "the bounding set is not empty"
grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" || al_fail "no_new_privs is not set"
grep -q '^Seccomp:[[:space:]]*2' "/proc/$pid/status" || al_fail "no seccomp filter"
al_pass "the container's init: no capabilities (config asked CHOWN, KILL), no_new_privs, seccomp"
[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] || al_fail "the container shares the host's network"

# ---- exec, ps, events, pause ------------------------------------------------------------------------
printf '{"args":["/probe/al-try-syscall","mount","ptrace","keyctl"],"env":["PATH=/bin"],"cwd":"/","user":{"uid":0,"gid":0}}' >"$work/p1.json"
oci exec --process "$work/p1.json" c1
al_assert_rc 0
al_assert_contains "$AL_OUT" "mount errno=EPERM" "exec: seccomp answers mount (EFAULT unfiltered)"
al_assert_contains "$AL_OUT" "keyctl errno=EPERM" "exec: seccomp answers keyctl (EOPNOTSUPP unfiltered)"
printf '{"args":["sh","-c","echo x > /proc/self/comm; echo rc=$?; echo y > /tmp/ok && echo tmp-ok; exit 5"],"env":["PATH=/bin"],"cwd":"/"}' >"$work/p2.json"
oci exec --process "$work/p2.json" c1
al_assert_rc 5
al_assert_contains "$AL_OUT" "rc=1" "exec: Landlock refuses a write to /proc/self/comm (the mount allows it)"
al_assert_contains "$AL_OUT" "tmp-ok" "exec: the container's own /tmp is writable"
printf '{"args":["sleep","60"],"env":["PATH=/bin"],"cwd":"/"}' >"$work/p3.json"
oci exec --process "$work/p3.json" --detach --pid-file "$work/e.pid" c1
al_assert_rc 0
epid=$(cat "$work/e.pid")
[ -d "/proc/$epid" ] || al_fail "the detached exec $epid is not running"
oci ps --format json c1
al_assert_rc 0
al_assert_contains "$AL_OUT" "$pid" "ps lists the init"
al_assert_contains "$AL_OUT" "$epid" "ps lists the detached exec"
grep -qx "$epid" "$(cg_dir c1)/cgroup.procs" || al_fail "the exec is not in the container's cgroup"
in_cgroups "$epid" c1 "the exec"
oci events --stats c1
al_assert_rc 0
al_assert_eq "$(al_json_get "$AL_OUT" data.pids.current)" 2 "events --stats counts the container's processes"
al_assert_eq "$(al_json_get "$AL_OUT" data.pids.limit)" 64 "events --stats shows the config's pids limit"
oci pause c1
al_assert_rc 0
al_assert_eq "$(status_of c1)" paused "status after pause"
grep -q '^State:[[:space:]]*[SD]' "/proc/$pid/status"
oci resume c1
al_assert_rc 0
al_assert_eq "$(status_of c1)" running "status after resume"

# ---- update, kill --all ------------------------------------------------------------------------------
printf '{"pids":{"limit":32}}' >"$work/res.json"
oci update --resources "$work/res.json" c1
al_assert_rc 0
al_assert_eq "$(cat "$(cg_dir c1)/pids.max")" 32 "update --resources changes the cgroup's limit"
# SIGTERM to every process: the exec'd sleep dies of it; the init, pid 1 of its namespace with no
# handler, does not (so only --all reached the exec).
oci kill --all c1 TERM
al_assert_rc 0
for _ in $(seq 50); do [ -d "/proc/$epid" ] || break; sleep 0.1; done
[ ! -d "/proc/$epid" ] || al_fail "kill --all did not reach the exec'd process"
al_assert_eq "$(status_of c1)" running "the init ignores SIGTERM as pid 1"

# ---- kill, stopped, kill of a stopped container, delete -----------------------------------------
oci kill c1 KILL
al_assert_rc 0
wait_status c1 stopped
oci state c1
al_assert_eq "$(al_json_get "$AL_OUT" pid)" 0 "a stopped container's state has pid 0"
oci kill c1 TERM
al_assert_rc 1
al_assert_contains "$AL_ERR" "not running" "kill of a stopped container"
oci delete c1
al_assert_rc 0
oci state c1
al_assert_rc 1
[ ! -e "$state/c1" ] || al_fail "delete left $state/c1"
[ ! -d "$(cg_dir c1)" ] || al_fail "delete left the cgroup $(cg_dir c1)"
al_pass "delete removed the state and the cgroup"

# ---- the verdict the annotation asked for, and the audit records ---------------------------------
v="$AIRLOCK_VERDICT_DIR/c1.json"
[ -s "$v" ] || al_fail "no verdict at $v"
al_assert_eq "$(al_json_get "$v" id)" c1 "verdict: id"
# c1's init was reaped by the machine's init in its own time: before delete (the keeper's record)
# or after (delete read the zombie's status), both the same where the kernel keeps the status.
end=$(verdict_end c1.json)
[ "$end" = "signaled null 9" ] || [ "$end" = "$(al_oci_end signaled null 9)" ] ||
	al_fail "verdict of c1 killed by kill KILL: $end (status exit_code signal)"
keeper_gone "$k1" || al_fail "c1's keeper $k1 outlived delete"
al_assert_eq "$(al_json_get "$v" usage.pids.limit)" 32 "verdict: the cgroup's figures (the updated pids limit)"
al_assert_eq "$(al_json_get "$v" enforced.capabilities)" none "verdict: no capabilities"
al_assert_eq "$(al_json_get "$v" enforced.id_map.host_base)" "$AL_ID_BASE" "verdict: the id map"
events=$("$AL_PY" -c 'import json, sys
print(" ".join(r["event"] + ":" + r["result"]["status"] for r in map(json.loads, open(sys.argv[1])) if r["sandbox"] == "c1"))' "$AIRLOCK_AUDIT")
al_assert_eq "$events" "start:started end:signaled" "audit records of c1"

# ---- the exit status a subreaper reaps, in the verdict -------------------------------------------------
# A shim of our own, as containerd's is: a subreaper that runs create and start and gets the
# container's init when create exits. REAP=1 reaps it at once (the keeper reads the status the
# kernel kept for its pidfd), REAP=0 leaves it a zombie until after delete (delete reads /proc).
# It prints the wait status it got and the keeper's pid (which it reaps too: create's child).
shim() { # ID REAP [SIGNAL]
	"$AL_PY" - "$AIRLOCK" "$state" "$work/$1" "$1" "$2" "${3:-}" <<'EOF'
import ctypes, json, os, subprocess, sys, time
airlock, state, bundle, cid, reap, kill = sys.argv[1:7]
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
oci = lambda *a: subprocess.run([airlock, "oci", "--root", state, *a], check=True)
oci("create", "--bundle", bundle, "--pid-file", bundle + ".pid", cid)
pid = int(open(bundle + ".pid").read())
keeper = json.load(open(os.path.join(state, cid, "state.json")))["keeper"]["pid"]
oci("start", cid)
if kill:
    oci("kill", cid, kill)
status = None
if reap == "1":
    status = os.waitpid(pid, 0)[1]
else:
    while open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.02)
oci("delete", cid)
if status is None:
    status = os.waitpid(pid, 0)[1]
os.waitpid(keeper, 0)
print(status, keeper)
EOF
}
mkbundle "$work/c3" '["sh", "-c", "exit 7"]' 'c["annotations"] = {"io.airlock.verdict": "c3.json"}'
out=$(shim c3 1) || al_fail "the subreaper's run of c3 failed"
al_assert_eq "${out% *}" $((7 << 8)) "the subreaper reaped the container's init itself (exit 7)"
al_assert_eq "$(verdict_end c3.json)" "$(al_oci_end exited 7 null)" "verdict of a reaped init: exited, exit_code 7 (status exit_code signal)"
mkbundle "$work/c4" '["sleep", "60"]' 'c["annotations"] = {"io.airlock.verdict": "c4.json"}'
out=$(shim c4 0 KILL) || al_fail "the subreaper's run of c4 failed"
al_assert_eq "${out% *}" 9 "the subreaper reaped the init after delete (SIGKILL)"
al_assert_eq "$(verdict_end c4.json)" "signaled null 9" "verdict of a zombie init: signaled, signal 9"
# tail of an endless line keeps it all: the init itself meets the memory limit's OOM killer.
mkbundle "$work/c5" '["tail", "/dev/zero"]' 'c["annotations"] = {"io.airlock.verdict": "c5.json"}
c["linux"]["resources"]["memory"] = {"limit": 33554432}'
ln -sf busybox "$work/c5/rootfs/bin/tail"
out=$(shim c5 1) || al_fail "the subreaper's run of c5 failed"
al_assert_eq "${out% *}" 9 "the subreaper reaped an init the OOM killer killed (SIGKILL)"
al_assert_eq "$(verdict_end c5.json)" "$(al_oci_end oom null 9)" "verdict of an OOM-killed init: oom, signal 9"
al_assert_eq "$(al_json_get "$AIRLOCK_VERDICT_DIR/c5.json" usage.memory.oom_kills)" 1 "verdict: one OOM kill in the cgroup"
al_kernel_at_least 6 15 || al_assert_contains "$(al_json_get "$AIRLOCK_VERDICT_DIR/c3.json" exit_unknown)" PIDFD_INFO_EXIT "exit_unknown names what the kernel lacks"
if [ -e "$state/c3" ] || [ -e "$state/c4" ] || [ -e "$state/c5" ]; then al_fail "state of c3, c4 or c5 is left"; fi
al_pass "the verdict's exit code and signal are those the container's reaper saw, reaped before or after delete"

# ---- delete of a created container: the process never runs ------------------------------------------
mkbundle "$work/c2" "[\"/probe/al-probe\", \"write\", \"/tmp/never\", \"x\"]" 'c["annotations"] = {"io.airlock.verdict": "c2.json"}'
oci create --bundle "$work/c2" c2
al_assert_rc 0
oci state c2
pid2=$(al_json_get "$AL_OUT" pid)
k2=$(keeper_of c2)
oci delete c2
al_assert_rc 0
keeper_gone "$k2" || al_fail "c2's keeper $k2 outlived delete"
al_assert_eq "$(verdict_end c2.json)" "killed null 9" "verdict of a created container deleted: killed by delete"
for _ in $(seq 30); do [ -d "/proc/$pid2" ] || break; sleep 0.1; done
[ ! -d "/proc/$pid2" ] || grep -q '^State:[[:space:]]*Z' "/proc/$pid2/status" || al_fail "delete of a created container left its init"
al_pass "delete of a created container kills its init"

# ---- refusals: nothing is made ---------------------------------------------------------------------
refuse() { # NAME PYTHON WORD
	mkbundle "$work/$1" '["true"]' "$2"
	oci create --bundle "$work/$1" "$1"
	al_assert_rc 1
	al_assert_contains "$AL_ERR" "$3" "refusal of $1"
	[ ! -e "$state/$1" ] || al_fail "a refused create left $state/$1"
	[ ! -d "$(cg_dir "$1")" ] || al_fail "a refused create left a cgroup"
}
refuse priv 'c["process"]["capabilities"]["bounding"].append("CAP_SYS_ADMIN")' "CAP_SYS_ADMIN"
refuse hostnet 'c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]' "host's network"
refuse hostpid 'c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "pid"]' "pid namespace"
refuse badprof 'c["annotations"] = {"io.airlock.profile": "lenient"}' "unknown profile"
# Hooks run (oci_docker.sh); what a confined profile refuses is the image's own program as one.
refuse hooks 'c["hooks"] = {"prestart": [{"path": d + "/rootfs/bin/busybox"}]}' "the container's own file"
refuse noexe 'c["process"]["args"] = ["/no/such/program"]' "/no/such/program"
# 4294967295 is (uid_t)-1: setresuid(-1) is a no-op, and the process ran as the container's root.
refuse uidm1 'c["process"]["user"]["uid"] = 4294967295' "process.user.uid 4294967295"
refuse gidm1 'c["process"]["user"]["gid"] = 4294967295' "process.user.gid 4294967295"
refuse agidm1 'c["process"]["user"]["additionalGids"] = [4294967295]' "additionalGids[] 4294967295"
refuse vout 'c["annotations"] = {"io.airlock.verdict": "/etc/passwd"}' "outside the verdict directory"
ln -s /etc "$AIRLOCK_VERDICT_DIR/link"
refuse vlink 'c["annotations"] = {"io.airlock.verdict": "link/passwd"}' "io.airlock.verdict"
refuse vdots 'c["annotations"] = {"io.airlock.verdict": "../x.json"}' "io.airlock.verdict"
[ ! -e "$work/x.json" ] || al_fail "a verdict was written above the verdict directory"

# ---- airlock-runc is the same program ---------------------------------------------------------------
"$(dirname "$AIRLOCK")/airlock-runc" --root "$state" state nosuch 2>"$work/runc.err" && al_fail "airlock-runc state of an unknown id succeeded"
al_assert_contains "$(cat "$work/runc.err")" "does not exist" "airlock-runc answers as airlock oci"
"$(dirname "$AIRLOCK")/airlock-runc" --systemd-cgroup --root "$state" state x 2>"$work/runc.err" && al_fail "--systemd-cgroup accepted"
al_assert_contains "$(cat "$work/runc.err")" "systemd-cgroup" "--systemd-cgroup is refused clearly"
oci features
al_assert_rc 0
al_assert_eq "$(al_json_get "$AL_OUT" linux.cgroup.systemd)" false "features: no systemd cgroups"
[ -z "$(ls -A "$state")" ] || al_fail "state left behind: $(ls "$state")"
for h in /sys/fs/cgroup/*/"$cgparent"; do
	[ -z "$(find "$h" -mindepth 1 -type d)" ] || al_fail "container cgroups left in $h"
done
al_pass "no state directory and no container cgroup is left"
