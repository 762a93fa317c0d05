#!/bin/bash
# userns.sh — attack: create a new user namespace and map ourselves to root in it (unshare(CLONE_NEWUSER), then
# setgroups/uid_map/gid_map), then use the capabilities that brings: a new mount namespace, mount, remount a
# read-only bind read-write, chroot, read a host secret. Also clone(CLONE_NEWUSER), clone3 (flags hidden from
# seccomp in memory) and unshare of every other namespace type.
# Defence: seccomp (unshare and namespace flags on clone: EPERM; clone3: ENOSYS so libc falls back to clone),
# locked mounts, the mount namespace.
# Judged: every namespace call fails, the secret's marker never appears, the canary is unchanged.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-userns

m=$(al_marker)
top=$(al_tmpdir 0755)
printf 'secret-file-%s\n' "$m" >"$top/secret.txt"
chmod 0644 "$top/secret.txt"
ro=$(al_tmpdir 0777)
printf 'canary-%s\n' "$m" >"$ro/canary"
chmod 0666 "$ro/canary"

esc_run --ro "$ro:/data" -- "$ESC/esc-userns" "$top/secret.txt" /data
esc_ran
esc_denied clone-newuser clone3-newuser unshare-newuser secret-after-userns
esc_denied_matching 'unshare-new[a-z]+'
esc_expect unshare-newuser EPERM
esc_expect clone-newuser EPERM
esc_expect clone3-newuser ENOSYS EPERM
esc_no_leak "$m"
al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary"
