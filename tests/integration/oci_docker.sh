#!/usr/bin/env bash
# oci_docker.sh — Docker runs containers through airlock-runc (`docker run --runtime=airlock`): a private
# dockerd (Debian's docker.io) with its own containerd, data root, exec root and sockets, no bridge and
# no iptables (the host's network is never touched), an image made locally (`docker import` of a
# busybox tree). run, run -d, exec, logs, stop, kill, rm, a terminal; Docker's libnetwork hook and its
# ping_group_range sysctl; Docker's seccomp profile stacked under airlock's; --privileged, --pid=host
# and --network host refused. And config.json's hooks as airlock-runc runs them (order, state on stdin,
# env, timeout, failure), through a bundle of the test's own.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
RUNC="$(dirname "$AIRLOCK")/airlock-runc"
[ -x "$RUNC" ] || al_fail "$RUNC (the link the build makes) is missing"
work=$(al_tmpdir)
mark=$(al_marker)

if [ "$AL_TEST_MODE" = user ]; then
	# dockerd needs root; an unprivileged airlock-runc refuses a config like Docker's (no user
	# namespace in it: a range of ids to map), hooks and all, and runs none of its hooks.
	state=$(al_tmpdir 0777)
	mkdir -p "$state/b/rootfs"
	"$AL_PY" - "$state/b" "$work/ran" <<'EOF'
import json, sys
d, ran = sys.argv[1:3]
c = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["true"], "cwd": "/"},
     "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")],
               "sysctl": {"net.ipv4.ping_group_range": "0 2147483647"}},
     "hooks": {"prestart": [{"path": "/bin/sh", "args": ["sh", "-c", "touch " + ran]}]}}
json.dump(c, open(d + "/config.json", "w"))
EOF
	chmod -R a+rX "$state"
	al_run oci --root "$state/s" create --bundle "$state/b" u1
	al_assert_rc 1
	al_assert_contains "$AL_ERR" "needs root" "a Docker-like config, as an unprivileged user"
	[ ! -e "$work/ran" ] || al_fail "a refused create ran its prestart hook"
	exit 0
fi

# ---- config.json's hooks, through airlock-runc alone ---------------------------------------------------
# A bundle whose hooks write what they saw (argv, stdin's state, an env variable) into log, in order.
bundle="$work/hb"
mkdir -p "$bundle/rootfs/bin"
cp /bin/busybox "$bundle/rootfs/bin/"
for a in sh cat echo true sleep; do ln -sf busybox "$bundle/rootfs/bin/$a"; done
log="$work/hooks.log"
mkhooks() { # ARGS-JSON PYTHON-EDITING-c
	"$AL_PY" - "$bundle" "$log" "$1" "$2" <<'EOF'
import json, sys
d, log, args, extra = sys.argv[1:5]
def hook(name, more="", **kw):
    h = {"path": "/bin/sh", "args": ["sh", "-c", "{ echo %s $0 \"$HOOKVAR\"; cat; echo; } >> %s%s" % (name, log, more), name],
         "env": ["HOOKVAR=v-" + name]}
    h.update(kw)
    return h
c = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "hostname": "hk",
     "process": {"args": json.loads(args), "env": ["PATH=/bin", "HOOKVAR=the-process"], "cwd": "/",
                 "user": {"uid": 0, "gid": 0}},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]}],
     "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")],
               "sysctl": {"net.ipv4.ping_group_range": "0 2147483647"}},
     "annotations": {"org.example": "x"},
     "hooks": {p: [hook(p)] for p in ("prestart", "createRuntime", "poststart", "poststop")}}
# The container's side, on the container's stdout (create's here): createContainer as the
# namespaces' root before pivot_root (the host's /bin/sh), startContainer confined in the container
# (its own sh; no env given: the process's).
c["hooks"]["createContainer"] = [{"path": "/bin/sh", "args": ["sh", "-c", "echo createContainer \"$HOOKVAR\"; cat; echo"],
                                  "env": ["HOOKVAR=v-createContainer"]}]
