#!/bin/bash
# forkbomb.sh — attack: a fork bomb (every process forks forever, children too) that tries to exhaust the host's
# process table.
# Defence: the cgroup pids limit (--pids: fork fails with EAGAIN, the verdict says pids_limit_hit), the wall-clock
# limit, and killing the namespace's init takes every copy along. Without a usable cgroup (an unprivileged caller
# here), --pids is refused and the bomb never starts.
# Judged from outside: while the bomb runs, the host counts its copies by their argv marker (never more than
# --pids) and can still fork; afterwards none is left and the verdict says timeout + pids_limit_hit.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-forkbomb

if ! esc_cgroup_limits; then
	esc_refused "--pids 64"
	exit 0
fi

limit=64
m=$(al_marker)
out="$AL_TEST_ROOT/bomb.json"
t0=$(date +%s%N)
al_airlock run "${ESC_BACKEND_ARGS[@]}" --ro "$ESC_DIR:$ESC" --json --pids "$limit" --time 3 -- \
	"$ESC/esc-forkbomb" "$m" >"$out" 2>"$out.err" &
bg=$!
max=0
host_forks=ok
for _ in $(seq 12); do
	sleep 0.2
	n=$(al_marker_pids "$m" | awk '$2 == "esc-forkbomb"' | wc -l)
	[ "$n" -gt "$max" ] && max=$n
	/bin/true || host_forks=failed
done
AL_RC=0
wait "$bg" || AL_RC=$?
t1=$(date +%s%N)
AL_CMD="airlock run --pids $limit --time 3 -- esc-forkbomb" AL_OUT_FILE=$out AL_ERR_FILE=$out.err AL_RUN_N=1
esc_parse_verdict "$out"
al_log "bomb: ${max} copies at most seen from the host, $(((t1 - t0) / 1000000)) ms"
[ "$max" -gt 1 ] || al_fail "the bomb never multiplied (max $max copies seen): the check proves nothing"
[ "$max" -le "$limit" ] || esc_escaped "$max copies of the bomb were alive under --pids $limit"
al_assert_eq "$host_forks" ok "the host could fork while the bomb ran"
al_assert_eq "$ESC_STATUS" timeout "verdict status"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 6 else 1)' "$(esc_v wall_time_s)" ||
	esc_escaped "the bomb's job ran $(esc_v wall_time_s) s under --time 3"
al_assert_eq "$(esc_v pids_limit_hit)" true "verdict pids_limit_hit"
al_assert_contains "$ESC_OUT" "fork=EAGAIN" "the bomb's first failed fork"
al_wait_marker_gone "$m" 3 || esc_escaped "copies of the fork bomb outlived the job"
al_pass "the bomb was held at $max of $limit processes and left nothing behind"
