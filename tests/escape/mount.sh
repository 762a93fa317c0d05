#!/bin/bash
# mount.sh — attack: rearrange the mount table to reach the host: mount a tmpfs or proc, bind "/", remount "/",
# /usr and a read-only bind read-write, unmount a bind or /workspace to uncover what lies beneath, the new mount
# API (fsopen, open_tree, move_mount, mount_setattr, fspick), pivot_root, setns into init's mount namespace,
# unshare(CLONE_NEWNS), and the classic chroot + fchdir escape; then read a host secret and write a canary.
# All of it first tries to run as root of a user + mount namespace of its own (unshare, map root).
# Defence: seccomp (every mount call, pivot_root, setns, unshare, chroot: EPERM), no capabilities, mounts locked
# by the user namespace, the mount namespace.
# Judged from outside: the secret's marker never appears, the canary behind the read-only bind is unchanged.
# gvisor: no seccomp filter; the Sentry (gVisor's kernel in user space) gives the job a user and mount namespace
# of its own and a chroot inside its own VFS (esc_sentry_answers: the host kernel never sees the calls). What
# they could reach is still judged: every mount, remount, umount and new-mount-API call fails, the chroot climb
# ends at the sandbox's root, the secret stays unread and the canary unchanged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-mount

m=$(al_marker)
top=$(al_tmpdir 0755)
mkdir -m 0755 "$top/secret"
printf 'secret-file-%s\n' "$m" >"$top/secret/secret.txt"
chmod 0644 "$top/secret/secret.txt"
ro=$(al_tmpdir 0777)
printf 'canary-%s\n' "$m" >"$ro/canary"
chmod 0666 "$ro/canary"
before=$(esc_tree_sum "$ro")

esc_run --ro "$ro:/data" -- "$ESC/esc-mount" "$top/secret/secret.txt" /data
esc_ran
esc_unfiltered_answers nest-userns unshare-newns chroot-jail chroot-dot
esc_denied mount-tmpfs mount-bind-root mount-proc remount-root-rw remount-ro-dir-rw remount-usr-rw \
	umount-ro-dir umount-workspace fsopen open_tree-clone-root move_mount mount_setattr-ro-dir-rw fspick-root \
	pivot_root setns-init-mntns \
	canary-after-remount canary-after-umount canary-after-setattr root-tmpfile-after-remount \
	secret-after-chroot secret-relative-after-climb
esc_expect mount-tmpfs EPERM
esc_unfiltered || esc_expect chroot-jail EPERM
esc_no_leak "$m"
al_assert_eq "$(esc_tree_sum "$ro")" "$before" "digest of the read-only bound dir"
al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary"
