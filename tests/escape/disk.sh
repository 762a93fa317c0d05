#!/bin/bash
# disk.sh — attack: fill the disk: /workspace, /tmp and /dev/shm (tmpfs), a --workdir (whose writes reach the host
# disk), and one file past --file-size. The data is non-zero so no file system can keep it as holes.
# Defence: size-capped tmpfs (--disk: ENOSPC), the --disk-sized upper layer of --workdir, RLIMIT_FSIZE (EFBIG).
# Judged: the write stops at about the cap with the named errno; from outside, the host's copy of the workdir
# holds no more than the cap.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-fill

cap=$((8 << 20))
for f in /workspace/fill /tmp/fill /dev/shm/fill; do
	esc_run --disk 8M -- "$ESC/esc-fill" "$f" 64
	esc_ran
	bytes=$(esc_kv filled-bytes)
	esc_expect fill ENOSPC
	[ "$bytes" -le "$cap" ] || esc_escaped "$f: $bytes bytes written under --disk 8M"
	[ "$bytes" -ge $((cap / 2)) ] || al_fail "$f: only $bytes bytes fitted under --disk 8M: is the cap right?"
	al_pass "$f: stopped at $bytes bytes"
done

# RLIMIT_FSIZE on one file, below the disk cap.
esc_run --file-size 2M -- "$ESC/esc-fill" /workspace/big 16
esc_ran
esc_expect fill EFBIG
al_assert_eq "$(esc_kv filled-bytes)" $((2 << 20)) "bytes written under --file-size 2M"

# --workdir: the writes are the host's disk in the end. Without the overlay (bwrap, oci, gvisor could only
# bind the dir read-write) the cap cannot be had: --workdir --disk is refused, and so is --workdir alone
# (asserted, nothing written in the dir).
esc_workdir_cap_refused && exit 0
wd=$(al_tmpdir 0777)
esc_run --disk 8M --workdir "$wd" -- "$ESC/esc-fill" /workspace/fill 64
esc_ran
esc_denied fill
[ "$(esc_kv filled-bytes)" -le "$cap" ] || esc_escaped "--workdir: $(esc_kv filled-bytes) bytes written under --disk 8M"
host_kib=$(du -sk "$wd" | cut -f1)
[ "$host_kib" -le $(((cap >> 10) + 64)) ] || esc_escaped "--workdir: the host's dir holds ${host_kib} KiB after a --disk 8M job"
al_pass "--workdir: the job stopped at $(esc_kv filled-bytes) bytes, the host holds ${host_kib} KiB"
