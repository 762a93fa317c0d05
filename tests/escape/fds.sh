#!/bin/bash
# fds.sh — attack: exhaust file descriptors (open until failure, pipes until failure, dup2 far beyond the limit) and
# lift the limit that stops it (setrlimit above the hard limit, prlimit on init).
# Defence: RLIMIT_NOFILE (--open-files) with the hard limit equal to the soft one; no CAP_SYS_RESOURCE; prlimit on
# another process refused.
# Judged: the job stops at the limit with EMFILE and the hard limit is the same afterwards.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-fds

esc_run --open-files 64 -- "$ESC/esc-fds"
esc_ran
al_assert_eq "$(esc_kv nofile-soft)" 64 "RLIMIT_NOFILE soft inside"
al_assert_eq "$(esc_kv nofile-hard)" 64 "RLIMIT_NOFILE hard inside"
esc_expect open-exhaust EMFILE
opened=$(esc_kv opened)
[ "$opened" -le 64 ] || esc_escaped "$opened descriptors opened under --open-files 64"
esc_denied dup2-far raise-hard prlimit-init
al_assert_eq "$(esc_kv nofile-hard-after)" 64 "RLIMIT_NOFILE hard after the attempts to raise it"
[ "$(esc_kv pipes)" -le 32 ] || esc_escaped "$(esc_kv pipes) pipes under --open-files 64"
al_pass "stopped at $opened descriptors and $(esc_kv pipes) pipes"
