#!/usr/bin/env bash
# oci_containerd.sh — containerd runs containers through airlock-runc (`ctr run --runc-binary`): output,
# exit codes, exec, ps, metrics, pause, kill, removal; the container is confined as airlock promises
# (no network, Landlock, seccomp, an unprivileged host uid, no capabilities), judged from outside; and
# nothing is left after `ctr task rm` / `ctr c rm`, or after the shim is killed.
. "$(dirname "$0")/../lib.sh"

command -v containerd >/dev/null && command -v ctr >/dev/null || al_skip "containerd is not installed (scripts/deps.sh)"
[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
work=$(al_tmpdir)
mark=$(al_marker)
RUNC="$(dirname "$AIRLOCK")/airlock-runc"
[ -x "$RUNC" ] || al_fail "$RUNC (the link the build makes) is missing"

if [ "$AL_TEST_MODE" = user ]; then
	# containerd needs root; what an unprivileged caller can do is run airlock-runc on ctr's own
	# default spec, which it must refuse (no user namespace in it: a range of ids to map).
	state=$(al_tmpdir 0777)
	mkdir -p "$state/b/rootfs"
	ctr oci spec | "$AL_PY" -c 'import json, sys; c = json.load(sys.stdin); c["process"]["args"] = ["true"]; print(json.dumps(c))' >"$state/b/config.json"
	chmod -R a+rX "$state"
	al_run oci --root "$state/s" create --bundle "$state/b" u1
	al_assert_rc 1
	al_assert_contains "$AL_ERR" "needs root" "ctr's default spec, as an unprivileged user"
	[ ! -e "$state/s/u1" ] || al_fail "a refused create left its state"
	exit 0
fi

# ---- a containerd of our own: its root, state and socket under the test's directory ---------------
ns="al$mark"
sock="$work/c.sock"
cat >"$work/config.toml" <<EOF
version = 2
root = "$work/root"
state = "$work/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = "$work/debug.sock"
[plugins."io.containerd.grpc.v1.cri"]
  disable = true
EOF
# The shim passes containerd's environment on to airlock-runc: the audit log and the verdicts
# of this test's containers stay in its directory.
al_bg env AIRLOCK_AUDIT="$work/audit.jsonl" AIRLOCK_VERDICT_DIR="$work/verdicts" \
	containerd --config "$work/config.toml" --log-level warn
cd_pid=$AL_BG_PID
C=(ctr -a "$sock" -n "$ns")
for _ in $(seq 100); do "${C[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
"${C[@]}" version >/dev/null || al_fail "containerd did not start"
cleanup_cd() {
	set +e # best effort: containerd's own exit status (143) is not the test's
	"${C[@]}" task ls -q 2>/dev/null | while read -r t; do "${C[@]}" task kill -s KILL "$t" 2>/dev/null; "${C[@]}" task rm -f "$t" 2>/dev/null; done
	"${C[@]}" c ls -q 2>/dev/null | xargs -r "${C[@]}" c rm 2>/dev/null
	"${C[@]}" image rm bb:latest >/dev/null 2>&1
	kill "$cd_pid" 2>/dev/null
	wait "$cd_pid" 2>/dev/null
	local h
	for h in /sys/fs/cgroup/*/"$ns" /sys/fs/cgroup/"$ns"; do [ ! -d "$h" ] || rmdir "$h" 2>/dev/null || true; done
	return 0
}
trap 'cleanup_cd; al_inner_cleanup' EXIT

"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$work/bb.tar"
"${C[@]}" image import --base-name bb "$work/bb.tar" >/dev/null || al_fail "ctr image import failed"
PROBE=(--mount "type=bind,src=$AL_PROBE_DIR,dst=/probe,options=rbind:ro")
# The verdict's end, "status exit_code signal" (null where JSON has null); the exit status keeper
# of a container (its pid in airlock-runc's state); whether a pid is gone (a zombie counts).
verdict_end() {
	"$AL_PY" -c 'import json, sys; v = json.load(open(sys.argv[1]))
print(" ".join(json.dumps(v[k]) for k in ("status", "exit_code", "signal")).replace(chr(34), ""))' "$work/verdicts/$1"
}
keeper_of() { "$AL_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["keeper"]["pid"])' "$work/runc/$ns/$1/state.json"; }
gone() { [ ! -d "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
crun() { # ctr run through airlock-runc; sets AL_RC, AL_OUT, AL_ERR
	AL_RC=0
	"${C[@]}" run --runc-binary "$RUNC" --runc-root "$work/runc" "$@" >"$work/out" 2>"$work/err" || AL_RC=$?
	AL_OUT=$(cat "$work/out")
	AL_ERR=$(cat "$work/err")
	al_log "ctr run $* -> rc $AL_RC"
}

# ---- output and exit code ---------------------------------------------------------------------------
crun --rm --annotation io.airlock.verdict=r1.json bb:latest r1 sh -c "echo out-$mark; exit 7"
al_assert_eq "$AL_RC" 7 "ctr run's exit code is the container's"
al_assert_contains "$AL_OUT" "out-$mark" "ctr run's stdout is the container's"
al_assert_eq "$(verdict_end r1.json)" "$(al_oci_end exited 7 null)" "the verdict io.airlock.verdict asked for: exited, exit_code 7 as ctr run's"
al_assert_eq "$(al_json_get "$work/verdicts/r1.json" enforced.seccomp.airlock)" default "verdict: airlock's allowlist"
grep -q '"sandbox":"r1".*"event":"end"\|"event":"end".*"sandbox":"r1"' "$work/audit.jsonl" || al_fail "no audit end record for r1"

# ---- the config's own seccomp profile (ctr --seccomp) is stacked on airlock's; a terminal ------------
crun --rm --seccomp bb:latest r5 sh -c 'grep Seccomp_filters /proc/self/status'
al_assert_contains "$AL_OUT" "Seccomp_filters:	2" "the config's filter and airlock's allowlist, both"
AL_RC=0
out=$(script -qec "ctr -a $sock -n $ns run --rm -t --runc-binary $RUNC --runc-root $work/runc bb:latest r6 sh -c 'tty; exit 6'" /dev/null) || AL_RC=$?
al_assert_eq "$AL_RC" 6 "ctr run -t: the exit code through a terminal"
al_assert_contains "$out" "/dev/pts/0" "ctr run -t: the process has the console socket's pty"

# ---- confinement, judged from outside -----------------------------------------------------------------
al_listen "$work/listen.log"
crun --rm "${PROBE[@]}" bb:latest r2 sh -c "/probe/al-probe status; /probe/al-probe connect 127.0.0.1 $AL_LISTEN_TCP;
	/probe/al-try-syscall mount ptrace keyctl; echo x > /proc/self/comm; echo comm=\$?"
al_assert_eq "$(al_kv CapEff)" 0000000000000000 "no effective capability (ctr's spec asks for 14)"
al_assert_eq "$(al_kv CapBnd)" 0000000000000000 "an empty bounding set"
al_assert_eq "$(al_kv NoNewPrivs)" 1 "no_new_privs"
al_assert_eq "$(al_kv Seccomp)" 2 "a seccomp filter"
al_assert_contains "$AL_OUT" "mount errno=EPERM" "seccomp answers mount (EFAULT unfiltered)"
al_assert_contains "$AL_OUT" "keyctl errno=EPERM" "seccomp answers keyctl (EOPNOTSUPP unfiltered)"
al_assert_contains "$AL_OUT" "comm=1" "Landlock refuses a write to /proc/self/comm that the mount allows"
al_assert_not_contains "$AL_OUT" "connect=OK" "the host's 127.0.0.1 is not reachable"
sleep 0.2
al_listen_stop
al_assert_not_contains "$(cat "$work/listen.log")" "tcp-accept" "the host's listener saw no connection"

# ---- a detached container: uid, exec, ps, metrics, pause, kill, removal ------------------------------
crun -d --memory-limit 67108864 --annotation io.airlock.verdict=d1.json bb:latest d1 sh -c "sleep 300; : $mark-d1"
al_assert_eq "$AL_RC" 0 "ctr run -d"
k1=$(keeper_of d1)
al_assert_eq "$(cat "/proc/$k1/comm")" airlock-keeper "d1's exit status keeper runs"
# The cgroup's limits, read from outside (v1 hierarchies, or v2): the config's memory, and
# airlock's default pids limit for a config that sets none.
cgval() { # FILE-V1 FILE-V2
	if [ -d "/sys/fs/cgroup/memory/$ns/d1" ]; then cat "/sys/fs/cgroup/${1%%.*}/$ns/d1/$1"; else cat "/sys/fs/cgroup/$ns/d1/$2"; fi
}
al_assert_eq "$(cgval memory.limit_in_bytes memory.max)" 67108864 "ctr run --memory-limit is the container's cgroup limit"
al_assert_eq "$(cgval pids.max pids.max)" 1024 "airlock's default pids limit where the config sets none"
pid=$("${C[@]}" task ls | awk '$1 == "d1" { print $2 }')
[ -n "$pid" ] && [ -d "/proc/$pid" ] || al_fail "task d1 has no live pid ($pid)"
# The image's User (app: uid 1000 in tests/image/mkoci.py's image), mapped into the unprivileged range.
al_assert_eq "$(al_host_uid "$pid")" "$((AL_ID_BASE + 1000))" "the container's user (the image's app) is an unprivileged host uid"
AL_RC=0
out=$("${C[@]}" task exec --exec-id e1 d1 sh -c "echo exec-$mark; grep CapEff /proc/self/status; exit 4" 2>&1) || AL_RC=$?
al_assert_eq "$AL_RC" 4 "ctr task exec's exit code"
al_assert_contains "$out" "exec-$mark" "ctr task exec's output"
al_assert_contains "$out" "0000000000000000" "the exec'd process holds no capability either"
al_assert_contains "$("${C[@]}" task ps d1)" "$pid" "ctr task ps lists the init"
al_assert_contains "$("${C[@]}" task metrics d1)" "pids.current" "ctr task metrics reads the container's cgroup"
"${C[@]}" task pause d1
al_assert_contains "$("${C[@]}" task ls)" "PAUSED" "ctr task pause"
"${C[@]}" task resume d1
al_assert_contains "$("${C[@]}" task ls)" "RUNNING" "ctr task resume"
"${C[@]}" task kill -s KILL d1
for _ in $(seq 50); do "${C[@]}" task ls | grep -q 'd1.*STOPPED' && break; sleep 0.1; done
al_assert_contains "$("${C[@]}" task ls)" "STOPPED" "ctr task kill"
# ctr 1.6 has no `task wait`: `task rm` reports the exit status containerd got from the shim.
"${C[@]}" task rm d1 >"$work/rm.out" 2>&1
al_assert_contains "$(cat "$work/rm.out")" "exit code 137" "ctr task rm: containerd's exit status of d1 is 128 + SIGKILL"
al_assert_eq "$(verdict_end d1.json)" "$(al_oci_end signaled null 9)" "the verdict: signaled by 9, as containerd reports it"
gone "$k1" || al_fail "d1's keeper $k1 outlived ctr task rm"
"${C[@]}" c rm d1
al_wait_marker_gone "$mark-d1" 5 || al_fail "a process of d1 outlived ctr task rm"
[ ! -e "$work/runc/$ns/d1" ] || al_fail "airlock-runc's state of d1 is left"
[ ! -d "/sys/fs/cgroup/pids/$ns/d1" ] && [ ! -d "/sys/fs/cgroup/$ns/d1" ] || al_fail "d1's cgroup is left"
al_pass "nothing of d1 is left after ctr task rm and ctr c rm"

# ---- the shim killed: containerd's cleanup (delete --force) takes the container ------------------------
crun -d --annotation io.airlock.verdict=d2.json bb:latest d2 sh -c "sleep 300; : $mark-d2"
al_assert_eq "$AL_RC" 0 "ctr run -d d2"
k2=$(keeper_of d2)
shim=$(pgrep -f -- "-namespace $ns -id d2 " | head -n1)
[ -n "$shim" ] || al_fail "no shim for d2"
kill -KILL "$shim"
al_wait_marker_gone "$mark-d2" 10 || al_fail "d2 outlived its killed shim"
for _ in $(seq 50); do [ -e "$work/runc/$ns/d2" ] || break; sleep 0.1; done
[ ! -e "$work/runc/$ns/d2" ] || al_fail "airlock-runc's state of d2 is left after the shim died"
gone "$k2" || al_fail "d2's keeper $k2 outlived its killed shim"
al_assert_eq "$(verdict_end d2.json)" "killed null 9" "the verdict: killed by containerd's delete --force"
"${C[@]}" task rm -f d2 >/dev/null 2>&1 || true
"${C[@]}" c rm d2
al_pass "nothing of d2 is left after its shim was killed"

# ---- a pod: a container joins another's network, ipc and uts namespaces (io.airlock.net=pod) -----------
crun -d bb:latest pod0 sh -c "sleep 300; : $mark-pod"
p0=$("${C[@]}" task ls | awk '$1 == "pod0" { print $2 }')
NS=(--with-ns "network:/proc/$p0/ns/net" --with-ns "ipc:/proc/$p0/ns/ipc" --with-ns "uts:/proc/$p0/ns/uts")
crun -d --annotation io.airlock.net=pod "${NS[@]}" bb:latest pod1 sh -c "sleep 300; : $mark-pod"
al_assert_eq "$AL_RC" 0 "a pod's container joins its namespaces"
p1=$("${C[@]}" task ls | awk '$1 == "pod1" { print $2 }')
al_assert_eq "$(readlink "/proc/$p1/ns/net")" "$(readlink "/proc/$p0/ns/net")" "the pod's network namespace is shared"
[ "$(readlink "/proc/$p1/ns/pid")" != "$(readlink "/proc/$p0/ns/pid")" ] || al_fail "the pid namespace was shared unasked"
al_assert_eq "$(al_host_uid "$p1")" "$((AL_ID_BASE + 1000))" "a pod's container still maps to an unprivileged host uid"
crun --rm "${NS[@]}" bb:latest pod2 true
[ "$AL_RC" != 0 ] || al_fail "joining a network namespace without io.airlock.net=pod ran"
al_assert_contains "$AL_ERR" "io.airlock.net=pod" "joining another network namespace needs the pod posture"
crun --rm --annotation io.airlock.net=pod --with-ns "network:/proc/$$/ns/net" bb:latest pod3 true
[ "$AL_RC" != 0 ] || al_fail "a container joined the host's network namespace"
al_assert_contains "$AL_ERR" "host's" "the host's own network namespace is never a pod's"
for t in pod0 pod1; do "${C[@]}" task kill -s KILL "$t"; done
for t in pod0 pod1; do
	for _ in $(seq 50); do "${C[@]}" task ls | grep -q "^$t .*STOPPED" && break; sleep 0.1; done
	"${C[@]}" task rm "$t" >/dev/null
	"${C[@]}" c rm "$t"
done
"${C[@]}" c rm pod2 pod3 >/dev/null 2>&1 || true
al_wait_marker_gone "$mark-pod" 5 || al_fail "a pod's process outlived its removal"

# ---- the container's root owns its image: an idmapped rootfs ------------------------------------------
# An image run as root (tests/image/mkoci.py root-owners: User 0:0, a root-only /root, a file of uid
# 70000), on containerd's native snapshotter (a directory of the host's ext4). Through the idmapped
# rootfs its root writes the image's root-owned directories and the cwd the runtime made (ctr --cwd
# /work: the image has none); the snapshot holds what it wrote as host uid 0, the image's own id,
# while the process is host uid AL_ID_BASE. A new entry in / stays refused (Landlock's rules never
# cover the root directory: they would cover /proc and /sys), a file of an unmapped id stays
# nobody's, and a root-owned host directory bound in stays unwritable (binds are not idmapped).
# On the overlay snapshotter (the default) the kernel cannot idmap the rootfs (an overlay mount
# takes no id mapping, only its layers do): the fallback, recorded.
"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$work/own.tar" root-owners
"${C[@]}" image import --base-name own "$work/own.tar" >/dev/null || al_fail "ctr image import of root-owners failed"
mkdir -p "$work/vol"
echo canary >"$work/vol/canary"
chmod 0755 "$work/vol"
crun -d --snapshotter native --cwd /work --annotation io.airlock.verdict=own.json \
	--mount "type=bind,src=$work/vol,dst=/vol,options=rbind:rw" own:latest own sh -c "{
	echo uid=\$(id -u); stat -c 'root-dir=%u' /
	echo etc > /etc/own-$mark && echo etc=ok
	busybox mkdir /var/lib/own-$mark && echo var > /var/lib/own-$mark/f && echo var=ok
	echo opt > /opt/app/own-$mark && echo opt=ok
	echo root > /root/own-$mark && echo root-home=ok
	echo cwd > own-$mark && echo cwd=ok
	echo x > /newfile-$mark || echo newfile=refused
	busybox mkdir /top-$mark || echo mkdir-top=refused
	echo x >> /opt/far.txt || echo far=refused
	echo x > /vol/canary || echo vol=refused
	echo done; } >/tmp/report-$mark 2>&1; : $mark-own; sleep 300"
al_assert_eq "$AL_RC" 0 "ctr run -d of the root-owners image ($AL_ERR)"
pid=$("${C[@]}" task ls | awk '$1 == "own" { print $2 }')
rootfs="$work/state/io.containerd.runtime.v2.task/$ns/own/rootfs"
for _ in $(seq 50); do grep -q '^done' "$rootfs/tmp/report-$mark" 2>/dev/null && break; sleep 0.1; done
out=$(cat "$rootfs/tmp/report-$mark" 2>/dev/null)
al_log "own: $out"
for w in uid=0 root-dir=0 etc=ok var=ok opt=ok root-home=ok cwd=ok newfile=refused mkdir-top=refused far=refused vol=refused; do
	al_assert_contains "$out" "$w" "the container's root, on its idmapped image: $w"
done
al_assert_contains "$out" "/newfile-$mark: Permission denied" "a new entry in / is refused (Landlock), though root owns /"
st="$work/runc/$ns/own/state.json"
al_assert_eq "$(al_json_get "$st" enforced.rootfs_idmap.mode)" idmapped "airlock-runc's record: the rootfs is idmapped"
fs=$(al_json_get "$st" enforced.rootfs_idmap.filesystem)
[ -n "$fs" ] && [ "$fs" != overlay ] || al_fail "the record names the native snapshot's filesystem, not '$fs'"
al_assert_eq "$(al_host_uid "$pid")" "$AL_ID_BASE" "the container's root is still the unprivileged host uid $AL_ID_BASE"
[ -d "$rootfs/etc" ] || al_fail "no rootfs of task own at $rootfs"
for f in etc/own-$mark var/lib/own-$mark/f opt/app/own-$mark root/own-$mark work/own-$mark work; do
	[ -e "$rootfs/$f" ] || al_fail "the container's root did not write /$f (its output: $(cat "$work/out" 2>/dev/null))"
	al_assert_eq "$(stat -c %u:%g "$rootfs/$f")" 0:0 "/$f on the host's snapshot: host uid 0, the image's id for the container's root"
done
al_assert_eq "$(cat "$rootfs/etc/own-$mark")" etc "what the container wrote under /etc is on its snapshot"
# What the host sees through the container's own mount (/proc/PID/root) is the mapped view.
al_assert_eq "$(stat -c %u "/proc/$pid/root/etc/own-$mark")" "$AL_ID_BASE" "through the container's mount, the host sees the mapped owner"
[ ! -e "$rootfs/newfile-$mark" ] && [ ! -e "$rootfs/top-$mark" ] || al_fail "a new entry in / was made"
al_assert_eq "$(cat "$work/vol/canary")" canary "a root-owned host directory bound in stays unwritable (not idmapped)"
al_assert_eq "$(stat -c %u "$work/vol")" 0 "the volume's owner is unchanged"
"${C[@]}" task kill -s KILL own
for _ in $(seq 50); do "${C[@]}" task ls | grep -q '^own .*STOPPED' && break; sleep 0.1; done
"${C[@]}" task rm own >/dev/null
"${C[@]}" c rm own
al_assert_eq "$(al_json_get "$work/verdicts/own.json" enforced.rootfs_idmap.mode)" idmapped "the verdict says the rootfs was idmapped"
al_wait_marker_gone "$mark-own" 5 || al_fail "a process of own outlived its removal"
# The fallback: containerd's overlay snapshot; the container runs as before, and says so.
crun --rm --cwd /work --annotation io.airlock.verdict=own2.json own:latest own2 sh -c "
	echo etc > /etc/own-$mark || echo etc=refused; cd /work && echo cwd=\$(pwd)"
al_assert_eq "$AL_RC" 0 "ctr run on the overlay snapshot ($AL_ERR)"
al_assert_contains "$AL_OUT" "etc=refused" "overlay: the image's root-owned /etc stays unwritable"
al_assert_contains "$AL_OUT" "cwd=/work" "overlay: the runtime still makes the cwd the image lacks"
al_assert_eq "$(al_json_get "$work/verdicts/own2.json" enforced.rootfs_idmap.mode)" unsupported "the verdict: no idmapped rootfs"
al_assert_eq "$(al_json_get "$work/verdicts/own2.json" enforced.rootfs_idmap.filesystem)" overlay "... on overlay"
al_assert_eq "$(al_json_get "$work/verdicts/own2.json" enforced.rootfs_idmap.error)" EINVAL "... which the kernel refuses (EINVAL)"

# ---- what the profile forbids is refused, with containerd's error naming it ----------------------------
crun --rm --privileged bb:latest r3 true
[ "$AL_RC" != 0 ] || al_fail "a privileged container ran"
al_assert_contains "$AL_ERR" "privileged" "ctr run --privileged is refused"
crun --rm --net-host bb:latest r4 true
[ "$AL_RC" != 0 ] || al_fail "a host-network container ran"
al_assert_contains "$AL_ERR" "host's network" "ctr run --net-host is refused"
"${C[@]}" c rm r3 r4 >/dev/null 2>&1 || true
[ -z "$(ls -A "$work/runc/$ns")" ] || al_fail "airlock-runc's state is left: $(ls "$work/runc/$ns")"
al_pass "no container state is left under --runc-root"
