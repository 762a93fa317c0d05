#!/bin/bash
# network.sh — the postures: loopback lets a server and a client inside talk while nothing leaves;
# host shares the host's network only when asked and says so; unknown postures are refused.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
log="$AL_TEST_ROOT/listen.log"
al_listen "$log"

# ---- loopback: an in-sandbox server answers an in-sandbox client...
al_run run --net loopback --json -- /usr/bin/python3 -c '
import socket, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
def serve():
    c, _ = s.accept(); c.sendall(c.recv(16).upper()); c.close()
threading.Thread(target=serve).start()
c = socket.create_connection(("127.0.0.1", s.getsockname()[1]), timeout=5)
c.sendall(b"ping"); print(c.recv(16).decode())'
al_assert_rc 0
al_assert_eq "$(j stdout.data)" PING "loopback echo inside the sandbox"
al_assert_eq "$(j enforced.network)" loopback "enforced.network"
al_assert_eq "$(j enforced.namespaces.net)" true "enforced.namespaces.net"
# ... and the host's listener, on the same 127.0.0.1 port numbers, hears nothing.
al_probe --net loopback -- connect 127.0.0.1 "$AL_LISTEN_TCP"
al_assert_eq "$(al_kv connect)" ECONNREFUSED "TCP to the host's listener from the loopback posture"
al_probe --net loopback -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
sleep 0.2
al_assert_eq "$(cat "$log")" "" "what the host listener saw from the loopback posture"
al_pass "loopback: talks to itself, nothing leaves"

# ---- host: explicit, reported, and it really reaches the host
if al_backend_is gvisor; then
	# runsc 20221219 cannot share the host's network with a sandbox in a user namespace.
	al_expect_refusal 'net host' --net host
	sleep 0.2
	al_assert_eq "$(cat "$log")" "" "what the host listener saw from a refused --net host"
else
	al_probe --net host --json -- connect 127.0.0.1 "$AL_LISTEN_TCP"
	al_assert_contains "$(j stdout.data)" "connect=OK" "TCP to the host's listener with --net host"
	al_assert_eq "$(j enforced.network)" host "enforced.network"
	al_assert_eq "$(j enforced.namespaces.net)" false "enforced.namespaces.net"
	sleep 0.2
	al_assert_contains "$(cat "$log")" "tcp-accept" "the host listener saw the host posture's connection"
fi
al_listen_stop

# ---- bad input
al_run run --net bogus -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "unknown posture 'bogus'" "unknown posture"
al_run run --net host --require netns -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "netns" "host posture under a netns floor"
