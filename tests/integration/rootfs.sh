#!/bin/bash
# rootfs.sh — --rootfs DIR: the system directories come from DIR (an unpacked tree), not the
# host: a program only DIR has runs, the host's /usr is not visible; bad trees are refused.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
root=$(al_tmpdir)
mkdir -p "$root/usr/bin" "$root/etc"
ln -s usr/bin "$root/bin"
install -m 0755 "$AL_PROBE" "$root/usr/bin/only-in-rootfs"
chmod -R a+rX "$root"

al_run run --json --rootfs "$root" -- /usr/bin/only-in-rootfs ls /usr/lib/python3
al_assert_rc 1 # ls of a missing directory
al_assert_contains "$(j stdout.data)" "ls=ENOENT" "the host's /usr/lib/python3 under --rootfs"
al_run run --json --rootfs "$root" -- only-in-rootfs ls /bin
al_assert_contains "$(j stdout.data)" "only-in-rootfs" "the rootfs's merged-usr link"
al_run run --json -- /bin/sh -c 'test -e /usr/bin/only-in-rootfs && echo leaked || echo absent'
al_assert_eq "$(j stdout.data)" absent "without --rootfs the host's tree"
al_pass "--rootfs replaces the system directories"

# profiles may change the rootfs (it is not a widening knob)
al_run run --json --profile untrusted-code-read --rootfs "$root" -- /usr/bin/only-in-rootfs ls /usr/lib/python3
al_assert_contains "$(j stdout.data)" "ls=ENOENT" "--rootfs under a profile"
al_pass "a profile's rootfs may be overridden"

al_run run --rootfs "$root/usr" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "no usr directory" "a tree without usr"
al_run run --rootfs "$root/missing" -- /bin/true
al_assert_rc 125
al_run run --rootfs / -- /bin/true
al_assert_rc 125
al_pass "bad rootfs trees are refused with 125"
