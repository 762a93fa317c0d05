#!/bin/bash
# setuid.sh — attack: gain ids or capabilities through execve: a copy of a program planted in /workspace and /tmp
# with chmod 06755 (and chown 0 tried first); a set-id binary the host left in a bound dir and in --workdir, owned
# by another id of the sandbox's map (sandbox root, when run as root); a binary with file capabilities; and the
# host's own set-id binaries under /usr. The planted program is esc-whoami, which only reports what it got.
# Defence: nosuid on every mount, no_new_privs, no CAP_CHOWN/CAP_FSETID, set-id bits of unmapped owners ignored.
# Judged: after each exec the reporter's effective uid/gid are the payload's (1000) and it holds no capability.
# gvisor: gVisor's mountinfo shows no nosuid flag and its /proc/PID/status has no NoNewPrivs or CapAmb line; the
# defence there is the Sentry honouring the bundle's noNewPrivileges (it ignores set-id bits at exec). Asserted
# instead: the host-planted file really is set-id root inside (owner 0, mode 6755) and its exec gains nothing,
# which is what would make /usr's set-id binaries dangerous; ids and CapEff/CapPrm are judged as everywhere.
# bwrap, oci and gvisor have no --workdir overlay and refuse --workdir (asserted: nothing runs, the planted file is
# unchanged); the same host-planted set-id file is exec'd there through a read-write --rw bind instead, the host
# dir the job can reach read-write under those backends.
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
	local caps="CapEff CapPrm CapAmb"
	esc_gvisor && caps="CapEff CapPrm" # (gVisor's status has no CapAmb line)
	for k in $caps; do
		[ "$(esc_kv "$p-$k")" = "$zero" ] || esc_escaped "$p: $k is $(esc_kv "$p-$k") after exec"
	done
	if esc_gvisor; then
		al_assert_eq "$(esc_kv "$p-NoNewPrivs")" "?" "$p: NoNewPrivs (gVisor's status has no such line)"
	else
		al_assert_eq "$(esc_kv "$p-NoNewPrivs")" 1 "$p: NoNewPrivs"
	fi
	al_pass "$p: euid $(esc_kv "$p-euid"), no capabilities"
}

# ---- planted from inside: /workspace and /tmp
for dir in /workspace /tmp; do
	esc_run -- "$ESC/esc-setuid" plant "$ESC/esc-whoami" "$dir"
	esc_ran
	esc_denied plant-chown-root
	al_log "$dir: chmod 06755 -> $(esc_kv plant-chmod-6755), mode $(esc_kv plant-mode), owner $(esc_kv plant-owner), nosuid mount $(esc_kv plant-mount-nosuid)"
	if esc_gvisor; then
		al_log "gvisor: $dir nosuid as gVisor's mountinfo shows it: $(esc_kv plant-mount-nosuid) (set-id is judged by the exec)"
	else
		al_assert_eq "$(esc_kv plant-mount-nosuid)" 1 "$dir is mounted nosuid"
	fi
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
if esc_gvisor; then
	# The proof that the Sentry ignores set-id bits: this file is set-id root inside.
	al_assert_eq "$(esc_kv host-bound-owner) $(esc_kv host-bound-mode)" "0 6755" "gvisor: the planted file is set-id root inside"
fi
workdir=$(al_tmpdir 0777)
cp -p "$planted/suid" "$workdir/suid"
if al_workdir_refused; then
	al_expect_workdir_refused "$workdir" --ro "$ESC_DIR:$ESC" -- "$ESC/esc-setuid" exec /workspace/suid host-workdir
	esc_run --rw "$workdir:/rw" -- "$ESC/esc-setuid" exec /rw/suid host-rw
	esc_ran
	gained host-rw
else
	esc_run --workdir "$workdir" -- "$ESC/esc-setuid" exec /workspace/suid host-workdir
	esc_ran
	gained host-workdir
fi
if [ "$have_fcap" = true ]; then
	esc_run --ro "$planted:/planted" -- "$ESC/esc-setuid" exec /planted/fcap host-fcap
	esc_ran
	gained host-fcap
fi

# ---- the host's own set-id binaries are visible, but on nosuid mounts only. The scan walks /usr and
# the rest four levels deep (49,000 entries on this host): gVisor's gofer takes 23 s on a quiet
# machine, more than the default 30 s time limit under load, so the walk gets 120 s.
esc_run --time 120 -- "$ESC/esc-setuid" scan
esc_ran
al_log "set-id files visible inside: $(esc_kv setid-files)"
if esc_gvisor; then
	# gVisor shows no nosuid; the set-id-root exec above gained nothing, so neither do these.
	al_log "gvisor: $(esc_kv setid-without-nosuid-count) set-id files on mounts whose nosuid gVisor does not show"
	[ "$(esc_kv setid-files)" -gt 0 ] || al_log "gvisor: no set-id file visible at all"
else
	al_assert_eq "$(esc_kv setid-without-nosuid-count)" 0 "set-id files on mounts without nosuid"
fi
