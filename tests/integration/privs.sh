#!/bin/bash
# privs.sh — the payload holds no capability, has no_new_privs, and never runs as host root.
. "$(dirname "$0")/../lib.sh"

zero=0000000000000000
al_probe -- status
al_assert_rc 0
if al_backend_is gvisor; then
	# gVisor's /proc/PID/status has no CapAmb and no NoNewPrivs line (asserted absent, so a
	# newer gVisor that adds them is noticed). The ambient set is a subset of the permitted
	# and inheritable sets, both zero; no_new_privs is read with prctl instead.
	for k in CapEff CapPrm CapBnd CapInh; do
		al_assert_eq "$(al_kv "$k")" "$zero" "$k inside"
	done
	al_assert_eq "$(al_kv CapAmb)" "" "CapAmb line under gvisor (gVisor's status has none)"
	al_assert_eq "$(al_kv NoNewPrivs)" "" "NoNewPrivs line under gvisor (gVisor's status has none)"
	al_run run -- python3 -c 'import ctypes; print("nnp=%d" % ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'
	al_assert_rc 0
	al_assert_eq "$(al_kv nnp)" 1 "prctl(PR_GET_NO_NEW_PRIVS) inside gvisor"
	al_probe -- status
	al_assert_rc 0
else
	for k in CapEff CapPrm CapBnd CapAmb CapInh; do
		al_assert_eq "$(al_kv "$k")" "$zero" "$k inside"
	done
	al_assert_eq "$(al_kv NoNewPrivs)" 1 "NoNewPrivs inside"
fi
al_assert_eq "$(al_kv uid)" 1000 "uid inside"
al_assert_eq "$(al_kv euid)" 1000 "euid inside"
al_assert_eq "$(al_kv gid)" 1000 "gid inside"
al_assert_eq "$(al_kv hostname)" airlock "hostname inside"
host_name=$(hostname)
al_probe --hostname "h-$$" -- status
if [ "$(hostname)" != "$host_name" ]; then
	hostname "$host_name" # put it back before failing
	al_fail "--hostname changed the host's hostname"
fi
al_assert_eq "$(al_kv hostname)" "h-$$" "--hostname"

# From the host: find the running payload by a unique argument and read its identity.
if al_backend_is gvisor; then
	# Under gVisor the payload is no host process: it lives in the sentry (runsc-sandbox),
	# beside the gofer (runsc-gofer); those are what the host runs for it. Neither is host root.
	m=$(al_marker)
	out="$AL_TEST_ROOT/bg.out"
	# Not through the al_airlock function: $! must be airlock itself (setpriv execs it), whose
	# pid names the job's private directory, which the runsc processes' command lines name.
	"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${AL_BACKEND_ARGS[@]}" --ro "$AL_PROBE_DIR:/probe" -- "$P" sleep 3 "$m" >"$out" 2>&1 &
	bg=$!
	found=""
	for _ in $(seq 100); do
		found=$(al_marker_pids "airlock-gvisor.$bg." | awk '$2 == "exe" { print $1 }')
		[ "$(printf '%s\n' "$found" | grep -c .)" -ge 2 ] && break
		sleep 0.05
	done
	[ "$(printf '%s\n' "$found" | grep -c .)" -ge 2 ] || { wait "$bg" || true; al_fail "no runsc-sandbox and runsc-gofer of job $bg on the host: $(cat "$out")"; }
	al_assert_eq "$(al_marker_pids "$m" | awk '$2 == "al-probe"')" "" "a host process for the payload under gvisor"
	for pid in $found; do
		u=$(al_host_uid "$pid" 2>/dev/null) || continue
		[ "$u" != 0 ] || al_fail "gVisor's $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-40) runs as host root"
		al_pass "gVisor process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-13)) runs as host uid $u"
	done
	wait "$bg" || al_fail "background airlock run failed: $(cat "$out")"
	exit 0
fi
m=$(al_marker)
al_payload_start "$m"
al_payload_host_ids "$AL_PAYLOAD_PID"
g=$AL_PAYLOAD_HOST_GID
al_assert_eq "$(printf '%s\n' "$AL_PAYLOAD_STATUS" | awk '/^Gid:/ { print $2, $3, $4, $5 }')" "$g $g $g $g" "host Gid of the payload"
al_payload_wait
