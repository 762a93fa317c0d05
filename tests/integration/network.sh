#!/bin/bash
# network.sh — the postures: none (the default) gives the job a private lo, up, so its own servers on
# 127.0.0.1 and ::1 work while nothing reaches the host's listeners or another sandbox's; loopback is
# a synonym of none; host shares the host's network only when asked and says so; unknown postures are
# refused.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
log="$AL_TEST_ROOT/listen.log"
al_listen "$log"
# A host listener on ::1 as well (the job's own ::1 must not be the host's).
log6="$AL_TEST_ROOT/listen6.log"
: >"$log6"
al_bg "$AL_PY" -c '
import os, socket, sys
log = open(sys.argv[1], "a", buffering=1)
s = socket.socket(socket.AF_INET6); s.bind(("::1", 0)); s.listen(8)
open(sys.argv[1] + ".port.tmp", "w").write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".port.tmp", sys.argv[1] + ".port")
while True:
    c, a = s.accept(); log.write("tcp6-accept %s\n" % (a[0],)); log.write("tcp6-data %d\n" % len(c.recv(64))); c.close()
' "$log6"
for _ in $(seq 100); do [ -s "$log6.port" ] && break; sleep 0.05; done
[ -s "$log6.port" ] || al_fail "the ::1 listener did not start"
port6=$(cat "$log6.port")

# ---- another sandbox's listener: a server on 127.0.0.1 in a sandbox of its own (default posture)
# that logs every connection to a directory the test reads from outside. It first connects to
# itself ("self"), so its log is shown to work before silence is asserted.
other=$(al_tmpdir 0777)
AL_BG_LOG="$AL_TEST_ROOT/other.out"
al_bg "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${AL_BACKEND_ARGS[@]}" --time 60s --rw "$other:/out" -- /usr/bin/python3 -c '
import os, select, socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
log = open("/out/log", "a", buffering=1)
c = socket.create_connection(("127.0.0.1", s.getsockname()[1]), 5); a, _ = s.accept(); log.write("self\n"); a.close(); c.close()
open("/out/port.tmp", "w").write("%d\n" % s.getsockname()[1]); os.rename("/out/port.tmp", "/out/port")
deadline = time.time() + 50
# select(): glibc makes it pselect6, which runsc 20221219 knows as "pselect" (oci/bundle.c).
while not os.path.exists("/out/stop") and time.time() < deadline:
    if select.select([s], [], [], 0.1)[0]:
        a, _ = s.accept(); log.write("accept\n"); a.close()
' >"$AL_BG_LOG" 2>&1
other_pid=$AL_BG_PID
for _ in $(seq 200); do [ -s "$other/port" ] && break; sleep 0.05; done
[ -s "$other/port" ] || al_fail "the other sandbox's server did not start: $(cat "$AL_BG_LOG")"
oport=$(cat "$other/port")
al_assert_eq "$(cat "$other/log")" self "the other sandbox's log (its server answered itself)"

# ---- none, the default: one job runs an asyncio echo server and its client on 127.0.0.1 and ::1...
al_run run --json -- /usr/bin/python3 -c '
import asyncio
async def main():
    out = []
    for host in ("127.0.0.1", "::1"):
        async def handle(r, w):
            w.write((await r.read(4)).upper()); await w.drain(); w.close()
        srv = await asyncio.start_server(handle, host, 0)
        r, w = await asyncio.open_connection(host, srv.sockets[0].getsockname()[1])
        w.write(b"ping"); await w.drain()
        out.append("%s=%s" % (host, (await r.read(4)).decode()))
        w.close(); srv.close(); await srv.wait_closed()
    print(" ".join(out))
asyncio.run(main())'
al_assert_rc 0
al_assert_eq "$(j stdout.data)" "127.0.0.1=PING ::1=PING" "asyncio echo inside the sandbox (127.0.0.1 and ::1)"
al_assert_eq "$(j enforced.network)" none "enforced.network"
al_assert_eq "$(j enforced.loopback)" up "enforced.loopback"
al_assert_eq "$(j enforced.namespaces.net)" true "enforced.namespaces.net"
# ... and only lo, up, is there.
al_run run -- /usr/bin/python3 -c '
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]  # SIOCGIFFLAGS
print("up" if flags & 1 else "down", " ".join(sorted(n for _, n in socket.if_nameindex())))'
al_assert_rc 0
al_assert_eq "$AL_OUT" "up lo" "lo's state and the interfaces inside"

# ... while the host's listeners (127.0.0.1 TCP and UDP, ::1 TCP) and the other sandbox's hear
# nothing: the same port numbers inside are the job's own, closed ports.
# shellcheck disable=SC2016
attack='
import socket, sys
t, u, t6, o = map(int, sys.argv[1:])
out = []
for name, fam, addr in (("tcp", socket.AF_INET, ("127.0.0.1", t)), ("tcp6", socket.AF_INET6, ("::1", t6)),
                        ("other", socket.AF_INET, ("127.0.0.1", o))):
    try:
        c = socket.socket(fam); c.settimeout(3); c.connect(addr); c.sendall(b"escape\n"); out.append(name + "=OK")
    except OSError as e:
        out.append("%s=%s" % (name, e.errno))
u_ = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u_.sendto(b"escape\n", ("127.0.0.1", u)); out.append("udp=sent")
print(" ".join(out))'
for net in none loopback; do
	al_run run --json --net "$net" -- /usr/bin/python3 -c "$attack" "$AL_LISTEN_TCP" "$AL_LISTEN_UDP" "$port6" "$oport"
	al_assert_rc 0
	al_assert_eq "$(j stdout.data)" "tcp=111 tcp6=111 other=111 udp=sent" "connections from --net $net (ECONNREFUSED each)"
	# loopback is a synonym of none, and the verdict names the posture none.
	al_assert_eq "$(j enforced.network)" none "enforced.network of --net $net"
done
sleep 0.3
al_assert_eq "$(cat "$log")" "" "what the host's 127.0.0.1 listener saw from --net none"
al_assert_eq "$(cat "$log6")" "" "what the host's ::1 listener saw from --net none"
al_assert_eq "$(cat "$other/log")" self "what the other sandbox's listener saw from --net none"
touch "$other/stop"
wait "$other_pid" || al_fail "the other sandbox's server failed: $(cat "$AL_BG_LOG")"
al_pass "none: the job talks to itself over 127.0.0.1 and ::1, nothing reaches the host or another sandbox"

# Control: the judges can fail. From the host, the same client reaches every listener, and they
# record it (the other sandbox's log showed its own "self" connection above).
"$AL_PY" -c "$attack" "$AL_LISTEN_TCP" "$AL_LISTEN_UDP" "$port6" "$oport" >"$AL_TEST_ROOT/control.out"
al_assert_contains "$(cat "$AL_TEST_ROOT/control.out")" "tcp=OK tcp6=OK " "the same client from the host"
for _ in $(seq 40); do grep -q '^udp' "$log" && grep -q tcp6-data "$log6" && break; sleep 0.05; done
al_assert_contains "$(cat "$log")" "tcp-accept" "control: the 127.0.0.1 listener records the host's connection"
al_assert_contains "$(cat "$log")" "udp 7" "control: the 127.0.0.1 listener records the host's datagram"
al_assert_contains "$(cat "$log6")" "tcp6-data 7" "control: the ::1 listener records the host's bytes"
: >"$log"

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
	# The listener logs the accept in its own time (5 s at most on a loaded host).
	for _ in $(seq 100); do grep -q tcp-accept "$log" && break; sleep 0.05; done
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
