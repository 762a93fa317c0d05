#!/bin/bash
# image.sh — `airlock image`: OCI images the test assembles from busybox-static (an oci-archive,
# a layout directory, a docker save) are imported with their layers, whiteouts and Env, run on
# every backend with the verdict naming the digest; sandboxes of one image share its store;
# rm of an image in use is refused; hostile archives are refused and leave nothing behind.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
mk() { "$AL_PY" "$AL_SRC/tests/image/mkoci.py" "$@"; }
work=$(al_tmpdir 0777)
export AIRLOCK_IMAGES=$work/store
mk oci-archive "$work/bb.tar"
mk layout "$work/bbdir"
mk docker "$work/bbd.tar"
chmod -R a+rX "$work"

al_run image import "$work/bb.tar" bb
al_assert_rc 0
digest=$(printf '%s' "$AL_OUT" | awk '{print $2}')
al_assert_contains "$digest" "sha256:" "the import names the digest"
al_run image import "$work/bbdir" bbdir
al_assert_rc 0
al_assert_contains "$AL_OUT" "$digest" "a layout directory of the same image: the same digest"
al_run image import "$work/bbd.tar"
al_assert_rc 0
al_assert_contains "$AL_OUT" "bbd sha256:" "docker save, named after the file"
dd=$(printf '%s' "$AL_OUT" | awk '{print $2}')
al_run image ls
al_assert_contains "$AL_OUT" "bbdir" "ls"
al_run image inspect bb
al_assert_eq "$(j digest)" "$digest" "inspect: the digest"
al_assert_contains "$(j config.Env)" "IMAGE_GREETING=hello" "inspect: the config's Env"
al_pass "an oci-archive, a layout and a docker save are imported"

