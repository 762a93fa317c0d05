#!/bin/bash
# workdir-amplify.sh — attack: get around --disk through the --workdir write-back with data that is small inside
# the sandbox and large once copied out: a sparse file (64 MiB apparent size, one real byte) and 32 hard links to
# one 1 MiB file, under --disk 8M. A write-back that copies each name's st_size bytes writes about 96 MiB to the
# host's disk; with the default --file-size 1G, one job could so put many GiB there.
# Defence expected: the host receives no more than --disk of the job's data (holes kept as holes, hard links kept
# as links or counted once, or apparent sizes counted against the cap and the write-back refused beyond it).
# Judged from outside: the blocks allocated in the host's workdir after the job.
# bwrap, oci, gvisor: no overlay and no write-back, so --workdir is refused — with --disk by the --disk refusal,
# alone by the --workdir one (asserted, esc_workdir_cap_refused: exit 125, nothing written in the dir, the
# program never ran); there is nothing to amplify.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-symlink esc-fill
esc_workdir_cap_refused && exit 0

cap_kib=$((8 << 10))
wd=$(al_tmpdir 0777)
esc_run --workdir "$wd" --disk 8M --time 30 -- "$ESC/esc-symlink" amplify 64 32
esc_ran
al_log "inside: sparse file of $(esc_kv sparse-size) bytes holding $(esc_kv sparse-blocks-kib) KiB; $(esc_kv hardlinks) hard links to 1 MiB"
if [ "$(esc_kv sparse-size)" != $((64 << 20)) ] || [ "$(esc_kv hardlinks)" != 32 ]; then
	al_fail "the job could not make its sparse file and links: the check proves nothing"
fi
host_kib=$(du -sk "$wd" | cut -f1)
al_log "host: the workdir holds ${host_kib} KiB after the job"
[ "$host_kib" -le $((cap_kib + 64)) ] ||
	esc_escaped "the host's workdir holds ${host_kib} KiB after a --disk 8M job (sparse file and hard links written back in full)"
al_pass "the host holds ${host_kib} KiB"
