#!/bin/bash
# userns.sh — attack: create a new user namespace and map ourselves to root in it (unshare(CLONE_NEWUSER), then
# setgroups/uid_map/gid_map), then use the capabilities that brings: a new mount namespace, mount, remount a
# read-only bind read-write, chroot, read a host secret. Also clone(CLONE_NEWUSER), clone3 (flags hidden from
# seccomp in memory) and unshare of every other namespace type.
# Defence: seccomp (unshare and namespace flags on clone: EPERM; clone3: ENOSYS so libc falls back to clone),
# locked mounts, the mount namespace.
# Judged: every namespace call fails, the secret's marker never appears, the canary is unchanged.
# gvisor: no seccomp filter; the Sentry implements user, mount, cgroup and time namespaces for itself (the host
# kernel never sees the calls: esc_sentry_answers), and root of such a namespace holds capabilities over the
# Sentry's objects only. Judged there: what that root could reach — mounting, remounting the read-only bind,
# writing the canary, reading the secret — all fail; namespaces the Sentry refuses (net, pid, uts, ipc) are
# still judged, and clone3 is ENOSYS (not implemented by this gVisor: the call never happens).
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
if esc_unfiltered; then
	esc_sentry_answers clone-newuser unshare-newuser unshare-newns unshare-newcgroup unshare-newtime
	al_assert_eq "$(esc_kv capeff-in-new-ns)" 0000003fffffffff "gvisor: root of the nested namespace (the Sentry's) holds every capability"
	esc_denied clone3-newuser unshare-newnet unshare-newpid unshare-newuts unshare-newipc secret-after-userns \
		nested-mount-tmpfs nested-remount-ro-dir-rw nested-canary-write
else
	esc_denied clone-newuser clone3-newuser unshare-newuser secret-after-userns
	esc_denied_matching 'unshare-new[a-z]+'
	esc_expect unshare-newuser EPERM
	esc_expect clone-newuser EPERM
fi
esc_expect clone3-newuser ENOSYS EPERM
esc_no_leak "$m"
al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary"
