#!/bin/bash
# umask.sh — the caller's umask never reaches the sandbox's layout: under umask 077 (hardened service
# units, root shells) and 000, every directory and file airlock makes for the sandbox has the mode it
# has under 022, the payload can list /etc and read /etc/ssl/openssl.cnf, node starts, and the
# payload's own umask is 022 — on every backend (the bundle oci and gvisor read, bwrap's own mkdirs).
. "$(dirname "$0")/../lib.sh"

# The modes of the layout (python's stat: gVisor's statx refuses coreutils' flags), what the payload
# can do with /etc, and its umask. One line per path: "PATH MODE", then "umask=...", "etc=N files".
# shellcheck disable=SC2016
look='
import os, stat
for p in ("/", "/etc", "/etc/ssl", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname",
          "/etc/nsswitch.conf", "/tmp", "/workspace", "/dev", "/dev/shm", "/dev/null", __file__):
    try:
        print(p, oct(stat.S_IMODE(os.stat(p).st_mode)))
    except OSError as e:
        print(p, "error", e.errno)
print("umask=%04o" % os.umask(0o22))
print("etc=%s" % ("ok" if "passwd" in os.listdir("/etc") else "no passwd"))
print("openssl.cnf=%s" % ("ok" if open("/etc/ssl/openssl.cnf").read(1) else "empty"))
'

declare -A layout
for um in 022 077 000; do
	# airlock exec writes its code file (__file__) for the sandbox: its mode too.
	umask "$um"
	al_run exec --lang python -c "$look"
	umask 022
	al_assert_rc 0
	al_assert_contains "$AL_OUT" "umask=0022" "the payload's umask (caller's $um)"
	al_assert_contains "$AL_OUT" "etc=ok" "listing /etc (caller's umask $um)"
	al_assert_contains "$AL_OUT" "openssl.cnf=ok" "reading /etc/ssl/openssl.cnf (caller's umask $um)"
	al_assert_not_contains "$AL_OUT" " error " "stat of the layout (caller's umask $um)"
	layout[$um]=$AL_OUT
done
al_assert_eq "${layout[077]}" "${layout[022]}" "the layout under umask 077 vs 022"
al_assert_eq "${layout[000]}" "${layout[022]}" "the layout under umask 000 vs 022"
# And what the modes are: readable system files, a sticky world-writable /tmp, nothing else
# writable by all.
for want in "/etc 0o755" "/etc/ssl 0o755" "/tmp 0o1777" "/workspace 0o755"; do
	al_assert_contains "${layout[077]}" "$want" "mode under umask 077"
done
bad=""
while read -r path mode; do
	case "$path" in /tmp | /dev/shm | /dev/null | [!/]*) continue ;; esac
	[ $((8#${mode#0o} & 2)) = 0 ] || bad="$bad $path=$mode"
done <<<"${layout[000]}"
[ -z "$bad" ] || al_fail "world-writable under umask 000: $bad"
grep -q '^/etc/passwd 0o[46]44$' <<<"${layout[077]}" || al_fail "/etc/passwd under umask 077: ${layout[077]}"
al_pass "umask 077 and 000 leave the layout as under 022"

# node reads /etc/ssl/openssl.cnf at start: it died there under umask 077.
if [ -x /usr/bin/node ]; then
	umask 077
	al_run run -- /usr/bin/node -e 'console.log("node-ok")'
	umask 022
	al_assert_rc 0
	al_assert_eq "$AL_OUT" node-ok "node under umask 077"
fi
umask 077
if al_backend_is gvisor; then
	# This runsc answers coreutils' statx with EINVAL whatever the umask: the shell lists instead.
	al_run run -- /bin/sh -c 'echo /etc/*'
else
	al_run run -- /bin/ls /etc
fi
umask 022
al_assert_rc 0
al_assert_contains "$AL_OUT" passwd "ls /etc under umask 077"
