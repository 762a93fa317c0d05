#!/bin/bash
# net.sh — the default network posture (none) is a namespace of the job's own holding only lo, up:
# host loopback listeners hear nothing.
. "$(dirname "$0")/../lib.sh"

log="$AL_TEST_ROOT/listen.log"
al_listen "$log"

# Positive control: from the host the probe reaches both listeners, so the silence
# asserted below is the sandbox's doing and not a broken listener.
"$AL_HOST_PROBE" connect 127.0.0.1 "$AL_LISTEN_TCP" >/dev/null || al_fail "host probe cannot reach the TCP listener"
"$AL_HOST_PROBE" udp-send 127.0.0.1 "$AL_LISTEN_UDP" >/dev/null || al_fail "host probe cannot send to the UDP listener"
for _ in $(seq 40); do
	grep -q '^tcp-data' "$log" && grep -q '^udp ' "$log" && break
	sleep 0.05
done
grep -q '^tcp-data' "$log" || al_fail "control: the listener did not record the host's TCP bytes"
grep -q '^udp ' "$log" || al_fail "control: the listener did not record the host's datagram"
al_pass "control: the listener records TCP and UDP traffic from the host"
: >"$log"

# TCP and UDP from inside reach only the sandbox's own lo, which is up on every backend: the
# host listener's port numbers are closed ports there (ECONNREFUSED, where an lo down would say
# ENETUNREACH), and a datagram is sent to nobody. The listener, below, is the judge. The same
# holds with the later layers (seccomp, Landlock) switched off: the namespace alone keeps the job in.
for layers in on off; do
	off=()
	[ "$layers" = on ] || off=(--seccomp off --landlock off)
	al_probe "${off[@]}" --json -- connect 127.0.0.1 "$AL_LISTEN_TCP"
	al_assert_eq "$(al_kv connect "$(al_json_get "$AL_OUT" stdout.data)")" ECONNREFUSED "connect inside, layers $layers"
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.loopback)" up "enforced.loopback, layers $layers"
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.namespaces.net)" true "enforced.namespaces.net, layers $layers"
	al_probe "${off[@]}" -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
	al_assert_rc 0
	al_assert_contains "$AL_OUT" "udp-send=OK" "udp-send inside, layers $layers (to the sandbox's own lo)"
done

sleep 0.5
[ ! -s "$log" ] || al_fail "the host listener saw traffic from the sandbox: $(cat "$log")"
al_pass "the host listener saw nothing from the sandbox"

# The namespace holds no interface but lo (and the host has more than that, or this
# proves nothing; /proc/net/dev lists one "name:" line per interface).
al_probe -- read /proc/net/dev
al_assert_rc 0
inside=$(printf '%s\n' "$AL_OUT" | awk -F: 'NF > 1 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' ')
al_assert_eq "$inside" "lo " "interfaces inside"
outside=$(awk -F: 'NF > 1 { gsub(/ /, "", $1); print $1 }' /proc/net/dev | sort | tr '\n' ' ')
if [ "$outside" = "lo " ]; then
	al_log "note: the host itself has only lo, so the interface list proves less here"
else
	al_pass "the host has other interfaces ($outside)"
fi
al_listen_stop
