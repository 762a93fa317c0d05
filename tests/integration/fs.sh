#!/bin/bash
# fs.sh — the payload writes only to its workspace, /tmp and what it was given rw; secrets stay unseen.
. "$(dirname "$0")/../lib.sh"

m=$(al_marker)
sh_in() { al_box -- /bin/sh -c "$1"; }

# ---- writes outside the workspace fail. Host system paths are only ever probed with
# `writable`, which opens for append (or access(W_OK) for a dir) and writes nothing, so
# even a sandbox that failed completely could not damage the host through this test.
# Real writes are aimed at --ro binds of our own temp dirs only (below).
passwd_before=$(sha256sum /etc/passwd)
# Permission is checked before the read-only mount for paths the payload does not own,
# so EACCES is as good as EROFS here; the --ro canary below (0666 file in a 0777 dir)
# is where only the read-only mount can say no.
for target in /etc/passwd /usr/bin/env / /usr /etc /usr/bin /usr/lib /workspace/..; do
	al_probe -- writable "$target"
	al_assert_rc 1
	case "$(al_kv writable)" in
	EROFS | EACCES) al_pass "$target is not writable inside ($(al_kv writable))" ;;
	*) al_fail "writability of $target inside: expected EROFS or EACCES, got '$(al_kv writable)'" ;;
	esac
done
al_probe -- writable /proc/sys/kernel/hostname
al_assert_rc 1
al_assert_not_contains "$(al_kv writable)" OK "writability of /proc/sys/kernel/hostname inside"
al_assert_eq "$(sha256sum /etc/passwd)" "$passwd_before" "host /etc/passwd"

# A --ro bind of a world-writable dir: only the mount stops the write (EROFS), and the
# host canary keeps its content.
ro=$(al_tmpdir 0777)
printf 'canary-%s\n' "$m" >"$ro/canary"
chmod 0666 "$ro/canary"
al_probe --ro "$ro:/data" -- write /data/canary clobbered
al_assert_rc 1
al_assert_eq "$(al_kv write)" EROFS "write into a --ro bind"
al_probe --ro "$ro:/data" -- write /data/new clobbered
al_assert_eq "$(al_kv write)" EROFS "create in a --ro bind"
al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary"
[ ! -e "$ro/new" ] || al_fail "a file appeared in the host dir behind a --ro bind"
# --ro SRC:DEST reads; --ro SRC alone binds at the same path.
al_probe --ro "$ro:/data" -- read /data/canary
al_assert_rc 0
al_assert_eq "$AL_OUT" "canary-$m" "read through --ro SRC:DEST"
if al_backend_is gvisor; then
	# runsc 20221219 cannot make a bind mount inside one of the container's tmpfs mounts (here
	# /tmp, where the host path lands): the runtime refuses, the payload never runs. Its gofer
	# says so as a mount's EINVAL or, as on this host since 2026-12-02, as the mount point's
	# mkdir refused (the sandbox's start then reads EOF on its sync file).
	al_expect_refusal 'mounting.*Invalid argument|bind mount \(mkdir .*permission denied' --ro "$ro"
	al_expect_refusal 'mounting.*Invalid argument|bind mount \(mkdir .*permission denied' --ro "$ro:/workspace/data"
	# gVisor of this age answers statx with AT_NO_AUTOMOUNT (as coreutils' stat and ls -l
	# pass it) with EINVAL; without that flag, and stat(2), work.
	al_run run -- python3 -c '
import ctypes, os
libc, buf = ctypes.CDLL(None, use_errno=True), ctypes.create_string_buffer(256)
for name, flags in (("plain", 0), ("no_automount", 0x800)):
    r = libc.statx(-100, b"/etc/passwd", flags, 0x7ff, buf)
    print("statx_%s=%s" % (name, "ok" if r == 0 else os.strerror(ctypes.get_errno())))
print("stat=%s" % ("ok" if os.stat("/etc/passwd").st_size > 0 else "empty"))'
	al_assert_rc 0
	al_assert_eq "$(al_kv statx_plain)" ok "statx without AT_NO_AUTOMOUNT under gvisor"
	al_assert_eq "$(al_kv statx_no_automount)" "Invalid argument" "statx with AT_NO_AUTOMOUNT under gvisor"
	al_assert_eq "$(al_kv stat)" ok "stat(2) under gvisor"
else
	al_probe --ro "$ro" -- read "$ro/canary"
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "canary-$m" "read through --ro SRC"
fi

# ---- secrets: a 0600 host file is not visible, and not readable even when its dir is bound
sec=$(al_tmpdir 0755)
printf 'secret-%s\n' "$m" >"$sec/secret"
chmod 0600 "$sec/secret"
al_probe -- read "$sec/secret"
al_assert_rc 1
al_assert_eq "$(al_kv read)" ENOENT "read of a host secret by its host path"
al_probe --ro "$sec:/sec" -- read /sec/secret
al_assert_rc 1
al_assert_not_contains "$AL_OUT" "secret-$m" "read of a bound 0600 secret"
al_assert_eq "$(al_kv read)" EACCES "read of a bound 0600 root-owned secret"
for p in /root /etc/shadow; do
	al_probe -- ls "$p"
	al_assert_rc 1
	al_assert_eq "$(al_kv ls)" ENOENT "ls $p inside"