c["hooks"]["startContainer"] = [{"path": "/bin/sh", "args": ["sh", "-c", "echo startContainer \"$HOOKVAR\"; cat; echo"]}]
exec(extra)
json.dump(c, open(d + "/config.json", "w"))
EOF
}
oci() { al_run oci --root "$work/state" "$@"; }
export AIRLOCK_AUDIT="$work/audit.jsonl"
touch "$log"
mkhooks '["sh", "-c", "echo process-$HOOKVAR; cat /proc/sys/net/ipv4/ping_group_range"]' ''
oci create --bundle "$bundle" h1
al_assert_rc 0
create_out=$AL_OUT_FILE
order=$(grep -o '^[a-zA-Z]* [a-zA-Z]* v-[a-zA-Z]*' "$log" | awk '{print $1}' | tr '\n' ' ')
al_assert_eq "$order" "prestart createRuntime " "create runs prestart, then createRuntime"
al_assert_contains "$AL_OUT" "createContainer v-createContainer" "create runs createContainer in the container's init"
al_assert_not_contains "$AL_OUT" "startContainer" "startContainer waits for start"
al_assert_contains "$(cat "$log")" "prestart prestart v-prestart" "a hook's args (argv[0] from args) and its env"
state_line=$(grep '"status":"creating"' "$log" | head -1)
al_assert_contains "$state_line" '"id":"h1"' "the state on a hook's stdin names the container"
al_assert_contains "$state_line" "\"bundle\":\"$bundle\"" "... its bundle"
al_assert_contains "$state_line" '"org.example":"x"' "... its annotations"
pid=$("$AL_PY" -c 'import json, sys; print(json.loads(sys.argv[1])["pid"])' "$state_line")
oci state h1
al_assert_eq "$(al_json_get "$AL_OUT" pid)" "$pid" "the state's pid is the container's init, as seen by the host"
oci start h1
al_assert_rc 0
sleep 0.5
al_assert_contains "$(cat "$log")" '"status":"running"' "start runs poststart with the state running"
oci delete h1
al_assert_rc 0
al_assert_contains "$(tail -2 "$log")" '"status":"stopped"' "delete runs poststop with the state stopped"
[ ! -e "$work/state/h1" ] || al_fail "delete left h1's state"

# The process's output: the sysctl narrowed to the mapped gids (Docker asks 0 2147483647, which the
# kernel refuses in a user namespace), after startContainer ran in the container with the
# process's env and the state created.
out=$(cat "$create_out")
al_assert_contains "$out" "startContainer the-process" "startContainer ran in the container with the process's env"
al_assert_contains "$out" '"status":"created"' "startContainer's state is created"
al_assert_contains "$out" "process-the-process" "the process ran after its startContainer hook"
al_assert_contains "$out" "$(printf '0\t65535')" "net.ipv4.ping_group_range narrowed to the mapped gids 0-65535"

# Failure: a prestart hook that exits 3 fails create, naming it and what it printed; the container
# is gone and its poststop hooks ran (as runc's destroy). A hook past its timeout is killed.
: >"$log"
mkhooks '["true"]' 'c["hooks"]["prestart"] = [hook("prestart", "; echo bad-'"$mark"' >&2; exit 3")]'
oci create --bundle "$bundle" h3
al_assert_rc 1
al_assert_contains "$AL_ERR" "prestart hook #0 (/bin/sh) exited with status 3" "a failing prestart hook fails create"
al_assert_contains "$AL_ERR" "bad-$mark" "the error carries the hook's stderr"
al_assert_not_contains "$(cat "$log")" createRuntime "the hooks after the failed one did not run"
al_assert_contains "$(cat "$log")" '"status":"stopped"' "a failed create ran the poststop hooks"
[ ! -e "$work/state/h3" ] || al_fail "a failed create left its state"
mkhooks '["true"]' 'c["hooks"]["createRuntime"] = [{"path": "/bin/sleep", "args": ["sleep", "30"], "timeout": 1}]'
t0=$(date +%s)
oci create --bundle "$bundle" h4
al_assert_rc 1
al_assert_contains "$AL_ERR" "createRuntime hook #0 (/bin/sleep) ran past its timeout of 1 s" "a hook past its timeout fails create"
[ $(($(date +%s) - t0)) -lt 10 ] || al_fail "the timed-out hook was not killed at its timeout"
# A failing poststart is a warning: the container runs on (the spec's semantics).
mkhooks '["sleep", "30"]' 'c["hooks"]["poststart"] = [{"path": "/bin/false"}]'
oci create --bundle "$bundle" h5
oci start h5
al_assert_rc 0
al_assert_contains "$AL_ERR" "warning: poststart hook #0 (/bin/false) exited with status 1" "a failing poststart hook is a warning"
oci state h5
al_assert_eq "$(al_json_get "$AL_OUT" status)" running "the container runs on after a failing poststart hook"
oci delete -f h5
# Under a confined profile, a hook that is the image's own file (beneath the rootfs) is refused:
# it would run as the runtime's caller.
mkhooks '["true"]' 'c["hooks"] = {"prestart": [{"path": d + "/rootfs/bin/sh", "args": ["sh", "-c", "touch '"$work"'/ran-image"]}]}'
oci create --bundle "$bundle" h6
al_assert_rc 1
al_assert_contains "$AL_ERR" "is the container's own file (beneath its rootfs)" "an image's program as a host hook is refused"
[ ! -e "$work/ran-image" ] || al_fail "the refused image hook ran"
mkhooks '["true"]' 'c["hooks"] = {"postStart": [{"path": "/bin/true"}]}'
oci create --bundle "$bundle" h7
al_assert_rc 1
al_assert_contains "$AL_ERR" "unknown hook point hooks.postStart" "an unknown hook point is refused, not skipped"

