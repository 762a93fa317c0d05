#!/bin/bash
# workdir-links.sh — attack: plant links in a --workdir so that the host-side write-back (airlock copying the job's
# changes back as its caller — root, when run as root) follows them out: links to a host secret and a host dir,
# "seed" (a file the host gave) replaced by a link to the secret, a hard link to a file outside, a file with set-id
# bits, a FIFO (a reader would block); then, in a second job on the same --workdir, replace the link "d" (now on
# the host, pointing at the victim dir) by a real directory holding "d/pwned", and the link "leak-file" by a
# regular file, so that a write-back that follows the host's existing links writes into the victim dir or over
# the secret.
# Defence: the write-back walks both trees with *at() calls that never follow a link, copies links as links,
# strips set-id bits, skips special files.
# Judged from outside: the secret and the victim dir are unchanged; the links came back as links; no set-id bit
# and no FIFO on the host; airlock returned promptly.
# bwrap, oci, gvisor: there is no overlay and no write-back; the dir could only be bound read-write, so every
# change — the set-id bit the job sets on its own file, the FIFO — would land on the host as the job left it.
# These backends refuse --workdir instead (exit 125, before anything runs). Judged there: both jobs are refused
# with the --workdir message, the program never ran, and the workdir, the secret and the victim dir are unchanged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-symlink

m=$(al_marker)
sec=$(al_tmpdir 0755)
printf 'secret-file-%s\n' "$m" >"$sec/secret.txt"
chmod 0666 "$sec/secret.txt" # writable by anyone: only the write-back's care protects it
victim=$(al_tmpdir 0777)
printf 'victim-%s\n' "$m" >"$victim/canary"
wd=$(al_tmpdir 0777)
printf 'seed-%s\n' "$m" >"$wd/seed"
chmod 0666 "$wd/seed"
sec_before=$(esc_tree_sum "$sec")
victim_before=$(esc_tree_sum "$victim")

if al_workdir_refused; then
	wd_before=$(esc_tree_sum "$wd")
	al_expect_workdir_refused "$wd" --ro "$ESC_DIR:$ESC" --time 20 -- "$ESC/esc-symlink" plant "$sec/secret.txt" "$victim" 1
	al_expect_workdir_refused "$wd" --ro "$ESC_DIR:$ESC" --time 20 -- "$ESC/esc-symlink" swap
	al_assert_eq "$(esc_tree_sum "$wd")" "$wd_before" "the workdir after the refused jobs"
	al_assert_eq "$(esc_tree_sum "$sec")" "$sec_before" "the host secret's dir after the refused jobs"
	al_assert_eq "$(esc_tree_sum "$victim")" "$victim_before" "the victim dir after the refused jobs"
	al_assert_eq "$(cat "$wd/seed")" "seed-$m" "the workdir's seed after the refused jobs"
	setid=$(find "$wd" -perm /6000 -printf '%p %m\n')
	[ -z "$setid" ] || esc_escaped "set-id files in the workdir: $setid"
	al_pass "$AL_BACKEND refuses --workdir: no link, set-id file or FIFO can reach the host through it"
	exit 0
fi

# ---- job 1: plant
esc_run --workdir "$wd" --time 20 -- "$ESC/esc-symlink" plant "$sec/secret.txt" "$victim" 1
esc_ran
esc_denied write-through-leak-dir hardlink-outside
al_assert_eq "$(esc_tree_sum "$sec")" "$sec_before" "the host secret's dir after job 1"
al_assert_eq "$(esc_tree_sum "$victim")" "$victim_before" "the victim dir after job 1"
for l in leak-file leak-dir d seed; do
	[ -L "$wd/$l" ] || [ ! -e "$wd/$l" ] || esc_escaped "job 1: $l came back as a $(stat -c %F "$wd/$l"), not as a link"
done
! grep -rqF "secret-file-$m" "$wd" --no-dereference 2>/dev/null ||
	esc_escaped "job 1: the secret's content was copied into the workdir"
setid=$(find "$wd" -perm /6000 -printf '%p %m\n')
[ -z "$setid" ] || esc_escaped "job 1: set-id bits reached the host: $setid"
fifo=$(find "$wd" -type p -o -type c -o -type b)
[ -z "$fifo" ] || esc_escaped "job 1: special files reached the host: $fifo"
al_pass "job 1: links came back as links, nothing followed, no set-id bits, no special files"

# ---- job 2: swap the links for real files and dirs
esc_run --workdir "$wd" --time 20 -- "$ESC/esc-symlink" swap
esc_ran
al_assert_eq "$(esc_tree_sum "$sec")" "$sec_before" "the host secret's dir after job 2"
al_assert_eq "$(esc_tree_sum "$victim")" "$victim_before" "the victim dir after job 2"
[ ! -e "$victim/pwned" ] || esc_escaped "job 2: the write-back followed the host link 'd' into the victim dir"
al_assert_eq "$(cat "$sec/secret.txt")" "secret-file-$m" "the host secret after job 2"
al_log "after job 2: d is a $(stat -c %F "$wd/d" 2>/dev/null || echo missing), leak-file is a $(stat -c %F "$wd/leak-file" 2>/dev/null || echo missing)"
al_pass "job 2: the write-back did not follow the links the first job left on the host"
