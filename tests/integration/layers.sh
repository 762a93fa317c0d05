#!/bin/bash
# layers.sh — Landlock holds where mounts and permissions alone would not, the verdict names the
# ABI and rule sets applied, and the --require floor refuses (exit 125) what cannot be enforced.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
# Under another backend that cannot enforce Landlock (backend_layers of airlock check, e.g.
# bwrap), what Landlock would hold is asserted as not enforced, and the floor refuses it.
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

# ---- Landlock refuses a write that the mount (rw procfs) and DAC (the file is the payload's own)
# both allow: raising one's own oom_score_adj. The control run without Landlock succeeds.
al_probe --landlock off -- write /proc/self/oom_score_adj 500
al_assert_rc 0
if [ -n "$no_ll" ] && al_backend_is bwrap; then
	# The gap, stated: without Landlock the same write goes through (docs/backends.md).
	al_probe -- write /proc/self/oom_score_adj 500
	al_assert_rc 0
	al_pass "no Landlock under $AL_BACKEND: the write only Landlock refuses goes through, as documented"
elif [ -z "$no_ll" ] && [ "$abi" -ge 1 ]; then
	al_probe -- write /proc/self/oom_score_adj 500
	al_assert_rc 1
	al_assert_eq "$(al_kv write)" EACCES "Landlock on a write the mount allows"
	al_pass "Landlock refused a write that mount and permissions allow"
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