# ---- a private dockerd ------------------------------------------------------------------------------
if ! command -v dockerd >/dev/null || [ ! -x /usr/bin/docker ] || ! command -v containerd >/dev/null; then
	al_skip "docker.io (dockerd, docker, containerd) is not installed (scripts/deps.sh)"
fi
d="$work/d"
mkdir -p "$d"
cat >"$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd-root"
state = "$d/containerd-state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = "$d/containerd-debug.sock"
[plugins."io.containerd.grpc.v1.cri"]
  disable = true
EOF
# The daemon.json docs/docker.md gives, with this build's airlock-runc.
cat >"$d/daemon.json" <<EOF
{ "runtimes": { "airlock": { "path": "$RUNC" } } }
EOF
# containerd of our own (never /run/containerd's); the shim passes its environment on to
# airlock-runc: the audit log stays in the test's directory.
al_bg env AIRLOCK_AUDIT="$d/audit.jsonl" containerd --config "$d/containerd.toml" --log-level warn 2>"$d/containerd.log"
cd_pid=$AL_BG_PID
for _ in $(seq 100); do [ -S "$d/containerd.sock" ] && break; sleep 0.1; done
# No bridge, no iptables, no forwarding or masquerading: the host's network stays as it is.
al_bg dockerd --config-file "$d/daemon.json" --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/docker.pid" \
	-H "unix://$d/docker.sock" --containerd "$d/containerd.sock" --bridge=none --iptables=false \
	--ip6tables=false --ip-forward=false --ip-masq=false --storage-driver vfs \
	--exec-opt native.cgroupdriver=cgroupfs --log-level warn 2>"$d/dockerd.log"
