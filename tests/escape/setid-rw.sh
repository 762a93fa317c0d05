#!/bin/bash
# setid-rw.sh — attack: leave a set-user-id or set-group-id file in a host directory granted read-write (--rw).
# Inside, every mount is nosuid; on the host the file would be a set-id program owned by the payload's host uid
# (an id of the range payloads share when airlock runs as root, the caller otherwise), so a host user running it
# would become that uid (issue 8). esc-setid tries every way: chmod (also with junk above the mode), fchmod,
# fchmodat, fchmodat2, open/openat/creat with O_CREAT, O_TMPFILE + link, mknod/mknodat of a regular file,
# mkdir/mkdirat, chmod g+s on a directory, openat2 with O_CREAT (mode in a struct seccomp cannot read).
# Defence: the seccomp profile (default and strict) refuses every mode with S_ISUID or S_ISGID (EPERM) and
# answers openat2 with ENOSYS (EPERM under gvisor, whose runsc ignores errnoRet) — on every backend: native and
# bwrap load airlock's BPF, oci (crun) loads it from the bundle, gvisor's Sentry enforces the same rules as
# linux.seccomp with masked comparisons.
# Judged from outside: find(1) on the host sees no file with a set-id bit under the directory.
# Controls: in the same job a plain file is created and chmod 0755 works (the host sees mode 755: the job did
# write the host dir, and the judge sees modes), and an open without O_CREAT passes whatever its mode argument
# (the filter refuses only what makes a set-id file); and the same program with --seccomp off does leave set-id
# files there (the judge can fail; the protection is the profile's, off with --seccomp off or --profile none).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-setid

# setid_files DIR: every file under DIR with S_ISUID or S_ISGID, as the host sees it.
setid_files() { find "$1" -perm /6000 -printf '%P %m %u:%g\n'; }

attempts="chmod-4755 chmod-2755 chmod-hi-4755 fchmod-4755 fchmodat-2755 open-creat-4755 openat-creat-6755
	openat-hi-4755 creat-4755 tmpfile-4755 mknod-4755 mknodat-2755 mkdir-2755 mkdirat-4755 chmod-dir-2755"

for profile in default strict; do
	rw=$(al_tmpdir 0777)
	esc_run --seccomp "$profile" --rw "$rw:/rw" -- "$ESC/esc-setid" /rw
	esc_ran
	al_assert_eq "$(esc_v enforced.seccomp)" "$profile" "$profile: enforced.seccomp"
	# controls: the job wrote the host dir, and a plain chmod reached it
	al_assert_eq "$(esc_kv control-create) $(esc_kv control-chmod-0755) $(esc_kv control-open-nocreate)" "OK OK OK" \
		"$profile: the controls inside (create, chmod 0755, an open that makes no file with a set-id mode argument)"
	al_assert_eq "$(stat -c %a "$rw/control")" 755 "$profile: the control's mode on the host"
	# shellcheck disable=SC2086 # a word list
	esc_denied $attempts
	for n in $attempts; do
		al_assert_eq "$(esc_kv "$n")" EPERM "$profile: $n refused by the profile"
	done
	# fchmodat2 is EPERM where this libseccomp knows it, ENOSYS (glibc falls back) above its horizon
	esc_expect fchmodat2-4755 EPERM ENOSYS
	# openat2: ENOSYS, so libc falls back to openat; gvisor's runsc cannot return ENOSYS from a rule
	if esc_gvisor; then
		esc_expect openat2-creat-4755 EPERM
	else
		esc_expect openat2-creat-4755 ENOSYS
	fi
	found=$(setid_files "$rw")
	[ -z "$found" ] || esc_escaped "$profile: set-id files on the host: $found"
	al_pass "$profile: no set-id file reached the host dir ($(find "$rw" -mindepth 1 | wc -l) entries, none set-id)"
done

# ---- the judge can fail: without the profile the same program leaves set-id files on the host
rw=$(al_tmpdir 0777)
esc_run --seccomp off --rw "$rw:/rw" -- "$ESC/esc-setid" /rw
esc_ran
al_assert_eq "$(esc_v enforced.seccomp)" false "--seccomp off: enforced.seccomp"
al_assert_eq "$(esc_kv chmod-4755)" OK "--seccomp off: chmod 04755"
found=$(setid_files "$rw")
[ -n "$found" ] || { esc_dump; al_fail "--seccomp off: no set-id file on the host: the judge could not see one"; }
# On the host kernel every attempt is a real vector: each leaves its set-id file (mkdir's bits excepted: Linux
# drops them, so only chmod g+s makes "dir" set-group-id). gVisor's own VFS drops the bits of some creating
# calls by itself; there the control only shows that chmod's reach the host.
if ! esc_gvisor; then
	want="chmod-g chmod-hi chmod-u creat dir fchmod fchmodat fchmodat2 mknod mknodat open openat openat-hi openat2 tmpfile"
	[ "$(esc_kv fchmodat2-4755)" = OK ] || want=${want/ fchmodat2/}
	got=$(printf '%s\n' "$found" | cut -d' ' -f1 | LC_ALL=C sort | tr '\n' ' ')
	al_assert_eq "${got% }" "$want" "--seccomp off: the attempts that left a set-id file on the host"
fi
al_pass "control: with --seccomp off the judge sees set-id files on the host: $(printf '%s' "$found" | tr '\n' ',')"

# ---- --workdir (native only; the others refuse it, workdir-links.sh): its write-back is a second layer that
# drops set-id bits by itself, shown here with the filter off so the job really makes the set-id files
if ! al_workdir_refused; then
	wd=$(al_tmpdir 0777)
	esc_run --seccomp off --workdir "$wd" -- "$ESC/esc-setid" /workspace
	esc_ran
	al_assert_eq "$(esc_kv chmod-4755) $(esc_kv mode[chmod-u])" "OK 4755" "--workdir, --seccomp off: a set-id file inside"
	[ -f "$wd/chmod-u" ] || { esc_dump; al_fail "--workdir: the write-back did not bring chmod-u back"; }
	found=$(setid_files "$wd")
	[ -z "$found" ] || esc_escaped "--workdir: the write-back kept set-id bits: $found"
	al_pass "--workdir with the filter off: $(find "$wd" -mindepth 1 | wc -l) entries written back, none set-id"
fi
