#!/bin/bash
# layers.sh — Landlock holds where mounts and permissions alone would not, the verdict names the
# ABI and rule sets applied, and the --require floor refuses (exit 125) what cannot be enforced.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
# Under a backend that cannot enforce Landlock (backend_layers of airlock check: gvisor, whose
# kernel has none), what Landlock would hold is asserted as not enforced, and the floor refuses it.
# native applies it itself, bwrap and oci through airlock-init: the same ruleset, the same checks.
no_ll=""
al_backend_is native || al_backend_enforces landlock || no_ll=1

al_run check --json
abi=$(al_json_get "$AL_OUT" landlock.abi)
[ "$abi" -gt 7 ] && abi=7
al_log "kernel Landlock ABI: $abi"

# ---- the verdict reports what was applied, per ABI
al_run run --json -- /bin/true
al_assert_rc 0
if [ -n "$no_ll" ]; then
	al_assert_eq "$(j enforced.landlock)" false "enforced.landlock ($AL_BACKEND cannot enforce it; kernel ABI $abi)"
	al_assert_eq "$(al_backend_layer landlock)" false "check: backend_layers.$AL_BACKEND.landlock"
elif [ "$abi" -ge 1 ]; then
	al_assert_eq "$(j enforced.landlock.abi)" "$abi" "enforced.landlock.abi"
	al_assert_eq "$(j enforced.landlock.fs)" true "enforced.landlock.fs"
	want_scope=false
	[ "$abi" -ge 6 ] && want_scope=true
	# No TCP rules under --net none (whose lo is the job's own: see below), whatever the ABI.
	al_assert_eq "$(j enforced.landlock.net)" false "enforced.landlock.net"
	al_assert_eq "$(j enforced.landlock.scoped)" "$want_scope" "enforced.landlock.scoped"
else
	al_assert_eq "$(j enforced.landlock)" false "enforced.landlock without kernel support"
fi
if al_backend_is native || al_backend_enforces seccomp; then
	al_assert_eq "$(j enforced.seccomp)" default "enforced.seccomp"
else
	al_assert_eq "$(j enforced.seccomp)" false "enforced.seccomp ($AL_BACKEND cannot load the filter)"
fi

# ---- /proc is read-only on every backend that shares the host's kernel, Landlock or not: raising
# one's own oom_score_adj (the file is the payload's own) fails with EROFS, as does opening
# /proc/self/mem for writing (tests/escape/selfmem.sh).
if ! al_backend_is gvisor; then
	for ll in "" "--landlock off"; do
		# shellcheck disable=SC2086
		al_probe $ll -- write /proc/self/oom_score_adj 500
		al_assert_rc 1
		al_assert_eq "$(al_kv write)" EROFS "a write to the read-only /proc (${ll:-defaults})"
	done
fi

# ---- Landlock holds where the namespaces alone would not: with the host's network, an abstract
# UNIX socket of the host is reachable by name; Landlock ABI 6's scope refuses the connect. The
# control run without Landlock connects (the listener sees it), so the judge can fail. Below ABI 6
# (the VM's kernel) there is no scope to show: then the verdict must not claim one, and the
# connection goes through, as docs/backends.md says.
if [ -z "$no_ll" ]; then
	name="airlock-layers-$(al_marker)"
	log="$AL_TEST_ROOT/abstract.log"
	al_bg "$AL_PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1]); s.listen(4)
open(sys.argv[2] + ".ready", "w").close()
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("accepted\n"); c.close()
' "$name" "$log"
	for _ in $(seq 100); do [ -e "$log.ready" ] && break; sleep 0.05; done
	connect='import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + sys.argv[1]); print("connect=OK")
