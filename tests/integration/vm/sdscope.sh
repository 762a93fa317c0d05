#!/bin/bash
# sdscope.sh — an ordinary user in a cgroup it may not manage, with a systemd user manager of its
# own: airlock asks that manager for a delegated scope and enforces the default limits in it (a
# 600M allocation is OOM-killed under the 512M default), the scope is the manager's while airlock
# runs and gone after; --cgroup-systemd never refuses as before. Needs root, pure cgroup v2 and a
# /run it may mark as systemd-booted: the test VM (label vm-guest, run by vm.suite).
#
# The user's delegated subtree is made as systemd's user@.service makes it: a cgroup owned by
# the user (and its cgroup.procs, cgroup.threads, cgroup.subtree_control), with memory, pids and
# cpu in its cgroup.controllers, holding `systemd --user`. airlock starts beside the manager in
# a root-owned child of that subtree: a cgroup the user may not write, as a login session is.
. "$(dirname "$0")/../../lib.sh"

U=65534
[ "$AL_TEST_MODE" = root ] || al_skip "sets up a user's systemd as root (root mode only)"
[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || al_skip "needs a pure cgroup v2 host (the test VM)"
grep -qw memory /sys/fs/cgroup/cgroup.controllers || al_skip "no memory controller in cgroup2"
SYSTEMD=/usr/lib/systemd/systemd
[ -x "$SYSTEMD" ] || al_skip "no $SYSTEMD"
[ -x "$(dirname "$AIRLOCK")/airlock-scope" ] ||
	al_fail "no airlock-scope beside $AIRLOCK (built without libsystemd-dev?)"
# systemd --user runs only where the system looks booted with systemd; in the throwaway VM the
# test may say so (its /run is the VM's own tmpfs), never on a real host.
made_run=""
if [ ! -d /run/systemd/system ]; then
	[ -n "${AL_IN_VM:-}" ] || al_skip "/run/systemd/system is absent and this is not the test VM"
	mkdir -p /run/systemd/system
	made_run=1
fi

SLICE=/sys/fs/cgroup/airlock-sdtest-$$.slice
C=$SLICE/user@$U.service
RT=$AL_TEST_ROOT/xdg
HOMEDIR=$AL_TEST_ROOT/home
SD_PID=""

sd_cleanup() {
	# Everything the user's manager started (and any job left) dies with the slice. (set -e is on:
	# every step here may fail without ending the cleanup.)
	[ ! -e "$SLICE/cgroup.kill" ] || echo 1 >"$SLICE/cgroup.kill" 2>/dev/null || true
	[ -z "$SD_PID" ] || wait "$SD_PID" 2>/dev/null || true
	for _ in $(seq 50); do
		[ -d "$SLICE" ] || break
		find "$SLICE" -depth -type d -exec rmdir {} + 2>/dev/null || true
		sleep 0.1
	done
	[ ! -d "$SLICE" ] || al_log "could not remove $SLICE"
	[ -z "$made_run" ] || rmdir /run/systemd/system /run/systemd 2>/dev/null || true
	al_inner_cleanup
}
trap sd_cleanup EXIT

mkdir "$SLICE" "$C"
echo "+memory +pids +cpu" >"$SLICE/cgroup.subtree_control"
chown "$U:$U" "$C" "$C/cgroup.procs" "$C/cgroup.threads" "$C/cgroup.subtree_control"
mkdir -m 0700 "$RT" "$HOMEDIR"
chown "$U:$U" "$RT" "$HOMEDIR"
# airlock and airlock-scope side by side in a directory the user can reach.
mkdir -m 0755 "$AL_TEST_ROOT/sdbin"
install -m 0755 "$AIRLOCK" "$(dirname "$AIRLOCK")/airlock-scope" "$AL_TEST_ROOT/sdbin/"
BIN=$AL_TEST_ROOT/sdbin/airlock

# as_user CGROUP CMD...: CMD as the user, started in CGROUP, with the session's environment; its
# pid (CMD execs in place) in $AL_TEST_ROOT/as_user.pid.
as_user() {
	local cg=$1
	shift
	(
		echo "$BASHPID" >"$cg/cgroup.procs"
		echo "$BASHPID" >"$AL_TEST_ROOT/as_user.pid"
		cd "$AL_TEST_ROOT" || exit 1
		exec setpriv --reuid=$U --regid=$U --clear-groups -- env -i PATH=/usr/bin:/bin HOME="$HOMEDIR" \
			XDG_RUNTIME_DIR="$RT" "$@"
	)
}

as_user "$C" "$SYSTEMD" --user >"$AL_TEST_ROOT/manager.log" 2>&1 &
SD_PID=$!
AL_BG_PIDS+=("$SD_PID")
for _ in $(seq 200); do
	[ -S "$RT/systemd/private" ] && [ -d "$C/init.scope" ] && break
	sleep 0.1
done
[ -S "$RT/systemd/private" ] || al_fail "systemd --user did not start: $(tail -5 "$AL_TEST_ROOT/manager.log")"
# The session: a cgroup in the user's subtree that the user may not write.
mkdir "$C/session"
N=$C/session
[ "$(stat -c %u "$N")" = 0 ] || al_fail "the session cgroup must be root's"

# ---- airlock check names the manager.
check=$(as_user "$N" "$BIN" check)
al_assert_contains "$(grep '^user systemd scope' <<<"$check")" "yes" "airlock check: user systemd scope"
al_pass "airlock check: $(grep '^user systemd scope' <<<"$check")"

# ---- the default 512M limit holds: a 600M allocation is OOM-killed, in a scope of the manager's.
# (--time only because the VM may emulate its CPU: the memory limit is the default one.)
rc=0
as_user "$N" "$BIN" run --time 120s --json -- python3 -c 'bytearray(600 << 20)' >"$AL_TEST_ROOT/oom.json" \
	2>"$AL_TEST_ROOT/oom.err" || rc=$?
v=$(cat "$AL_TEST_ROOT/oom.json")
[ -n "$v" ] || al_fail "no verdict (rc $rc): $(cat "$AL_TEST_ROOT/oom.err")"
al_assert_eq "$(al_json_get "$v" status)" oom "600M under the default memory limit: status"
[ "$(al_json_get "$v" oom_kills)" -ge 1 ] || al_fail "oom_kills is $(al_json_get "$v" oom_kills)"
al_assert_eq "$(al_json_get "$v" enforced.cgroup)" \
	'{"version": "v2", "memory": true, "pids": true, "cpu": true}' "enforced.cgroup in the scope"
al_assert_eq "$(al_json_get "$v" limits_not_applied)" '[]' "every default limit applied"
al_pass "600M allocation OOM-killed under the default limit, enforced.cgroup $(al_json_get "$v" enforced.cgroup)"

# ---- while airlock runs, its scope is the user manager's; after it, the scope is gone.
rm -f "$AL_TEST_ROOT/as_user.pid"
as_user "$N" "$BIN" run -- /bin/sh -c 'sleep 4' >/dev/null 2>"$AL_TEST_ROOT/bg.err" &
bg=$!
AL_BG_PIDS+=("$bg")
scope=""
apid=""
for _ in $(seq 150); do
	[ -n "$apid" ] || apid=$(cat "$AL_TEST_ROOT/as_user.pid" 2>/dev/null || true)
	[ -z "$apid" ] || scope=$(find "$C" -maxdepth 2 -type d -name "airlock-$apid-*.scope" | head -n 1)
	[ -n "$scope" ] && [ -n "$(find "$scope/airlock.jobs" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)" ] && break
	sleep 0.1
done
[ -n "$scope" ] || al_fail "no scope airlock-$apid-*.scope under $C: $(cat "$AL_TEST_ROOT/bg.err")"
grep -qx "$apid" "$scope/airlock.self/cgroup.procs" || al_fail "airlock ($apid) is not in $scope/airlock.self"
unit=$(basename "$scope")
state=$(as_user "$N" systemctl --user show -p ActiveState --value "$unit")
al_assert_eq "$state" active "the user manager's view of $unit"
wait "$bg" || al_fail "the job in the scope failed: $(cat "$AL_TEST_ROOT/bg.err")"
for _ in $(seq 100); do
	[ -d "$scope" ] || break
	sleep 0.1
done
[ ! -d "$scope" ] || al_fail "$scope outlived airlock"
al_pass "airlock ran in $unit (active while it ran), which is gone after"

# ---- without a user bus, the manager's own socket ($XDG_RUNTIME_DIR/systemd/private) serves.
nobus=(env DBUS_SESSION_BUS_ADDRESS="unix:path=$AL_TEST_ROOT/no-bus")
al_assert_contains "$(as_user "$N" "${nobus[@]}" "$BIN" check | grep '^user systemd scope')" "$RT/systemd/private" \
	"airlock check without a user bus"
rc=0
as_user "$N" "${nobus[@]}" "$BIN" run --json -- /bin/true >"$AL_TEST_ROOT/priv.json" 2>"$AL_TEST_ROOT/priv.err" || rc=$?
al_assert_eq "$rc" 0 "a scope through the private socket (stderr: $(cat "$AL_TEST_ROOT/priv.err"))"
al_assert_eq "$(al_json_get "$(cat "$AL_TEST_ROOT/priv.json")" enforced.cgroup.memory)" true \
	"memory limit enforced in a scope asked for through the private socket"

# ---- airlock exec makes its cgroup through the same path.
rc=0
as_user "$N" "$BIN" exec --json -l shell -c 'echo hi' >"$AL_TEST_ROOT/exec.json" 2>"$AL_TEST_ROOT/exec.err" || rc=$?
v=$(cat "$AL_TEST_ROOT/exec.json")
al_assert_eq "$rc" 0 "airlock exec as the user (stderr: $(cat "$AL_TEST_ROOT/exec.err"))"
al_assert_eq "$(al_json_get "$v" enforced.cgroup.memory)" true "airlock exec: memory limit enforced"

# ---- airlock serve (airlock-serve, beside airlock) too: its first sandbox moves it into a scope,
# where every later one lives; the scope goes with the server.
if command -v curl >/dev/null; then
	install -m 0755 "$(dirname "$AIRLOCK")/airlock-serve" "$AL_TEST_ROOT/sdbin/"
	sv=$AL_TEST_ROOT/serve
	mkdir -m 0700 "$sv"
	chown "$U:$U" "$sv"
	rm -f "$AL_TEST_ROOT/as_user.pid"
	as_user "$N" "$BIN" serve --http 127.0.0.1:0 --socket none --port-file "$sv/port" --token-file "$sv/token" \
		--audit "$sv/audit.jsonl" 2>"$AL_TEST_ROOT/serve.err" &
	sbg=$!
	AL_BG_PIDS+=("$sbg")
	for _ in $(seq 300); do
		[ -s "$sv/port" ] && break
		sleep 0.1
	done
	[ -s "$sv/port" ] || al_fail "airlock serve did not start: $(cat "$AL_TEST_ROOT/serve.err")"
	spid=$(cat "$AL_TEST_ROOT/as_user.pid")
	tok=$(head -n 1 "$sv/token")
	for i in 1 2; do
		body=$(curl -s -w '\n%{http_code}' -X POST "http://127.0.0.1:$(cat "$sv/port")/v1/sandboxes" \
			-H "Authorization: Bearer ${tok##* }" -H 'Content-Type: application/json' -d '{}')
		al_assert_eq "${body##*$'\n'}" 201 "airlock serve as the user: sandbox $i (${body%$'\n'*})"
	done
	# (no process substitution: the VM has no /dev/fd)
	found=$(find "$C" -maxdepth 2 -type d -name "airlock-$spid-*.scope")
	al_assert_eq "$(printf '%s\n' "$found" | grep -c .)" 1 "airlock serve's scopes"
	scopes=("$found")
	grep -qx "$spid" "${scopes[0]}/airlock.self/cgroup.procs" || al_fail "airlock serve ($spid) is not in ${scopes[0]}"
	# (the warm pool may hold more sandboxes than the two asked for)
	njobs=$(find "${scopes[0]}/airlock.jobs" -mindepth 1 -maxdepth 1 -type d | wc -l)
	[ "$njobs" -ge 2 ] || al_fail "$njobs sandbox cgroups in ${scopes[0]}, not both"
	kill -TERM "$spid" # the server itself ($sbg is the shell that waits for it)
	wait "$sbg" || true
	for _ in $(seq 100); do
		[ -d "${scopes[0]}" ] || break
		sleep 0.1
	done
	[ ! -d "${scopes[0]}" ] || al_fail "${scopes[0]} outlived airlock serve"
	al_pass "airlock serve: one scope $(basename "${scopes[0]}") for its $njobs sandboxes, gone with the server"
else
	al_fail "curl is missing (scripts/deps.sh installs it)"
fi

# ---- no manager reachable (no user bus, no private socket): refused as before, naming what was tried.
mkdir -m 0755 "$AL_TEST_ROOT/nort"
rc=0
as_user "$N" env XDG_RUNTIME_DIR="$AL_TEST_ROOT/nort" "$BIN" run -- /bin/true >/dev/null 2>"$AL_TEST_ROOT/nomgr.err" || rc=$?
al_assert_eq "$rc" 125 "no reachable manager: refused"
al_assert_contains "$(cat "$AL_TEST_ROOT/nomgr.err")" "user systemd: no manager" "the refusal says what was tried"
al_pass "no manager: $(cat "$AL_TEST_ROOT/nomgr.err")"

# ---- --cgroup-systemd never: refused as without a manager, and no scope is asked for.
rc=0
as_user "$N" "$BIN" run --cgroup-systemd never -- /bin/true >/dev/null 2>"$AL_TEST_ROOT/never.err" || rc=$?
al_assert_eq "$rc" 125 "--cgroup-systemd never: refused"
al_assert_contains "$(cat "$AL_TEST_ROOT/never.err")" "Delegate=yes" "the refusal names delegation"
al_assert_not_contains "$(cat "$AL_TEST_ROOT/never.err")" "user systemd" "never: the manager is not asked"
[ -z "$(find "$C" -maxdepth 2 -type d -name 'airlock-*.scope')" ] || al_fail "a scope was made with never"
al_pass "--cgroup-systemd never refuses, and asks for no scope"
