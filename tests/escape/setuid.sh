#!/bin/bash
# setuid.sh — attack: gain ids or capabilities through execve: a copy of a program planted in /workspace and /tmp
# with chmod 06755 (and chown 0 tried first); a set-id binary the host left in a bound dir and in --workdir, owned
# by another id of the sandbox's map (sandbox root, when run as root); a binary with file capabilities; and the
# host's own set-id binaries under /usr. The planted program is esc-whoami, which only reports what it got.
# Defence: nosuid on every mount, no_new_privs, no CAP_CHOWN/CAP_FSETID, set-id bits of unmapped owners ignored.
# Judged: after each exec the reporter's effective uid/gid are the payload's (1000) and it holds no capability.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-setuid esc-whoami

zero=0000000000000000
# gained PREFIX: the reporter's lines under PREFIX show nothing gained.
gained() {
	local p=$1 k
	[ -n "$(esc_kv "$p-euid")" ] || { esc_dump; al_fail "$p: the planted program did not run"; }
	for k in uid euid suid; do
		[ "$(esc_kv "$p-$k")" = 1000 ] || esc_escaped "$p: $k is $(esc_kv "$p-$k") after exec, not the payload's 1000"
	done
	for k in gid egid sgid; do
		[ "$(esc_kv "$p-$k")" = 1000 ] || esc_escaped "$p: $k is $(esc_kv "$p-$k") after exec, not the payload's 1000"
	done
	for k in CapEff CapPrm CapAmb; do
		[ "$(esc_kv "$p-$k")" = "$zero" ] || esc_escaped "$p: $k is $(esc_kv "$p-$k") after exec"
	done
	al_assert_eq "$(esc_kv "$p-NoNewPrivs")" 1 "$p: NoNewPrivs"
	al_pass "$p: euid $(esc_kv "$p-euid"), no capabilities"
}

# ---- planted from inside: /workspace and /tmp
for dir in /workspace /tmp; do
	esc_run -- "$ESC/esc-setuid" plant "$ESC/esc-whoami" "$dir"
	esc_ran
	esc_denied plant-chown-root
	al_log "$dir: chmod 06755 -> $(esc_kv plant-chmod-6755), mode $(esc_kv plant-mode), owner $(esc_kv plant-owner), nosuid mount $(esc_kv plant-mount-nosuid)"
	al_assert_eq "$(esc_kv plant-mount-nosuid)" 1 "$dir is mounted nosuid"
	gained planted
done

# ---- planted by the host: owned by another id (sandbox root when run as root; unmapped as a user)
planted=$(al_tmpdir 0755)
install -m 0755 "$ESC_DIR/esc-whoami" "$planted/suid"
if [ "$(id -u)" = 0 ]; then
	chown "$AL_ID_BASE:$AL_ID_BASE" "$planted/suid"
	chmod 06755 "$planted/suid"
	[ "$(stat -c %a "$planted/suid")" = 6755 ] || al_fail "could not plant the set-id file"
	# File capabilities on a second copy (the reporter only prints, so it is harmless anywhere).
	install -m 0755 "$ESC_DIR/esc-whoami" "$planted/fcap"
	have_fcap=false
	if command -v setcap >/dev/null && setcap cap_dac_override,cap_sys_admin+ep "$planted/fcap" 2>/dev/null; then
		have_fcap=true
	fi
else
	chmod 06755 "$planted/suid"
	have_fcap=false
fi
esc_run --ro "$planted:/planted" -- "$ESC/esc-setuid" exec /planted/suid host-bound
esc_ran
gained host-bound
workdir=$(al_tmpdir 0777)
cp -p "$planted/suid" "$workdir/suid"
esc_run --workdir "$workdir" -- "$ESC/esc-setuid" exec /workspace/suid host-workdir
esc_ran
gained host-workdir
if [ "$have_fcap" = true ]; then
	esc_run --ro "$planted:/planted" -- "$ESC/esc-setuid" exec /planted/fcap host-fcap
	esc_ran
	gained host-fcap
fi

# ---- the host's own set-id binaries are visible, but on nosuid mounts only
esc_run -- "$ESC/esc-setuid" scan
esc_ran
al_log "set-id files visible inside: $(esc_kv setid-files)"
al_assert_eq "$(esc_kv setid-without-nosuid-count)" 0 "set-id files on mounts without nosuid"