except OSError as e:
    print("connect=" + (e.strerror or str(e)))'
	al_run run --net host --landlock off -- /usr/bin/python3 -c "$connect" "$name"
	al_assert_eq "$AL_OUT" connect=OK "control: the host's abstract socket without Landlock"
	# The listener logs in its own time: its count is judged once it has logged the control (5 s at most).
	for _ in $(seq 100); do [ -s "$log" ] && break; sleep 0.05; done
	al_assert_eq "$(grep -c accepted "$log")" 1 "the listener saw the control's connection"
	if [ "$abi" -ge 6 ]; then
		al_run run --net host -- /usr/bin/python3 -c "$connect" "$name"
		al_assert_eq "$AL_OUT" "connect=Operation not permitted" "Landlock's scope on the host's abstract socket"
		# Then one more connection, from the host: the listener accepts in order, so once it has
		# logged this one it has logged any the Landlocked run made before it.
		al_assert_eq "$("$AL_PY" -c "$connect" "$name")" connect=OK "the host's own connection after it"
		for _ in $(seq 100); do [ "$(grep -c accepted "$log")" -ge 2 ] && break; sleep 0.05; done
		al_assert_eq "$(grep -c accepted "$log")" 2 "the listener saw only the control's connection and the host's after it"
		al_pass "Landlock refused a connection that the (host's) network namespace allows"
	else
		al_run run --json --net host -- /usr/bin/python3 -c "$connect" "$name"
		al_assert_eq "$(al_kv connect "$(j stdout.data)")" OK "the host's abstract socket under Landlock ABI $abi"
		al_assert_eq "$(j enforced.landlock.scoped)" false "enforced.landlock.scoped under Landlock ABI $abi"
		for _ in $(seq 100); do [ "$(grep -c accepted "$log")" -ge 2 ] && break; sleep 0.05; done
		al_assert_eq "$(grep -c accepted "$log")" 2 "the listener saw both connections (no scope below ABI 6)"
		al_pass "Landlock ABI $abi has no scope, and the verdict does not claim one"
	fi
fi

# ---- TCP under the default posture (none) is the network namespace's business: it holds only the
# job's own lo, up, on every backend, so port 9 there refuses (ECONNREFUSED; an lo down would say
# ENETUNREACH), with every layer on and with seccomp and Landlock off alike. Landlock's TCP rules
# are not used under none (a port rule cannot tell the job's lo from the host's; the fallback,
# which has no network namespace, still uses them), and the verdict says so (landlock.net false).
al_probe --json -- connect 127.0.0.1 9
al_assert_eq "$(al_kv connect "$(j stdout.data)")" ECONNREFUSED "TCP connect to the sandbox's own lo, every layer on"
al_assert_eq "$(j enforced.loopback)" up "enforced.loopback ($AL_BACKEND)"
al_assert_eq "$(j enforced.network)" none "enforced.network ($AL_BACKEND)"
if [ "$(al_json_type "$AL_OUT" enforced.landlock)" = object ]; then
	al_assert_eq "$(j enforced.landlock.net)" false "enforced.landlock.net under --net none"
fi
al_probe --seccomp off --landlock off -- connect 127.0.0.1 9
al_assert_eq "$(al_kv connect)" ECONNREFUSED "TCP connect in the network namespace alone"

# ---- the floor
al_run run --require "landlock>=$((abi + 1))" -- /bin/true
al_assert_rc 125
if [ -n "$no_ll" ]; then
	al_assert_contains "$AL_ERR" "landlock" "floor above the kernel's Landlock ABI ($AL_BACKEND has none)"
else
	al_assert_contains "$AL_ERR" "landlock>=$((abi + 1))" "floor above the kernel's Landlock ABI"
fi
al_run run --require landlock --landlock off -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "landlock" "floor with Landlock switched off"
al_run run --require seccomp --seccomp off -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "seccomp" "floor with seccomp switched off"
al_run run --require no-such-layer -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "unknown layer 'no-such-layer'" "unknown layer"
if [ -n "$no_ll" ]; then
	# What the kernel could give, this backend cannot: refused, naming Landlock; the rest of
	# the floor is accepted.
	al_expect_refusal landlock --require landlock
	[ "$abi" -lt 1 ] || al_expect_refusal landlock --require "userns,netns,seccomp,landlock>=$abi"
	floor=userns,pidns,netns,no_new_privs
	! al_backend_enforces seccomp || floor=$floor,seccomp
	al_run run --require "$floor" -- /bin/true
	al_assert_rc 0
elif [ "$abi" -ge 1 ]; then
	al_run run --require "userns,netns,seccomp,landlock>=$abi" -- /bin/true
	al_assert_rc 0
fi
al_pass "the floor refuses what cannot be enforced"