done
# /home is the sandbox's own: one link, user -> the workspace (E2B's home directory), none of the
# host's homes (listed by the shell's glob: gVisor of this age refuses ls's statx).
al_run run -- sh -c 'for f in /home/* /home/.[!.]*; do [ -e "$f" ] || [ -L "$f" ] && echo "${f#/home/}"; done; readlink /home/user'
al_assert_rc 0
al_assert_eq "$AL_OUT" "user
/workspace" "/home inside holds only the link to the workspace"
[ -d /root ] || al_fail "control: host has no /root"
al_probe -- read /etc/passwd
al_assert_contains "$AL_OUT" "user:x:1000:1000:" "sandbox /etc/passwd"
al_assert_not_contains "$AL_OUT" "$(head -n 3 /etc/passwd | tail -n 1)" "sandbox /etc/passwd (host entries)"

# ---- the system's Python configuration, read-only: Debian's /usr/lib/python3.N/sitecustomize.py
# links into /etc/python3.N, and a stdlib file that dangles inside fails whatever opens them all
# (CPython's test___all__, test_ast, test_unparse).
for link in /usr/lib/python3*/sitecustomize.py; do
	[ -L "$link" ] && [ -f "$link" ] || continue
	al_probe -- read "$link"
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "$(cat "$link")" "$link (a link to $(readlink "$link")) inside"
	al_probe -- writable "$(dirname "$(readlink -f "$link")")"
	al_assert_rc 1
	case "$(al_kv writable)" in
	EROFS | EACCES) al_pass "$(dirname "$(readlink -f "$link")") is not writable inside ($(al_kv writable))" ;;
	*) al_fail "writability of $(dirname "$(readlink -f "$link")") inside: expected EROFS or EACCES, got '$(al_kv writable)'" ;;
	esac
done

# ---- /workspace and /tmp are writable, and thrown away afterwards
# (Unique names: should /tmp inside ever be the host's, nothing of anyone else's is hit.)
sh_in "$P write /workspace/$m.f ws-$m && $P read /workspace/$m.f && $P write /tmp/$m.f tmp-$m && $P read /tmp/$m.f"
al_assert_rc 0
al_assert_contains "$AL_OUT" "ws-$m" "/workspace round trip"
al_assert_contains "$AL_OUT" "tmp-$m" "/tmp round trip"
[ ! -e "/tmp/$m.f" ] || { rm -f "/tmp/$m.f"; al_fail "the sandbox's /tmp is the host's /tmp"; }
al_probe -- read "/workspace/$m.f"
al_assert_eq "$(al_kv read)" ENOENT "the previous run's /workspace file"
al_probe -- read "/tmp/$m.f"
al_assert_eq "$(al_kv read)" ENOENT "the previous run's /tmp file"
al_probe -- status
al_assert_eq "$(al_kv cwd)" /workspace "default cwd"

# ---- --workdir DIR: native makes /workspace an overlay on DIR and copies the changes back when
# the job ends. A backend without that overlay (bwrap, oci, gvisor) could only bind DIR read-write,
# so the job's set-id files, FIFOs and modes would land on the host: it refuses --workdir (125),
# and nothing in DIR changes. (--workdir with --disk is refused first, by its own message.)
wd=$(al_tmpdir 0755)
chown "$AL_PAYLOAD_HOST_UID" "$wd" 2>/dev/null || chmod 0777 "$wd"
printf 'seed-%s\n' "$m" >"$wd/seed"
chmod 0644 "$wd/seed"
if al_workdir_refused; then
	al_expect_workdir_refused "$wd"
	al_expect_workdir_refused "$wd" -- "$P" write /workspace/out.txt "out-$m"
	[ ! -e "$wd/out.txt" ] || al_fail "--workdir: the refused job's /workspace/out.txt is on the host"
	al_assert_eq "$(cat "$wd/seed")" "seed-$m" "the --workdir seed after the refusals"
	al_expect_refusal 'cannot cap --workdir with --disk' --workdir "$wd" --disk 8M
else
	al_box --workdir "$wd" -- /bin/sh -c "$P read /workspace/seed && $P write /workspace/out.txt out-$m"
	al_assert_rc 0
	al_assert_contains "$AL_OUT" "seed-$m" "--workdir content inside"
	[ -f "$wd/out.txt" ] || al_fail "--workdir: /workspace/out.txt did not appear on the host"
	al_assert_eq "$(cat "$wd/out.txt")" "out-$m" "host copy of /workspace/out.txt"
	# The job's changes are written back by airlock, as its caller, when the job ends.
	al_assert_eq "$(stat -c %u "$wd/out.txt")" "$("${AL_SETPRIV[@]}" id -u)" "host owner of the written-back file"
fi

# ---- --rw SRC:DEST
rw=$(al_tmpdir 0777)
al_probe --rw "$rw:/out" -- write /out/x "rw-$m"
al_assert_rc 0
al_assert_eq "$(cat "$rw/x" 2>/dev/null)" "rw-$m" "host copy of a --rw write"

# ---- a private devpts on every backend: a pseudo-terminal pair opens (os.openpty, pty, script,
# expect need /dev/ptmx, a link into it), and its ptys are not the host's.
al_run run -- /usr/bin/python3 -c '
import os
m, s = os.openpty()
os.write(m, b"pty-ok\n")
print(os.read(s, 16).decode().strip(), os.ttyname(s))'
al_assert_rc 0
al_assert_contains "$AL_OUT" "pty-ok /dev/pts/0" "a pty pair inside (the first of a devpts of its own)"
