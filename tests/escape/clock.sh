#!/bin/bash
# clock.sh — attack: set the host's clock (clock_settime, settimeofday, adjtimex and clock_adjtime with ADJ_TICK),
# hostname and domain name (sethostname, setdomainname, /proc/sys/kernel/hostname). Each call writes the value it
# has just read (the current time, the current name), so nothing changes even if one got through; the result
# each call reports is the judge.
# Defence: seccomp (the clock calls: EPERM), no CAP_SYS_TIME/CAP_SYS_ADMIN, the UTS namespace.
# Judged: every attempt fails; from outside, the host's hostname and domain name are unchanged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-clock

host_before="$(hostname) $(cat /proc/sys/kernel/domainname)"
esc_run -- "$ESC/esc-clock"
esc_ran
esc_denied clock_settime-realtime settimeofday adjtimex-set-tick clock_adjtime-set-tick sethostname setdomainname \
	proc-hostname
esc_expect clock_settime-realtime EPERM
esc_expect settimeofday EPERM
al_assert_eq "$(esc_kv hostname-inside)" airlock "hostname inside (the sandbox's own UTS namespace)"
al_assert_eq "$(hostname) $(cat /proc/sys/kernel/domainname)" "$host_before" "the host's hostname and domain name"
