#!/bin/bash
# net.sh — the default network posture is an empty namespace: host loopback listeners hear nothing.
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

# TCP and UDP from inside fail. Which layer says no first depends on what the build
# enforces (seccomp may refuse the socket, Landlock the connect, else the empty
# namespace answers ENETUNREACH); any refusal will do here, and the listener decides.
al_probe -- connect 127.0.0.1 "$AL_LISTEN_TCP"
al_assert_rc 1
al_assert_not_contains "$AL_OUT" "=OK" "connect inside"
al_probe -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
if al_backend_is native || al_backend_enforces seccomp; then
	al_assert_rc 1
	al_assert_not_contains "$AL_OUT" "=OK" "udp-send inside"
else
	# No seccomp filter under this backend, and lo is up in its own stack: the datagram goes
	# to the sandbox's own 127.0.0.1. The host listener, below, must hear nothing.
	al_log "udp-send inside $AL_BACKEND: $AL_OUT (the listener decides)"
fi

# The namespace alone must hold too: with the later layers (seccomp, Landlock) switched
# off, lo is down in an empty namespace, so 127.0.0.1 is unreachable, not merely refused.
al_probe --seccomp off --landlock off -- connect 127.0.0.1 "$AL_LISTEN_TCP"
lo_up=""
if ! al_backend_is native; then
	lo_up=$(al_box --json -- /bin/true && [ "$(al_json_type "$AL_OUT" enforced.loopback)" = str ] &&
		al_json_get "$AL_OUT" enforced.loopback || true)
	al_probe --seccomp off --landlock off -- connect 127.0.0.1 "$AL_LISTEN_TCP"
fi
if [ "$lo_up" = up ]; then
	# bwrap (and crun, gVisor) raise lo in the namespace they make, and the verdict says so:
	# 127.0.0.1 is the sandbox's own, so the host's port refuses and a datagram goes to the
	# sandbox's own lo (the listener, below, hears nothing).
	al_assert_rc 1
	al_assert_eq "$(al_kv connect)" ECONNREFUSED "connect inside, $AL_BACKEND's namespace only (lo up)"
	al_probe --seccomp off --landlock off --json -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.loopback)" up "enforced.loopback ($AL_BACKEND)"
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.namespaces.net)" true "enforced.namespaces.net ($AL_BACKEND)"
elif [ "$AL_RC" = 125 ] && printf '%s' "$AL_ERR" | grep -qiE 'seccomp|landlock|option'; then
	al_log "note: this airlock has no --seccomp/--landlock switches; the default run above covers the namespace"
else
	al_assert_rc 1
	al_assert_eq "$(al_kv connect)" ENETUNREACH "connect inside, namespace only"
	al_probe --seccomp off --landlock off -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
	al_assert_rc 1
	al_assert_eq "$(al_kv udp-send)" ENETUNREACH "udp-send inside, namespace only"
fi

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