dd_pid=$AL_BG_PID
D=(/usr/bin/docker -H "unix://$d/docker.sock")
for _ in $(seq 150); do "${D[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
"${D[@]}" version >/dev/null || al_fail "the private dockerd did not start"
cleanup_docker() {
	set +e
	"${D[@]}" ps -aq 2>/dev/null | xargs -r "${D[@]}" rm -f >/dev/null 2>&1
	kill "$dd_pid" 2>/dev/null
	wait "$dd_pid" 2>/dev/null
	kill "$cd_pid" 2>/dev/null
	wait "$cd_pid" 2>/dev/null
	# dockerd keeps its data root and exec root mounted shared: gone before the directory is removed.
	grep -o " $d[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null
	rmdir /sys/fs/cgroup/*/docker /sys/fs/cgroup/docker 2>/dev/null
	return 0
}
trap 'cleanup_docker; al_inner_cleanup' EXIT
fwd_before=$(cat /proc/sys/net/ipv4/ip_forward)
links_before=$(ip -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')

# The image: a busybox tree, imported (no registry).
mkdir -p "$d/bb/bin" "$d/bb/tmp" "$d/bb/etc" "$d/bb/var/lib" "$d/bb/root"
chmod 0700 "$d/bb/root"
cp /bin/busybox "$d/bb/bin/"
for a in sh echo cat id ls sleep true ps grep touch mkdir stat; do ln -sf busybox "$d/bb/bin/$a"; done
cp "$AL_PROBE" "$d/bb/bin/al-probe"
[ -z "${AL_TRY_SYSCALL:-}" ] || cp "$AL_TRY_SYSCALL" "$d/bb/bin/al-try-syscall"
chmod 1777 "$d/bb/tmp"
tar -C "$d/bb" -c . | "${D[@]}" import - "bb$mark:local" >/dev/null || al_fail "docker import failed"
drun() { # docker run through airlock; sets AL_RC, AL_OUT, AL_ERR
	AL_RC=0
	"${D[@]}" run --runtime=airlock "$@" >"$work/out" 2>"$work/err" || AL_RC=$?
	AL_OUT=$(cat "$work/out")
	AL_ERR=$(cat "$work/err")
	al_log "docker run $* -> rc $AL_RC"
}
img="bb$mark:local"

# ---- run: output, exit code, Docker's hook and sysctls, the networks ---------------------------------
drun --rm --network none "$img" sh -c "echo out-$mark; cat /proc/sys/net/ipv4/ping_group_range; ls /sys/class/net; exit 7"
al_assert_eq "$AL_RC" 7 "docker run's exit code is the container's (--network none: Docker's prestart hook ran)"
al_assert_contains "$AL_OUT" "out-$mark" "docker run's output"
al_assert_contains "$AL_OUT" "$(printf '0\t65535')" "Docker's ping_group_range, narrowed to the mapped gids"
al_assert_eq "$(echo "$AL_OUT" | tail -1)" lo "--network none: only lo"
drun --rm "$img" sh -c 'ls /sys/class/net'
al_assert_eq "$AL_RC" 0 "docker run with the bridgeless daemon's default network"
al_assert_eq "$AL_OUT" lo "the default network of a daemon without a bridge: only lo"

# ---- confinement: no capability, an unprivileged host uid, Docker's seccomp under airlock's ---------
drun --rm --network none "$img" sh -c 'al-probe status; grep Seccomp_filters /proc/self/status; al-try-syscall mount keyctl 2>&1; touch /proc/self/comm 2>&1; echo comm=$?'
al_assert_eq "$(al_kv CapEff)" 0000000000000000 "no effective capability (Docker's config asks for 14)"
al_assert_eq "$(al_kv CapBnd)" 0000000000000000 "an empty bounding set"
al_assert_eq "$(al_kv NoNewPrivs)" 1 "no_new_privs"
al_assert_contains "$AL_OUT" "Seccomp_filters:	2" "Docker's default seccomp profile and airlock's allowlist, both"
[ -z "${AL_TRY_SYSCALL:-}" ] || al_assert_contains "$AL_OUT" "mount errno=EPERM" "seccomp answers mount"
grep -q '"event":"start"' "$d/audit.jsonl" || al_fail "no audit record of Docker's containers"

# ---- run -d, exec, logs, stop, kill, rm --------------------------------------------------------------
id=$("${D[@]}" run -d --runtime=airlock --network none "$img" sh -c "echo started-$mark; trap 'echo got-term; exit 3' TERM; while :; do sleep 0.1; done")
[ -n "$id" ] || al_fail "docker run -d gave no id"
pid=$("${D[@]}" inspect -f '{{.State.Pid}}' "$id")
al_assert_eq "$(al_host_uid "$pid")" "$AL_ID_BASE" "the container's root is an unprivileged host uid"
AL_RC=0
out=$("${D[@]}" exec "$id" sh -c 'echo exec-ok; grep CapEff /proc/self/status; exit 4' 2>&1) || AL_RC=$?
al_assert_eq "$AL_RC" 4 "docker exec's exit code"
al_assert_contains "$out" exec-ok "docker exec's output"
al_assert_contains "$out" 0000000000000000 "the exec'd process holds no capability either"
al_assert_contains "$("${D[@]}" logs "$id" 2>&1)" "started-$mark" "docker logs"
"${D[@]}" stop -t 10 "$id" >/dev/null || al_fail "docker stop"
al_assert_eq "$("${D[@]}" inspect -f '{{.State.ExitCode}}' "$id")" 3 "docker stop: SIGTERM reached the container's trap"
al_assert_contains "$("${D[@]}" logs "$id" 2>&1)" got-term "docker logs after stop"
"${D[@]}" rm "$id" >/dev/null || al_fail "docker rm"
[ ! -d "/proc/$pid" ] || al_fail "the stopped container's init is still there"
id=$("${D[@]}" run -d --runtime=airlock --network none "$img" sleep 300)
pid=$("${D[@]}" inspect -f '{{.State.Pid}}' "$id")
"${D[@]}" kill "$id" >/dev/null || al_fail "docker kill"
al_assert_eq "$("${D[@]}" wait "$id")" 137 "docker kill: SIGKILL, 137"
"${D[@]}" rm "$id" >/dev/null
[ ! -d "/proc/$pid" ] || al_fail "the killed container's init is still there"
[ -z "$(ls "$d/exec/runtime-runc/moby" 2>/dev/null)" ] || al_fail "airlock-runc's state is left after docker rm"
AL_RC=0
out=$(script -qec "${D[*]} run --rm -t --runtime=airlock --network none $img sh -c 'tty; exit 6'" /dev/null) || AL_RC=$?
al_assert_eq "$AL_RC" 6 "docker run -t: the exit code through a terminal"
al_assert_contains "$out" /dev/pts/0 "docker run -t: a pty"

# ---- the container's root owns its image (Docker's vfs storage: an idmapped rootfs) --------------------
# Root inside writes the image's root-owned /etc, /var and /root and the cwd Docker names (-w /work:
# the image has none, the runtime makes it, as runc); Docker's storage holds them as host uid 0, the
# image's own id, while the process is host uid AL_ID_BASE. A new entry in / stays refused (Landlock)
# and a root-owned host directory given as a volume (-v) stays unwritable: binds are not idmapped.
mkdir -p "$d/vol"
echo canary >"$d/vol/canary"
id=$("${D[@]}" run -d --runtime=airlock --network none -w /work -v "$d/vol:/vol" "$img" sh -c "{
	echo uid=\$(id -u); stat -c 'root-dir=%u' /
	echo etc > /etc/own-$mark && echo etc=ok
	mkdir /var/lib/own-$mark && echo var > /var/lib/own-$mark/f && echo var=ok
	echo root > /root/own-$mark && echo root-home=ok
	echo cwd > own-$mark && echo cwd=\$(pwd)
	touch /newfile-$mark || echo newfile=refused
	echo x > /vol/canary || echo vol=refused
	echo done; } >/tmp/report-$mark 2>&1; sleep 300")
[ -n "$id" ] || al_fail "docker run -d of the ownership check gave no id"
pid=$("${D[@]}" inspect -f '{{.State.Pid}}' "$id")
for _ in $(seq 50); do
	f=$(find "$d/data/vfs/dir" -maxdepth 3 -path "*/tmp/report-$mark" 2>/dev/null | head -n1)
	[ -n "$f" ] && grep -q '^done' "$f" && break
	sleep 0.1
done
[ -n "$f" ] || al_fail "no report of the ownership check in Docker's storage"
root=${f%/tmp/report-$mark}
out=$(cat "$f")
for w in uid=0 root-dir=0 etc=ok var=ok root-home=ok cwd=/work newfile=refused vol=refused; do
	al_assert_contains "$out" "$w" "docker run, root inside, an idmapped rootfs: $w"
done
al_assert_eq "$(al_host_uid "$pid")" "$AL_ID_BASE" "the container's root is the unprivileged host uid $AL_ID_BASE"
for p in etc/own-$mark var/lib/own-$mark/f root/own-$mark work/own-$mark work; do
	al_assert_eq "$(stat -c %u:%g "$root/$p")" 0:0 "/$p in Docker's storage: host uid 0, the image's id for the container's root"
done
al_assert_eq "$(stat -c %u "/proc/$pid/root/etc/own-$mark")" "$AL_ID_BASE" "through the container's own mount, the host sees the mapped owner"
al_assert_eq "$(cat "$d/vol/canary")" canary "a root-owned volume stays unwritable"
st=$(ls "$d/exec/runtime-runc/moby/$id/state.json" 2>/dev/null || find "$d/exec" -path "*$id*/state.json" | head -n1)
al_assert_eq "$(al_json_get "$st" enforced.rootfs_idmap.mode)" idmapped "airlock-runc's record: the rootfs is idmapped"
"${D[@]}" rm -f "$id" >/dev/null

# ---- refusals, each naming the reason ----------------------------------------------------------------
drun --rm --privileged "$img" true
al_assert_eq "$AL_RC" 125 "--privileged is refused"
al_assert_contains "$AL_ERR" "asks for CAP_SYS_ADMIN (a privileged container): refused" "--privileged: why"
drun --rm --network none --pid=host "$img" true
al_assert_eq "$AL_RC" 125 "--pid=host is refused"
al_assert_contains "$AL_ERR" "shares the host's pid namespace: refused" "--pid=host: why"
drun --rm --network none --ipc=host "$img" true
al_assert_eq "$AL_RC" 125 "--ipc=host is refused"
al_assert_contains "$AL_ERR" "shares the host's ipc namespace: refused" "--ipc=host: why"
drun --rm --network host "$img" true
al_assert_eq "$AL_RC" 125 "--network host is refused"
al_assert_contains "$AL_ERR" "joins the host's network namespace" "--network host: why"
drun --rm --network none --cap-add SYS_PTRACE "$img" true
al_assert_eq "$AL_RC" 125 "--cap-add SYS_PTRACE is refused"

# The host's network is as it was: no bridge, no new link, forwarding unchanged.
al_assert_eq "$(cat /proc/sys/net/ipv4/ip_forward)" "$fwd_before" "the host's ip_forward is unchanged"
al_assert_eq "$(ip -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')" "$links_before" "the host's links are unchanged"
al_pass "oci_docker"
