#!/bin/bash
# privs.sh — the payload holds no capability, has no_new_privs, and never runs as host root.
. "$(dirname "$0")/../lib.sh"

zero=0000000000000000
al_probe -- status
al_assert_rc 0
for k in CapEff CapPrm CapBnd CapAmb CapInh; do
	al_assert_eq "$(al_kv "$k")" "$zero" "$k inside"
done
al_assert_eq "$(al_kv NoNewPrivs)" 1 "NoNewPrivs inside"
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
m=$(al_marker)
out="$AL_TEST_ROOT/bg.out"
al_airlock run --ro "$AL_PROBE_DIR:/probe" -- "$P" sleep 3 "$m" >"$out" 2>&1 &
bg=$!
pid=""
for _ in $(seq 60); do
	# The payload is the process named al-probe that carries the marker (airlock's own
	# cmdline carries it too, so the comm tells them apart).
	pid=$(al_marker_pids "$m" | awk '$2 == "al-probe" { print $1; exit }')
	[ -n "$pid" ] && break
	sleep 0.05
done
[ -n "$pid" ] || { wait "$bg" || true; al_fail "payload with marker $m never appeared on the host: $(cat "$out")"; }
status=$(cat "/proc/$pid/status")
uids=$(printf '%s\n' "$status" | awk '/^Uid:/ { print $2, $3, $4, $5 }')
gids=$(printf '%s\n' "$status" | awk '/^Gid:/ { print $2, $3, $4, $5 }')
capeff=$(printf '%s\n' "$status" | awk '/^CapEff:/ { print $2 }')
u=$AL_PAYLOAD_HOST_UID
al_assert_eq "$uids" "$u $u $u $u" "host Uid (real effective saved fs) of the payload"
[ "$(printf '%s\n' "$uids" | awk '{ print $1 }')" != 0 ] || al_fail "payload runs as host root"
g=$AL_PAYLOAD_HOST_GID
al_assert_eq "$gids" "$g $g $g $g" "host Gid of the payload"
al_assert_eq "$capeff" "$zero" "host view of the payload's CapEff"
wait "$bg" || al_fail "background airlock run failed: $(cat "$out")"
