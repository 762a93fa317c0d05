#!/bin/bash
# membomb.sh — attack: eat the host's memory: anonymous memory, tmpfs pages (/tmp, with a --disk far above the
# memory limit) and a memfd (memory with no file system cap).
# Defence: the cgroup memory limit with swap off (--memory): the OOM killer ends the job, the verdict says "oom"
# and the peak stays near the limit. Without a usable cgroup, --memory is refused and nothing runs.
# Judged: status oom (or the write failing) with the peak and the reported allocation near the limit.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-membomb

if ! esc_cgroup_limits; then
	esc_refused "--memory 64M"
	exit 0
fi

limit_mib=64
for kind in heap tmpfs memfd; do
	esc_run --memory "${limit_mib}M" --disk 1G --time 30 -- "$ESC/esc-membomb" "$kind" 768
	peak=$(esc_v peak_memory_bytes)
	last=$(printf '%s\n' "$ESC_OUT" | sed -n 's/^allocated=//p' | tail -n 1)
	al_log "$kind: status $ESC_STATUS, peak $((peak >> 20)) MiB, last report ${last:-0} MiB"
	[ -z "$(esc_kv reached-max)" ] || esc_escaped "$kind: the job allocated 768 MiB under --memory ${limit_mib}M"
	case "$ESC_STATUS" in
	oom) [ "$(esc_v oom_kills)" -ge 1 ] || al_fail "$kind: status oom without an OOM kill" ;;
	exited)
		# The allocation itself failed (e.g. ENOMEM or ENOSPC) before the OOM killer acted.
		v=$(esc_kv write)
		[ -n "$v" ] || v=$(esc_kv alloc)
		if [ -z "$v" ] || [ "$v" = OK ]; then
			esc_dump
			al_fail "$kind: exited without a failed allocation"
		fi
		;;
	*) esc_dump; al_fail "$kind: status $ESC_STATUS: expected oom" ;;
	esac
	[ "$peak" -le $(((limit_mib + 8) << 20)) ] || esc_escaped "$kind: peak memory $((peak >> 20)) MiB over a ${limit_mib} MiB limit"
	[ "${last:-0}" -le $((limit_mib + 8)) ] || esc_escaped "$kind: the job reported ${last} MiB under a ${limit_mib} MiB limit"
	al_pass "$kind: stopped at ${last:-0} MiB, peak $((peak >> 20)) MiB, status $ESC_STATUS"
done
