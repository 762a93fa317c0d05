#!/bin/bash
# forkbomb.sh — attack: a fork bomb (every process forks forever, children too) that tries to exhaust the host's
# process table.
# Defence: the cgroup pids limit (--pids: fork fails with EAGAIN, the verdict says pids_limit_hit), the wall-clock
# limit, and killing the namespace's init takes every copy along. Without a usable cgroup (an unprivileged caller
# here), --pids is refused and the bomb never starts.
# Judged from outside: while the bomb runs, the host counts its copies by their argv marker (never more than
# --pids) and can still fork; afterwards none is left and the verdict says timeout + pids_limit_hit.
# gvisor: the bomb's copies are the Sentry's tasks, not host processes (no marker to count). What the host's pids
# cgroup counts are the Sentry's and gofer's threads and one stub process per address space (ptrace platform),
# and runsc alone needs more than 64 of them, so the limit is 200. Judged there from outside: the tasks the host
# counts under airlock never pass the limit, the host can fork, the verdict says pids_limit_hit (the bomb, not
# runsc, reached the limit: runsc with /bin/true stays well below it), the job ends — at the deadline, or when
# the Sentry, unable to make a thread, gives up — and none of its host processes is left. A gvisor backend that
# refuses --pids (it cannot bound the Sentry's tasks as the payload's) is asserted to refuse it instead.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-forkbomb

if ! esc_cgroup_limits; then
	esc_refused "--pids 64"
	exit 0
fi

limit=64
if esc_gvisor; then
	limit=200
	# A gvisor backend that says it cannot bound the payload's processes refuses --pids: asserted,
	# and then the bomb never runs.
	esc_run --pids "$limit" -- /bin/true
	if [ "$ESC_STATUS" = refused ]; then
		al_assert_contains "$AL_ERR" "--pids" "the refusal under gvisor"
		al_pass "gvisor refuses --pids (its processes are the Sentry's tasks), so the bomb never runs unbounded"
		exit 0
	fi
fi
m=$(al_marker)
out="$AL_TEST_ROOT/bomb.json"
t0=$(date +%s%N)
al_airlock run --ro "$ESC_DIR:$ESC" --json --pids "$limit" --time 3 -- \
	"$ESC/esc-forkbomb" "$m" >"$out" 2>"$out.err" &
bg=$!
max=0
host_forks=ok
tree=()
for _ in $(seq 12); do
	sleep 0.2
	if esc_gvisor; then
		n=$(esc_tree_tasks "$bg")
		mapfile -t -O "${#tree[@]}" tree < <(esc_tree_pids "$bg")
	else
		n=$(al_marker_pids "$m" | awk '$2 == "esc-forkbomb"' | wc -l)
	fi
	[ "$n" -gt "$max" ] && max=$n
	/bin/true || host_forks=failed
done
AL_RC=0
wait "$bg" || AL_RC=$?
t1=$(date +%s%N)
AL_CMD="airlock run --pids $limit --time 3 -- esc-forkbomb" AL_OUT_FILE=$out AL_ERR_FILE=$out.err AL_RUN_N=1
esc_parse_verdict "$out"
al_log "bomb: ${max} copies at most seen from the host, $(((t1 - t0) / 1000000)) ms"
if esc_gvisor; then
	# (airlock's own monitor sits outside the job's cgroup but under airlock: one task of slack.)
	[ "$max" -le $((limit + 1)) ] || esc_escaped "the host counted $max tasks of the gVisor job under --pids $limit"
	al_assert_eq "$host_forks" ok "the host could fork while the bomb ran"
	# (refused, a setup-error verdict with exit 125: the bomb reached the limit while runsc was still starting the container.)
	case "$ESC_STATUS" in
	timeout) al_pass "gvisor: the bomb ran until the deadline" ;;
	exited | refused) al_pass "gvisor: the Sentry gave up at the pids limit (status $ESC_STATUS, rc $AL_RC)" ;;
	*) al_fail "gvisor: verdict status $ESC_STATUS, expected timeout, exited or refused" ;;
	esac
	al_assert_eq "$(esc_v pids_limit_hit)" true "verdict pids_limit_hit"
	left=$(esc_alive "${tree[@]}")
	[ -z "$left" ] || esc_escaped "host processes of the gVisor job outlived it: $left"
	# Control: runsc with a harmless payload stays below the same limit, so the bomb hit it.
	esc_run --pids "$limit" --time 10 -- /bin/true
	al_assert_eq "$ESC_STATUS $(esc_v pids_limit_hit)" "exited false" "control: /bin/true under --pids $limit"
	al_pass "gvisor: at most $max host tasks under --pids $limit, none left"
	exit 0
fi
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
