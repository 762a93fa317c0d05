#!/bin/bash
# write.sh — attack: change files outside the workspace: a bound read-only dir (overwrite, append, reopen through
# /proc/self/fd, truncate, chmod, chown, utimes, xattr, rename, unlink, link, create, mkdir, symlink, mkfifo,
# O_TMPFILE), a host dir that was never bound (by its path, /proc/1/root, ".."), and /, /etc, /usr, /dev, /proc
# (probed without writing: O_TMPFILE and an append-open that writes nothing). Under oci, /dev (crun's tmpfs, owned by
# the payload as an ordinary user) must refuse by its read-only mount: EROFS.
# Defence: read-only bind mounts (EROFS), read-only root tmpfs, mount namespace, Landlock, DAC.
# Judged from outside: the bound dir's digest and canary, the unbound dir's listing, the host's /etc/passwd.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-write

m=$(al_marker)
ro=$(al_tmpdir 0777)
printf 'canary-%s\n' "$m" >"$ro/canary"
chmod 0666 "$ro/canary"
host=$(al_tmpdir 0777)
ro_before=$(esc_tree_sum "$ro")
host_before=$(esc_tree_sum "$host")
passwd_before=$(sha256sum </etc/passwd)

esc_run --ro "$ro:/data" -- "$ESC/esc-write" /data "$host"
esc_ran
# The program could write where it may, so its refusals elsewhere are the sandbox's.
al_assert_eq "$(esc_kv control-workspace)" OK "control: write to /workspace"
al_assert_eq "$(esc_kv control-tmp)" OK "control: write to /tmp"
esc_denied_matching 'ro-[a-z-]+|tmpfile\[ro-dir\]'
esc_denied host-create host-create-proc-root host-create-dotdot host-mkdir
esc_denied_matching 'tmpfile\[[^]]*\]|append\[[^]]*\]'
# The read-only mount is what refuses the canary, even though its mode is 0666.
esc_expect ro-overwrite EROFS EACCES
if al_backend_is oci; then
	# crun's /dev is a tmpfs the payload owns as an ordinary user: the read-only remount (OCI
	# readonlyPaths) is what refuses a file there, not its owner or mode.
	esc_expect 'tmpfile[/dev]' EROFS
fi

al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary behind the read-only bind"
al_assert_eq "$(esc_tree_sum "$ro")" "$ro_before" "digest of the read-only bound dir"
al_assert_eq "$(esc_tree_sum "$host")" "$host_before" "digest of the never-bound host dir"
al_assert_eq "$(sha256sum </etc/passwd)" "$passwd_before" "host /etc/passwd"

# Control: bound read-write instead, the same program does change the canary and the judge
# sees it (harmless: the dir is this test's own).
esc_run --rw "$ro:/data" -- "$ESC/esc-write" /data "$host"
esc_ran
al_assert_eq "$(esc_kv ro-append)" OK "control: append through a read-write bind"
[ "$(esc_tree_sum "$ro")" != "$ro_before" ] || al_fail "control: a read-write bind changed nothing the judge could see"
al_pass "the control run changes the bound dir, so the judge can fail"