# The store: read-only, never set-id, content addressed by the manifest digest.
root=$AIRLOCK_IMAGES/sha256/${digest#sha256:}/rootfs
[ -z "$(find "$root" ! -type l -perm /222 | head -1)" ] || al_fail "a writable file in the store: $(find "$root" ! -type l -perm /222 | head -3)"
al_assert_eq "$(cat "$root/usr/share/hello.txt")" "hello from the top layer" "the top layer's file"
[ ! -e "$root/usr/share/gone.txt" ] || al_fail "a whiteout did not remove gone.txt"
al_assert_eq "$(ls "$root/usr/share/opq")" "new.txt" "an opaque directory hides the lower layer's files"
al_pass "layers applied in order, whiteouts honoured, the tree read-only"

# Every backend runs the same image (or, where it is unavailable in this mode, refuses). A
# sanitizer build's airlock is dynamically linked against libasan: under oci and gvisor its init
# runs inside the image, which has no such library (the release binary is static and runs there:
# the regular suite proves it), so that build checks native and bwrap only.
sanitized=$(ldd "$AIRLOCK" 2>/dev/null | grep -c 'libasan' || true)
for b in native bwrap oci gvisor; do
	if [ "${sanitized:-0}" != 0 ] && { [ "$b" = oci ] || [ "$b" = gvisor ]; }; then
		al_log "$b: not in a sanitizer build (its dynamically linked init cannot start inside the image)"
		continue
	fi
	if [ "$b" != native ] && [ "$(al_backend_layer available "$b")" != true ]; then
		al_run run --backend "$b" --image bb -- sh -c 'echo ran'
		al_assert_rc 125
		continue
	fi
	al_run run --json --backend "$b" --image bb -- sh -c 'cat /usr/share/hello.txt; ls /usr/share/opq; echo "$IMAGE_GREETING"; test -e /usr/lib/python3 && echo host-usr; echo x >/usr/share/hello.txt 2>/dev/null && echo wrote; exit 0'
	al_assert_rc 0
	al_assert_eq "$(j stdout.data)" "hello from the top layer
new.txt
hello" "$b: the image's tree and Env, not the host's /usr, and not writable"
	al_assert_eq "$(j image.digest)" "$digest" "$b: the verdict names the image digest"
	# The whole root: the image's /etc beside airlock's own files, its /opt and /srv, read-only;
	# its WorkingDir is the working directory; its User "app" is uid 1000, the sandbox user.
	al_run run --backend "$b" --image bb -- sh -c 'echo "$PWD"; cat data.txt /etc/app.conf /etc/image-release; test -d /srv && echo srv; grep -c "^sandbox:" /etc/passwd; id -u; test -e /etc/ssl/certs/ca-certificates.crt && echo host-etc; echo x >/etc/app.conf 2>/dev/null && echo wrote-etc; echo x >/opt/app/new 2>/dev/null && echo wrote-opt; exit 0'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "/opt/app
opt-data
app-conf
mkoci busybox
srv
1
1000" "$b: the image's /etc, /opt and /srv read-only, its WorkingDir, airlock's own passwd"
done
# Without a command, the image's Entrypoint and Cmd run.
al_run run --image bb
al_assert_rc 0
al_assert_eq "$AL_OUT" "image-cmd" "the image's Entrypoint + Cmd"
# Explicit flags win over the image's WorkingDir; what cannot be applied is said, never dropped.
al_run run --image bb --cwd /tmp -- sh -c 'echo "$PWD"'
al_assert_eq "$AL_OUT" "/tmp" "--cwd wins over WorkingDir"
mkdir -p "$work/wd" && chmod 0777 "$work/wd"
al_run run --image bb --workdir "$work/wd" -- sh -c 'echo "$PWD"'
al_assert_eq "$AL_OUT" "/workspace" "--workdir keeps /workspace the working directory"
mk oci-archive "$work/ou.tar" other-user
chmod a+r "$work/ou.tar"
al_run image import "$work/ou.tar" ou
al_assert_rc 0
al_run run --image ou -- sh -c 'echo "$PWD"; id -u'
al_assert_rc 0
al_assert_eq "$AL_OUT" "/workspace
1000" "a User outside the sandbox user and a missing WorkingDir: not applied"
al_assert_contains "$AL_ERR" "User '65532:65532' (uid 65532) is not applied" "... and said so"
al_assert_contains "$AL_ERR" "WorkingDir '/nonexistent' is not applied" "... both"
al_run image rm ou
al_assert_rc 0
# exec and a profile's image: key; the posture stays the profile's (no network under it).
al_run exec --image bb --lang shell -c 'cat /usr/share/hello.txt'
al_assert_rc 0
al_assert_eq "$AL_OUT" "hello from the top layer" "exec --image"
confdir=$(al_tmpdir 0755)
printf 'version: 1\nprofiles:\n  on-bb:\n    image: bb\n' >"$confdir/p.yaml"
chmod 0644 "$confdir/p.yaml"
al_run run --json --config "$confdir/p.yaml" --profile on-bb -- sh -c 'cat /usr/share/hello.txt'
al_assert_rc 0
al_assert_eq "$(j image.digest)" "$digest" "a profile's image"
al_assert_eq "$(j enforced.network)" none "the profile's posture"
al_run run --config "$confdir/p.yaml" --profile on-bb --net host -- sh -c 'echo ran'
al_assert_rc 125
al_run run --image nosuch -- sh -c 'echo ran'
al_assert_rc 125
al_assert_contains "$AL_ERR" "no image named 'nosuch'" "an unknown image"
al_pass "the image runs on every backend"

# A Debian-shaped /etc (150 entries: files, directories, links): the sandbox shows the image's own
# entries (the same list, types, modes, contents and link targets, the files the store's very
# inodes) but airlock's files, and a start makes no symlink per entry: the image's /etc is
# prepared once in the store and bound in one mount.
mk oci-archive "$work/wide.tar" wide
chmod a+r "$work/wide.tar"
al_run image import "$work/wide.tar" wide
al_assert_rc 0
wd=$(printf '%s' "$AL_OUT" | awk '{print $2}')
wroot=$AIRLOCK_IMAGES/sha256/${wd#sha256:}/rootfs
# The same script lists /etc inside (the image's busybox) and the store's tree outside (the host's).
# shellcheck disable=SC2016 # expanded by the sh that runs it
etc_list='cd "$1" && busybox find . -mindepth 1 | busybox sort | while IFS= read -r f; do
	case "${f#./}" in passwd | group | hosts | hostname | nsswitch.conf | resolv.conf) continue ;; esac
	if [ -L "$f" ]; then echo "$f l $(busybox readlink "$f")"
	elif [ -d "$f" ]; then echo "$f d $(busybox stat -c %a "$f")"
	else echo "$f f $(busybox stat -c %a "$f") $(busybox md5sum <"$f")"; fi
done'
want=$(sh -c "$etc_list" sh "$wroot/etc")
[ "$(printf '%s\n' "$want" | grep -c .)" -ge 150 ] || al_fail "the wide image's /etc lists $(printf '%s\n' "$want" | grep -c .) entries outside, not 150+"
printf '%s\n' "$want" | grep -q '^./link3 l conf3$' || al_fail "the outside listing lacks link3 -> conf3"
ino=$(stat -c %i "$wroot/etc/conf7")
for b in native bwrap oci gvisor; do
	if { [ "${sanitized:-0}" != 0 ] && { [ "$b" = oci ] || [ "$b" = gvisor ]; }; } ||
		{ [ "$b" != native ] && [ "$(al_backend_layer available "$b")" != true ]; }; then
		continue
	fi
	al_run run --backend "$b" --image wide -- sh -c "$etc_list" sh /etc
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "$want" "$b: the image's /etc as the store holds it"
	al_run run --backend "$b" --image wide -- sh -c 'grep -c "^sandbox:" /etc/passwd; busybox readlink /etc/hosts; test -L /etc/conf7 || stat -c %i /etc/conf7'
	al_assert_rc 0
	ino_b=$ino
	if [ "$b" = gvisor ]; then # gVisor numbers inodes its own way
		AL_OUT=$(printf '%s\n' "$AL_OUT" | sed '$s/^[0-9][0-9]*$/INO/')
		ino_b=INO
	fi
	al_assert_eq "$AL_OUT" "1
/.airlock-etc/hosts
$ino_b" "$b: airlock's own files beside the image's, which are the store's inodes"
done
# One start, counted: the host's /usr layout makes 13 symlinks (/dev's, /etc/os-release, the
# top-level links); one per /etc entry would be 150 more.
command -v strace >/dev/null || al_skip "strace is not installed (scripts/deps.sh)"
strace -f -c -o "$work/strace.out" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run --backend native --image wide -- /usr/bin/true ||
	al_fail "airlock run --image wide under strace failed"
nsym=$(awk '$NF == "symlinkat" { print $4 }' "$work/strace.out")
{ [ -n "$nsym" ] && [ "$nsym" -lt 20 ]; } || al_fail "a start of the wide image made ${nsym:-no} symlinkat calls (one per /etc entry?)"
al_pass "the image's /etc is shown as it is stored, in one mount ($nsym symlinks a start)"
# Content stored before the prepared /etc existed (or by an older airlock) gets it on its first
# start: made aside and moved into place whole, leaving nothing in tmp/.
prepared=$AIRLOCK_IMAGES/sha256/${wd#sha256:}/etc.1
[ -d "$prepared" ] || al_fail "the import left no prepared /etc at $prepared"
# (directories only: its files are the image's own inodes, whose modes the store keeps)
find "$prepared" -type d -exec chmod u+w {} + && rm -rf "$prepared"
al_run run --image wide -- sh -c "$etc_list" sh /etc
al_assert_rc 0
al_assert_eq "$AL_OUT" "$want" "the image's /etc, prepared on first use"
{ [ -d "$prepared" ] && [ -z "$(find "$prepared" -maxdepth 0 -perm /222)" ]; } || al_fail "no read-only prepared /etc after the first start"
al_assert_eq "$(ls -A "$AIRLOCK_IMAGES/tmp")" "" "nothing left in the store's tmp/"
al_run image rm wide
al_assert_rc 0
[ ! -e "$AIRLOCK_IMAGES/sha256/${wd#sha256:}" ] || al_fail "rm left the content (or its prepared /etc) behind"
al_pass "an image stored without a prepared /etc gets one on first use; rm takes it away"

# Two concurrent sandboxes of one image share its store (the same inode: one page cache), and
# an image in use cannot be removed.
ino=$(stat -c %i "$AIRLOCK_IMAGES/sha256/${dd#sha256:}/rootfs/usr/bin/busybox")
for i in 1 2; do
	al_airlock run --image bbd -- sh -c 'stat -c %i /usr/bin/busybox; sleep 3' >"$work/c$i.out" 2>&1 &
done
for _ in $(seq 50); do [ -s "$work/c1.out" ] && [ -s "$work/c2.out" ] && break; sleep 0.1; done
al_run image ls
al_assert_contains "$(printf '%s\n' "$AL_OUT" | grep '^bbd ')" "in use" "ls shows the image in use"
al_run image rm bbd
al_assert_rc 125
al_assert_contains "$AL_ERR" "in use" "rm of an image in use is refused"
al_run image gc
al_assert_rc 0
wait
al_assert_eq "$(cat "$work/c1.out")" "$ino" "sandbox 1 sees the store's own file"
al_assert_eq "$(cat "$work/c2.out")" "$ino" "sandbox 2 sees the store's own file"
al_run image rm bbd
al_assert_rc 0
[ ! -e "$AIRLOCK_IMAGES/sha256/${dd#sha256:}" ] || al_fail "rm left the content behind"
al_run image rm bb
al_assert_rc 0
[ -d "$AIRLOCK_IMAGES/sha256/${digest#sha256:}" ] || al_fail "rm of one name removed content another name keeps"
al_pass "sandboxes share the store; an image in use is never removed"

# Hostile archives: refused with a clear error, nothing left in the store nor on the host.
setup_state() { (cd "$AIRLOCK_IMAGES" && find . -mindepth 1 | sort | md5sum); }
before=$(setup_state)
for v in dotdot absolute symlink-parent hardlink-out hardlink-abs device fifo whiteout-dotdot digest-mismatch truncated sparse10g; do
	for f in oci-archive docker; do
		rm -f "$work/h.tar"
		mk "$f" "$work/h.tar" "$v"
		chmod a+r "$work/h.tar"
		al_run image import "$work/h.tar" "h-$v"
		al_assert_rc 125
		al_assert_contains "$AL_ERR" "refused" "$v ($f): a clear refusal"
		al_assert_eq "$(setup_state)" "$before" "$v ($f): the store is as it was"
	done
done
mk layout "$work/hd" digest-mismatch
chmod -R a+rX "$work/hd"
al_run image import "$work/hd" h-layout
al_assert_rc 125
al_assert_contains "$AL_ERR" "digest mismatch" "a layout with a tampered blob"
al_assert_eq "$(setup_state)" "$before" "the store is as it was"
for w in dotdot absolute symlink; do
	[ ! -e "/tmp/airlock-escape-$w" ] || al_fail "an escape wrote /tmp/airlock-escape-$w"
done
al_pass "hostile archives are refused and leave nothing behind"

# Set-id bits are dropped, not kept.
mk oci-archive "$work/s.tar" setuid
chmod a+r "$work/s.tar"
al_run image import "$work/s.tar" suid
al_assert_rc 0
sd=$(printf '%s' "$AL_OUT" | awk '{print $2}')
al_assert_eq "$(stat -c %a "$AIRLOCK_IMAGES/sha256/${sd#sha256:}/rootfs/usr/bin/suid")" 555 "a set-id file stored 0555"
[ -z "$(find "$AIRLOCK_IMAGES/sha256" -perm /6000 | head -1)" ] || al_fail "a set-id file in the store"
al_pass "no set-id bit reaches the store"

# gc: an interrupted import (no lock held) and content no name keeps are removed.
"${AL_SETPRIV[@]}" mkdir "$AIRLOCK_IMAGES/tmp/new-stale"
rm -f "$AIRLOCK_IMAGES/names/bbdir"
al_run image gc
al_assert_rc 0
[ ! -e "$AIRLOCK_IMAGES/tmp/new-stale" ] || al_fail "gc left an interrupted import"
[ ! -e "$AIRLOCK_IMAGES/sha256/${digest#sha256:}" ] || al_fail "gc left unnamed content"
[ -d "$AIRLOCK_IMAGES/sha256/${sd#sha256:}" ] || al_fail "gc removed named content"
al_pass "gc removes what nothing names"
