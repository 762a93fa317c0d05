#!/bin/bash
# workdir.sh — --workdir under the --disk cap: the job writes into an overlay whose upper layer is
# a tmpfs of --disk bytes, and its changes reach the host directory when it ends. A 1.2 GiB fill
# against a 1 GiB cap stops at the cap (ENOSPC) and the host disk takes no more than the cap.
AL_GUARD_MEMORY=4G # the 1 GiB upper layer and the written-back page cache, inside the guard
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
if [ "$AL_TEST_MODE" = root ]; then owner=$((AL_ID_BASE + 1000)); else owner=$AL_NOBODY_UID; fi

# Under a backend without the overlay (AL_BACKEND bwrap, oci, gvisor) there is nothing to write
# back or cap: --workdir is refused, --disk or not, and the directory stays as it was.
if al_workdir_refused; then
	wd=$(al_tmpdir 0755)
	echo old >"$wd/a"
	ln -s /etc/passwd "$wd/link"
	chown -R "$owner:$owner" "$wd"
	al_expect_workdir_refused "$wd"
	al_expect_workdir_refused "$wd" --time 20 -- /bin/sh -c 'echo new >a; rm link; head -c 1048576 /dev/zero >fill'
	al_expect_refusal 'cannot cap --workdir with --disk' --disk 1G --workdir "$wd"
	al_assert_eq "$(cat "$wd/a") $(readlink "$wd/link")" "old /etc/passwd" "the --workdir after the refusals"
	exit 0
fi

# ---- changes come back: modified, created, deleted, renamed, links (never followed)
wd=$(al_tmpdir 0755)
rm -f "$wd/.airlock-test"
mkdir -p "$wd/keep" "$wd/gone/sub"
echo old >"$wd/a"
echo k >"$wd/keep/k"
echo g >"$wd/gone/sub/g"
ln -s /etc/passwd "$wd/link"
chown -R "$owner:$owner" "$wd"
al_run run --json --workdir "$wd" -- /bin/sh -c '
	echo new > a; echo b > b; rm -rf gone; mkdir -p n/m; echo deep > n/m/f
	rm link; ln -s ../../outside lnk; mkdir keep2; mv keep/k keep2/; cat /workspace/a'
al_assert_rc 0
al_assert_eq "$(j stdout.data)" new "the job sees its own write"
al_assert_eq "$(cat "$wd/a")" new "modified file written back"
al_assert_eq "$(cat "$wd/b")" b "new file written back"
al_assert_eq "$(cat "$wd/n/m/f")" deep "new tree written back"
al_assert_eq "$(cat "$wd/keep2/k")" k "renamed file written back"
[ ! -e "$wd/gone" ] || al_fail "a deleted tree is still on the host"
[ ! -e "$wd/keep/k" ] || al_fail "a renamed file is still at its old place"
[ ! -L "$wd/link" ] || al_fail "a deleted link is still on the host"
al_assert_eq "$(readlink "$wd/lnk")" ../../outside "a link comes back as a link"
al_assert_eq "$(j workdir.error)" null "verdict workdir.error"
al_pass "changes written back: $(j workdir)"
touch "$wd/.airlock-test"

# ---- inode numbers: what readdir reports (os.scandir, find, du, rsync, git) is what stat reports,
# for the host's files and directories (the overlay's lower layer), ones the job made (its upper
# layer) and ones it changed (copied up), and every entry has /workspace's st_dev. Without xino
# the overlay, whose layers are on two filesystems, reports the lower directories' real inode
# numbers in readdir but numbers of its own in stat.
wd=$(al_tmpdir 0755)
rm -f "$wd/.airlock-test"
mkdir -p "$wd/d1/d2"
echo a >"$wd/f1"
echo b >"$wd/d1/f2"
chown -R "$owner:$owner" "$wd"
al_run run --workdir "$wd" -- /usr/bin/python3 -c '
import os
os.mkdir("/workspace/new"); open("/workspace/new/f", "w").close(); open("/workspace/d1/f2", "a").write("c")
bad, n, devs = [], 0, set()
for root, dirs, files in os.walk("/workspace"):
    for e in os.scandir(root):
        st = os.stat(e.path, follow_symlinks=False)
        n += 1; devs.add(st.st_dev)
        if e.inode() != st.st_ino:
            bad.append("%s: readdir %d, stat %d" % (e.path, e.inode(), st.st_ino))
devs.add(os.stat("/workspace").st_dev)
print("entries=%d devices=%d" % (n, len(devs)))
print("\n".join(bad) or "consistent")'
al_assert_rc 0
al_assert_eq "$AL_OUT" "entries=6 devices=1
consistent" "readdir vs stat in a --workdir"
touch "$wd/.airlock-test"

# ---- the cap: 1.2 GiB written against --disk 1G
wd=$(al_tmpdir 0755)
chown "$owner:$owner" "$wd"
# The upper layer's pages count against the job's memory: where there is a cgroup, raise it.
mem=()
al_run run --json -- /bin/true
[ "$(al_json_type "$AL_OUT" enforced.cgroup)" = object ] && mem=(--memory 3G)
al_run run --json --disk 1G "${mem[@]}" --file-size 2G --time 120 --workdir "$wd" -- /bin/sh -c \
	'head -c 1288490188 /dev/zero > fill; echo rc=$?'
al_assert_contains "$(j stdout.data)" "rc=1" "the fill failed"
al_assert_contains "$(j stderr.data)" "No space left on device" "the fill stopped at the cap"
size=$(stat -c %s "$wd/fill")
[ "$size" -le $((1 << 30)) ] || al_fail "the host got $size bytes under --disk 1G"
[ "$size" -ge $((1 << 29)) ] || al_fail "only $size bytes came back: the job's writes were lost"
# What the host's disk holds now because of the job: the blocks allocated under the work directory
# (the upper layer lived in the job's own tmpfs and is gone). Measured there, not by the
# filesystem's free space, which every other process on the machine moves too.
used=$(du -s -B1 "$wd" | cut -f1)
[ "$used" -le $(((1 << 30) + (64 << 20))) ] || al_fail "the host disk lost $used bytes under --disk 1G"
al_pass "1.2 GiB fill: $size bytes reached the host, disk use +$((used >> 20)) MiB"
rm -f "$wd/fill"
