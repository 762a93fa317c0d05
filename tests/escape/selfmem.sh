#!/bin/bash
# selfmem.sh — attack: write the payload's own read-only memory (a PROT_READ page, its own code) through
# /proc/self/mem, whose writes ignore page protection (FOLL_FORCE).
# Defence: /proc is mounted read-only on every backend (the filesystem plan's proc mount, which native,
# bwrap and oci each apply), so opening /proc/self/mem for writing fails with EROFS; the native Landlock ruleset
# (native, and airlock-init's under bwrap and oci: nothing under /proc is writable) stops it as well.
# Judged: the open for writing and both writes fail, and the read-only page keeps its contents. gvisor: the
# Sentry's own /proc and memory, not the host kernel's (logged, and judged all the same when it refuses).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-selfmem

esc_run --time 20 -- "$ESC/esc-selfmem"
esc_ran
al_assert_eq "$(esc_kv info-selfmem-read)" OK "reading /proc/self/mem (the payload's own business)"
esc_denied selfmem-open-rw selfmem-write-ro selfmem-write-text selfmem-changed
if ! esc_gvisor; then
	esc_expect selfmem-open-rw EROFS EACCES
fi
