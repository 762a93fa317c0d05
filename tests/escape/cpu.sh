#!/bin/bash
# cpu.sh — attack: burn CPU forever: one process that ignores SIGXCPU and tries to raise its own RLIMIT_CPU (past
# --cpu-time), and several processes at once (RLIMIT_CPU is per process, so only the wall clock bounds the sum;
# past --time).
# Defence: RLIMIT_CPU (--cpu-time: SIGXCPU at the soft limit, SIGKILL at the hard one, one second later, whatever
# is ignored; the process cannot raise either), the wall-clock limit (--time: the whole namespace is killed,
# status "timeout", exit 124).
# Judged from outside: how long airlock took, and the verdict.
# The same judges under every backend, but gvisor's --cpu-time: the Sentry reports RLIMIT_CPU to the payload but
# never signals at it, so airlock refuses --cpu-time there (asserted: exit 125, a setup-error naming it, the
# spinner never ran); the --time case holds there as everywhere.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-spin

ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- --cpu-time: a single spinner that ignores SIGXCPU
# gVisor's kernel accepts RLIMIT_CPU but never signals at it: --cpu-time is refused under gvisor,
# so the spinner never runs on a limit that is not there (the --time case below still holds).
if esc_gvisor; then
	esc_run --cpu-time 1 --time 20 -- "$ESC/esc-spin" 1
	al_assert_eq "$ESC_STATUS" refused "--cpu-time under gvisor"
	al_assert_contains "$AL_ERR" "the gvisor backend cannot enforce --cpu-time" "the refusal"
	al_assert_eq "$(esc_v status)" setup-error "verdict status of the refusal"
	al_assert_eq "$(esc_v backend)" gvisor "verdict backend of the refusal"
	al_expect_refusal 'the gvisor backend cannot enforce --cpu-time' --cpu-time 1 --time 20
	al_pass "gvisor: --cpu-time refused (fail closed), the spinner never ran"
else
t0=$(ms)
esc_run --cpu-time 1 --time 20 -- "$ESC/esc-spin" 1
t1=$(ms)
esc_denied raise-cpu-limit
al_assert_eq "$(esc_kv cpu-soft)" 1 "RLIMIT_CPU soft inside"
[ "$(esc_kv cpu-hard)" -le 2 ] || esc_escaped "RLIMIT_CPU hard is $(esc_kv cpu-hard) s under --cpu-time 1"
al_assert_eq "$ESC_STATUS" signaled "verdict status past --cpu-time"
case "$ESC_SIGNAL" in 9 | 24) ;; *) al_fail "killed by signal $ESC_SIGNAL, expected SIGKILL or SIGXCPU" ;; esac
cpu=$(python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); print(v["cpu_user_s"] + v["cpu_system_s"])' "$ESC_V")
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 2.5 else 1)' "$cpu" ||
	esc_escaped "a spinner under --cpu-time 1 used $cpu s of CPU"
# (Wall time depends on the host's load; the CPU time above and the status are the judges.)
[ $((t1 - t0)) -lt 15000 ] || esc_escaped "a spinner under --cpu-time 1 ran $((t1 - t0)) ms"
al_pass "--cpu-time 1: killed by signal $ESC_SIGNAL after $cpu s of CPU ($((t1 - t0)) ms wall; hard limit $(esc_kv cpu-hard) s)"
fi

# ---- --time: three spinners (RLIMIT_CPU is per process, the wall clock is not)
t0=$(ms)
esc_run --time 1 -- "$ESC/esc-spin" 3
t1=$(ms)
al_assert_eq "$AL_RC" 124 "airlock's exit status past --time"
al_assert_eq "$ESC_STATUS" timeout "verdict status past --time"
[ $((t1 - t0)) -lt 4000 ] || esc_escaped "spinners under --time 1 kept airlock busy for $((t1 - t0)) ms"
[ $((t1 - t0)) -ge 900 ] || al_fail "--time 1 returned after only $((t1 - t0)) ms"
al_pass "--time 1: status timeout after $((t1 - t0)) ms"
