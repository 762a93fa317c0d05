#!/usr/bin/env bash
# oci_podman.sh — rootful podman with `--runtime airlock-runc` (conmon calls it as it calls runc): run with
# its exit code and output, exec, stop, rm, confined as airlock promises and leaving nothing behind.
. "$(dirname "$0")/../lib.sh"

command -v podman >/dev/null || al_skip "podman is not installed (scripts/deps.sh)"
[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
work=$(al_tmpdir)
mark=$(al_marker)
RUNC="$(dirname "$AIRLOCK")/airlock-runc"

if [ "$AL_TEST_MODE" = user ]; then
	# Rootless podman needs subordinate ids the test user has none of; what the user can do with
	# the runtime itself is ask it what it supports.
	al_run oci --root "$work/none" features
	al_assert_rc 0
	al_assert_eq "$(al_json_get "$AL_OUT" linux.seccomp.enabled)" true "features as an unprivileged user"
	exit 0
fi

# A podman of our own: storage, run directory, events and the runtime's audit under the test's dir.
# conmon gives the runtime an environment of its own, so the runtime podman calls is a wrapper
# that points airlock-runc's audit log and verdicts there.
printf '#!/bin/sh\nexport AIRLOCK_AUDIT=%s AIRLOCK_VERDICT_DIR=%s\nexec %s "$@"\n' \
	"$work/audit.jsonl" "$work/verdicts" "$RUNC" >"$work/airlock-runc"
chmod 0755 "$work/airlock-runc"
P=(podman --root "$work/storage" --runroot "$work/run" --runtime "$work/airlock-runc" --cgroup-manager cgroupfs
	--events-backend file --storage-driver overlay)
cleanup_pod() {
	set +e
	"${P[@]}" rm -a -f -t 0 >/dev/null 2>&1
	"${P[@]}" system reset -f >/dev/null 2>&1
	umount -R "$work/storage/overlay" 2>/dev/null
	return 0
}
trap 'cleanup_pod; al_inner_cleanup' EXIT
"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$work/bb.tar"
img=$("${P[@]}" load -q -i "$work/bb.tar" 2>/dev/null | sed -n 's/^Loaded image: //p' | head -n1)
[ -n "$img" ] || al_fail "podman load of the test's archive failed"
RUN=(run --pull never --network none --entrypoint sh)
# The verdict's end: "status exit_code signal" (null where JSON has null).
verdict_end() { echo "$(al_json_get "$work/verdicts/$1" status) $(al_json_get "$work/verdicts/$1" exit_code) $(al_json_get "$work/verdicts/$1" signal)"; }

AL_RC=0
out=$("${P[@]}" "${RUN[@]}" --rm --annotation io.airlock.verdict=p1.json "$img" -c "echo out-$mark; grep -E 'CapEff|NoNewPrivs' /proc/self/status; exit 4" 2>"$work/err") || AL_RC=$?
al_assert_eq "$AL_RC" 4 "podman run's exit code is the container's"
al_assert_eq "$(verdict_end p1.json)" "$(al_oci_end exited 4 null)" \
	"the verdict's exit code is podman's (conmon reaped the container's init)"
al_assert_contains "$out" "out-$mark" "podman run's output"
al_assert_contains "$out" "CapEff:	0000000000000000" "no capability (podman's spec asks for 11)"
al_assert_contains "$out" "NoNewPrivs:	1" "no_new_privs"

"${P[@]}" "${RUN[@]}" -d --name "p$mark" --annotation io.airlock.verdict=p2.json "$img" -c "sleep 300; : $mark-p" >/dev/null || al_fail "podman run -d failed: $(cat "$work/err")"
pid=$("${P[@]}" inspect -f '{{.State.Pid}}' "p$mark")
keeper=$(grep -l "\"pid\":$pid," /run/airlock-runc/*/state.json | xargs "$AL_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["keeper"]["pid"])')
al_assert_eq "$(cat "/proc/$keeper/comm")" airlock-keeper "the container's exit status keeper runs"
# The image's User (app: uid 1000 in tests/image/mkoci.py's image), mapped into the unprivileged range.
al_assert_eq "$(al_host_uid "$pid")" "$((AL_ID_BASE + 1000))" "the container's user (the image's app) is an unprivileged host uid"
AL_RC=0
out=$("${P[@]}" exec "p$mark" sh -c "echo exec-$mark; exit 3") || AL_RC=$?
al_assert_eq "$AL_RC" 3 "podman exec's exit code"
al_assert_contains "$out" "exec-$mark" "podman exec's output"
"${P[@]}" stop -t 1 "p$mark" >/dev/null 2>&1
code=$("${P[@]}" inspect -f '{{.State.ExitCode}}' "p$mark")
"${P[@]}" rm "p$mark" >/dev/null
# podman stop: SIGTERM, which the container's pid 1 (sh, no handler) ignores, then SIGKILL.
al_assert_eq "$code" 137 "podman's exit code of the stopped container"
al_assert_eq "$(verdict_end p2.json)" "$(al_oci_end signaled null 9)" \
	"the verdict: signaled by 9, as podman reports it (137)"
[ ! -d "/proc/$keeper" ] || grep -q '^State:[[:space:]]*Z' "/proc/$keeper/status" || al_fail "the keeper $keeper outlived podman rm"
al_wait_marker_gone "$mark-p" 5 || al_fail "a process of the container outlived podman rm"
for d in /run/airlock-runc/*; do
	[ ! -e "$d" ] || ! grep -q "$work" "$d/state.json" 2>/dev/null || al_fail "airlock-runc state left: $d"
done
al_pass "nothing is left after podman stop and rm"

# ---- the container's root owns its image --------------------------------------------------------------
# podman's overlay storage: the kernel cannot idmap an overlay mount (only its layers), so the
# fallback, recorded in the verdict; with vfs storage (a directory of the host's filesystem) the
# rootfs is idmapped: root inside writes the image's root-owned directories (its cwd, /opt/app, among
# them), which the host's storage holds as uid 0, the image's own id. (podman itself refuses a -w the
# image lacks.)
"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$work/own.tar" root-owners
AL_RC=0
out=$("${P[@]}" "${RUN[@]}" --rm --annotation io.airlock.verdict=o1.json "$(
	"${P[@]}" load -q -i "$work/own.tar" 2>/dev/null | sed -n 's/^Loaded image: //p' | head -n1)" \
	-c "echo x > /etc/own-$mark || echo etc=refused" 2>&1) || AL_RC=$?
al_assert_eq "$AL_RC" 0 "podman run on overlay storage ($out)"
al_assert_contains "$out" "etc=refused" "overlay: the image's root-owned /etc stays unwritable"
al_assert_eq "$(al_json_get "$work/verdicts/o1.json" enforced.rootfs_idmap.mode)" unsupported "the verdict: no idmapped rootfs on overlay"
al_assert_eq "$(al_json_get "$work/verdicts/o1.json" enforced.rootfs_idmap.error)" EINVAL "... the kernel's answer"
V=(podman --root "$work/vstorage" --runroot "$work/vrun" --runtime "$work/airlock-runc" --cgroup-manager cgroupfs
	--events-backend file --storage-driver vfs)
cleanup_vfs() { "${V[@]}" rm -a -f -t 0 >/dev/null 2>&1; "${V[@]}" system reset -f >/dev/null 2>&1; return 0; }
trap 'cleanup_vfs; cleanup_pod; al_inner_cleanup' EXIT
own=$("${V[@]}" load -q -i "$work/own.tar" 2>/dev/null | sed -n 's/^Loaded image: //p' | head -n1)
[ -n "$own" ] || al_fail "podman load into vfs storage failed"
"${V[@]}" "${RUN[@]}" -d --name "o$mark" --annotation io.airlock.verdict=o2.json "$own" -c "{
	echo uid=\$(id -u)
	echo etc > /etc/own-$mark && echo etc=ok
	busybox mkdir /var/lib/own-$mark && echo var > /var/lib/own-$mark/f && echo var=ok
	echo cwd > own-$mark && echo cwd=ok
	echo x > /newfile-$mark || echo newfile=refused
	echo done; } >/tmp/report-$mark 2>&1; : $mark-o; sleep 300" >/dev/null 2>"$work/err" || al_fail "podman run -d on vfs: $(cat "$work/err")"
pid=$("${V[@]}" inspect -f '{{.State.Pid}}' "o$mark")
root=$("${V[@]}" mount "o$mark")
for _ in $(seq 50); do grep -q '^done' "$root/tmp/report-$mark" 2>/dev/null && break; sleep 0.1; done
out=$(cat "$root/tmp/report-$mark" 2>/dev/null)
for w in uid=0 etc=ok var=ok cwd=ok newfile=refused; do
	al_assert_contains "$out" "$w" "podman, vfs storage, root inside: $w"
done
al_assert_eq "$(al_host_uid "$pid")" "$AL_ID_BASE" "the container's root is the unprivileged host uid $AL_ID_BASE"
for f in etc/own-$mark var/lib/own-$mark/f opt/app/own-$mark; do
	al_assert_eq "$(stat -c %u:%g "$root/$f")" 0:0 "/$f in podman's storage: uid 0, the image's id for the container's root"
done
"${V[@]}" rm -f -t 0 "o$mark" >/dev/null 2>&1
al_assert_eq "$(al_json_get "$work/verdicts/o2.json" enforced.rootfs_idmap.mode)" idmapped "the verdict: the rootfs was idmapped"
al_wait_marker_gone "$mark-o" 5 || al_fail "a process of the vfs container outlived podman rm"
al_pass "podman: the container's root owns its image (vfs), the fallback recorded (overlay)"
