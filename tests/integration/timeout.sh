#!/bin/bash
# timeout.sh — the wall-clock limit kills the whole sandbox, daemons included; nothing outlives a job.
. "$(dirname "$0")/../lib.sh"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- a payload that outlives --time 3, having started a daemon (setsid + double fork). The
# deadline counts from the backend's spawn, and a slow backend's start on a loaded host can take
# a second of it before the payload runs: 3 s leave room for the daemon to start and report.
m=$(al_marker)
t0=$(now_ms)
al_probe --time 3 --json -- daemon "$m" 30 30
t1=$(now_ms)
al_assert_rc 124
elapsed=$((t1 - t0))
[ "$elapsed" -lt 10000 ] || al_fail "--time 3 returned after ${elapsed} ms"
[ "$elapsed" -ge 2900 ] || al_fail "--time 3 returned after only ${elapsed} ms"
al_assert_eq "$(al_json_get "$AL_OUT" status)" timeout "verdict status"
# Proof the daemon really started before the deadline (it reports once it is named).
al_assert_contains "$(al_json_get "$AL_OUT" stdout.data)" "daemon=" "captured stdout"
al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) survived the timeout"
al_pass "nothing carrying $m is left on the host"

# ---- a payload that exits at once, leaving a daemon that holds stdout/stderr open:
# airlock must neither wait for it nor leave it behind.
m=$(al_marker)
t0=$(now_ms)
al_probe --time 20 -- daemon "$m" 30 0
t1=$(now_ms)
al_assert_rc 0
al_assert_contains "$AL_OUT" "daemon=" "live stdout"
elapsed=$((t1 - t0))
[ "$elapsed" -lt 5000 ] || al_fail "airlock waited ${elapsed} ms for a daemon after its payload exited"
al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) outlived its job"
al_pass "a daemon left by an exited payload was killed"

# ---- a slow plain payload: time-limited, exit 124, no output needed
al_probe --time 250ms -- sleep 10
al_assert_rc 124
