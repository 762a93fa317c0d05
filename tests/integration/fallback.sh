#!/bin/bash
# fallback.sh — on a host that refuses user namespaces (simulated with bwrap --disable-userns),
# airlock refuses to run unless the policy allows the fallback; with --fallback, Landlock and
# seccomp alone keep host files, the network and the process tree in check, and it says so.
. "$(dirname "$0")/../lib.sh"

command -v bwrap >/dev/null || al_fail "bwrap is needed to simulate a host without user namespaces"

# fb ARGS...: airlock with user namespaces disabled (the caller's identity is uid 1000 in bwrap's
# own namespace: root in user mode is nobody, so the payload is never host root there). Such a
# host (an unprivileged container) delegates no cgroup either: the default limits run best effort,
# knowingly (limits.sh proves they are refused otherwise).
fb() {
	local sub=$1
	shift
	set -- "$sub" --best-effort-limits "$@"
	AL_RUN_N=$((AL_RUN_N + 1))
	AL_CMD="[no userns] airlock $*"
	AL_OUT_FILE="$AL_TEST_ROOT/run$AL_RUN_N.out"
	AL_ERR_FILE="$AL_TEST_ROOT/run$AL_RUN_N.err"
	AL_RC=0
	"${AL_SETPRIV[@]}" bwrap --dev-bind / / --unshare-user --uid 1000 --gid 1000 --disable-userns \
		-- "$AL_AIRLOCK_BIN" "$@" >"$AL_OUT_FILE" 2>"$AL_ERR_FILE" || AL_RC=$?
	AL_OUT=$(cat "$AL_OUT_FILE")
	AL_ERR=$(cat "$AL_ERR_FILE")
	al_log "[$AL_RUN_N] $AL_CMD -> rc $AL_RC"
}
j() { al_json_get "$AL_OUT" "$1"; }

# ---- without the policy's consent: refused, naming the missing feature
fb run -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "namespaces" "refusal without --fallback"
fb run --fallback --require userns -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "floor requires namespaces" "refusal when the floor needs namespaces"
# No mount namespace: another root (--rootfs, an image) cannot be shown, and is never swapped for
# the host's silently.
tree=$(al_tmpdir 0755)
mkdir -m 0755 "$tree/usr"
fb run --fallback --rootfs "$tree" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "--rootfs needs a mount namespace" "refusal of a rootfs without a mount namespace"

# ---- with --fallback: runs, and reports exactly what it enforced
host=$(al_tmpdir 0777)
echo canary >"$host/canary"
chmod 0666 "$host/canary"
echo secret >"$host/secret"
chmod 0644 "$host/secret" # DAC lets anyone read it: only Landlock can say no
fb run --fallback --json --ro "$AL_PROBE_DIR" -- /bin/sh -c "
	$AL_PROBE_DIR/al-probe write $host/canary clobbered
	$AL_PROBE_DIR/al-probe read $host/secret
	$AL_PROBE_DIR/al-probe write ./mine fine && $AL_PROBE_DIR/al-probe read ./mine"
al_assert_rc 0
al_assert_eq "$(j enforced.fallback)" true "enforced.fallback"
al_assert_eq "$(j enforced.namespaces.user)" false "enforced.namespaces.user"
al_assert_eq "$(j enforced.pivot_root)" false "enforced.pivot_root"
al_assert_eq "$(j enforced.disk)" false "enforced.disk"
al_assert_eq "$(j enforced.seccomp)" default "enforced.seccomp"
al_assert_eq "$(al_json_type "$AL_OUT" enforced.landlock)" object "enforced.landlock"
out=$(j stdout.data)
al_assert_contains "$out" "write=EACCES" "write to a world-writable host file"
al_assert_contains "$out" "read=EACCES" "read of a world-readable host file outside the rules"
al_assert_contains "$out" "write=OK
fine" "the workspace is writable"
al_assert_eq "$(cat "$host/canary")" canary "host canary"
ws=$(j enforced.workspace)
[ ! -e "$ws" ] || al_fail "the throwaway workspace $ws was left behind"
al_pass "host files refused, workspace usable and removed"

# ---- network: no inet socket at all, and the listener hears nothing
log="$AL_TEST_ROOT/listen.log"
al_listen "$log"
fb run --fallback --ro "$AL_PROBE_DIR" -- /bin/sh -c "$AL_PROBE_DIR/al-probe connect 127.0.0.1 $AL_LISTEN_TCP; $AL_PROBE_DIR/al-probe udp-send 127.0.0.1 $AL_LISTEN_UDP"
al_assert_contains "$AL_OUT" "socket=EPERM" "TCP socket"
sleep 0.2
al_listen_stop
al_assert_eq "$(cat "$log")" "" "bytes or connections seen by the host listener"

# ---- nothing outlives the job: a setsid + double-forked daemon dies with it, also at a timeout
for t in none 1; do
	m=$(al_marker)
	fb run --fallback --time "$t" --ro "$AL_PROBE_DIR" -- "$AL_PROBE_DIR/al-probe" daemon "$m" 30 "$([ "$t" = none ] && echo 0 || echo 30)"
	[ "$t" = none ] && al_assert_rc 0
	[ "$t" = 1 ] && al_assert_rc 124
	al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) outlived its job (--time $t)"
done
al_pass "daemons are gone after the job and after a timeout"
