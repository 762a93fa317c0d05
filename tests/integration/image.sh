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
# sanitizer build's airlock is dynamically linked against libasan: under bwrap, oci and gvisor its
# init (airlock-init) runs inside the image, which has no such library (the release binary is
# static and runs there: the regular suite proves it), so that build checks native only.
sanitized=$(ldd "$AIRLOCK" 2>/dev/null | grep -c 'libasan' || true)
# init_runs_in_image B: whether backend B's airlock-init can start inside an image with this build.
init_runs_in_image() { [ "${sanitized:-0}" = 0 ] || [ "$1" = native ]; }
# The image's Env fills in only what nothing else set: airlock's own PATH and HOME (what a run
# without the image gets) win over the image's PATH=/usr/bin:/bin and HOME=/image-home.
al_run run -- sh -c 'echo "$PATH"; echo "$HOME"'
al_assert_rc 0
ours=$AL_OUT
al_assert_contains "$ours" "/workspace" "airlock's own HOME"
for b in native bwrap oci gvisor; do
	if ! init_runs_in_image "$b"; then
		al_log "$b: not in a sanitizer build (its dynamically linked init cannot start inside the image)"
		continue
	fi
	if [ "$b" != native ] && [ "$(al_backend_layer available "$b")" != true ]; then
		al_run run --backend "$b" --image bb -- sh -c 'echo ran'
		al_assert_rc 125
		continue
	fi
	al_run run --json --backend "$b" --image bb -- sh -c 'cat /usr/share/hello.txt; ls /usr/share/opq; echo "$IMAGE_GREETING"; test -e /usr/lib/python3 && echo host-usr; echo x >/usr/share/hello.txt 2>/dev/null && echo wrote; echo "$PATH"; echo "$HOME"; echo "$MARKER"; exit 0'
	al_assert_rc 0
	al_assert_eq "$(j stdout.data)" "hello from the top layer
new.txt
hello
$ours
from-image" "$b: the image's tree and Env (airlock's PATH and HOME win), not the host's /usr, and not writable"
	al_assert_eq "$(j image.digest)" "$digest" "$b: the verdict names the image digest"
	# The whole root: the image's /etc beside airlock's own files, its /opt and /srv, read-only;
	# its WorkingDir is the working directory; its User "app" is uid 1000, the sandbox user.
	al_run run --backend "$b" --image bb -- sh -c 'echo "$PWD"; cat data.txt /etc/app.conf /etc/image-release; test -d /srv && echo srv; grep -c "^user:" /etc/passwd; id -u; test -e /etc/ssl/certs/ca-certificates.crt && echo host-etc; echo x >/etc/app.conf 2>/dev/null && echo wrote-etc; echo x >/opt/app/new 2>/dev/null && echo wrote-opt; exit 0'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "/opt/app
opt-data
app-conf
mkoci busybox
srv
1
1000" "$b: the image's /etc, /opt and /srv read-only, its WorkingDir, airlock's own passwd"
done
# An explicit --env wins over the image's Env and airlock's own alike.
al_run run --image bb --env HOME=/x --env MARKER=given -- sh -c 'echo "$HOME $MARKER"'
al_assert_rc 0
al_assert_eq "$AL_OUT" "/x given" "--env wins over the image's HOME and MARKER"
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
1000" "a User past the sandbox's 65536 ids and a missing WorkingDir: not applied"
al_assert_contains "$AL_ERR" "User '70000:70000' (uid 70000, gid 70000) is not applied" "... and said so"
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
	if ! init_runs_in_image "$b" ||
		{ [ "$b" != native ] && [ "$(al_backend_layer available "$b")" != true ]; }; then
		continue
	fi
	# Some 600 busybox processes: gVisor's starts took the listing past the default 30 s under
	# load (exit 124, on main too), so it gets 120 s.
	al_run run --backend "$b" --time 120 --image wide -- sh -c "$etc_list" sh /etc
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "$want" "$b: the image's /etc as the store holds it"
	al_run run --backend "$b" --image wide -- sh -c 'grep -c "^user:" /etc/passwd; busybox readlink /etc/hosts; test -L /etc/conf7 || stat -c %i /etc/conf7'
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
# (LeakSanitizer cannot run under ptrace: a sanitizer build counts with its leak check off.)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
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
# A layer descriptor's "size" that no blob can have (-1 was taken as "no size given"): refused,
# naming the field.
for v in size-negative size-absurd; do
	rm -f "$work/h.tar"
	mk oci-archive "$work/h.tar" "$v"
	chmod a+r "$work/h.tar"
	al_run image import "$work/h.tar" "h-$v"
	al_assert_rc 125
	al_assert_contains "$AL_ERR" '"size" must be a byte count' "$v: a refusal naming the field"
	al_assert_eq "$(setup_state)" "$before" "$v: the store is as it was"
done
for w in dotdot absolute symlink; do
	[ ! -e "/tmp/airlock-escape-$w" ] || al_fail "an escape wrote /tmp/airlock-escape-$w"
done
al_pass "hostile archives are refused and leave nothing behind"

# The image's User runs as its own uid:gid, and its files keep their owners (as root; as an ordinary
# user every stored file is the store owner's, so inside they are the payload's own).
uid_case() { # BACKEND IMAGE: the payload's ids, the owners it sees, what it can write
	al_run run --json --backend "$1" --image "$2" -- sh -c 'id -u; id -g; stat -c "%n %u:%g" /home/app/own.txt /home/app/other.txt /root /usr/bin/rootsuid /opt/far.txt /workspace; echo w >/workspace/w && echo t >/tmp/t && stat -c "%n %u:%g" /workspace/w /tmp/t'
}
for v in group-root owners owners-named; do
	mk oci-archive "$work/$v.tar" "$v"
	chmod a+r "$work/$v.tar"
	al_run image import "$work/$v.tar" "$v"
	al_assert_rc 0
done
od=$(printf '%s' "$AL_OUT" | awk '{print $2}')
oroot=$AIRLOCK_IMAGES/sha256/${od#sha256:}/rootfs
al_run image inspect owners-named
al_assert_eq "$(j owners)" "$([ "$AL_CALLER_UID" = 0 ] && echo mapped || echo store-owner)" "inspect says how the files are owned"
if [ "$AL_CALLER_UID" = 0 ]; then
	# Checked from outside: the tar's owners in the sandboxes' range, never host root, no set-id.
	b=$AL_ID_BASE
	al_assert_eq "$(stat -c '%u:%g' "$oroot/home/app/own.txt" "$oroot/home/app/other.txt" "$oroot/root" "$oroot/usr/bin/rootsuid" "$oroot/opt/far.txt")" "$((b + 1001)):$((b + 1001))
$((b + 1002)):$((b + 1003))
$b:$b
$b:$b
$((b + 65534)):$((b + 65534))" "the store keeps the tar's owners, mapped into the sandbox range"
	al_assert_eq "$(stat -c '%a' "$oroot/usr/bin/rootsuid")" 555 "a 4755 file of uid 0: stored without its set-id bit"
	[ -z "$(find "$oroot" -uid 0 | head -1)" ] || al_fail "a file of host root in the store: $(find "$oroot" -uid 0 | head -3)"
	[ -z "$(find "$oroot" \( -uid -"$b" -o -gid -"$b" \) ! -uid 1879048190 | head -1)" ] || al_fail "an owner below the range"
	seen="1001:1001
/home/app/other.txt 1002:1003
/root 0:0
/usr/bin/rootsuid 0:0
/opt/far.txt 65534:65534"
else
	al_assert_eq "$(stat -c '%u' "$oroot/home/app/own.txt" "$oroot/root")" "$AL_CALLER_UID
$AL_CALLER_UID" "an ordinary user's store: every file the store owner's"
	seen="1001:1001
/home/app/other.txt 1001:1001
/root 1001:1001
/usr/bin/rootsuid 1001:1001
/opt/far.txt 1001:1001"
fi
for b in native bwrap oci gvisor; do
	if ! init_runs_in_image "$b"; then
		continue
	fi
	if [ "$b" != native ] && [ "$(al_backend_layer available "$b")" != true ]; then
		al_run run --backend "$b" --image owners -- id -u
		al_assert_rc 125
		continue
	fi
	[ "$b" = bwrap ] && [ "$AL_TEST_MODE" = root ] && seen_b="1001:1001
/home/app/other.txt 65534:65534
/root 65534:65534
/usr/bin/rootsuid 65534:65534
/opt/far.txt 65534:65534" || seen_b=$seen
	[ "$b" = oci ] || [ "$b" = gvisor ] && [ "$AL_TEST_MODE" = root ] && seen_b="1001:1001
/home/app/other.txt 65534:65534
/root 0:0
/usr/bin/rootsuid 0:0
/opt/far.txt 65534:65534"
	for img in owners owners-named; do
		uid_case "$b" "$img"
		al_assert_rc 0
		al_assert_eq "$(j stdout.data)" "1001
1001
/home/app/own.txt $seen_b
/workspace 1001:1001
/workspace/w 1001:1001
/tmp/t 1001:1001" "$b, $img: the image's User runs, sees the image's owners, writes /workspace and /tmp"
		al_assert_eq "$(j image.uid):$(j image.gid)" "1001:1001" "$b, $img: the verdict names the ids that ran"
		al_assert_eq "$(j enforced.payload_uid):$(j enforced.payload_gid)" "1001:1001" "$b, $img: enforced says so too"
	done
	# A group 0 ("1001:0") is an ordinary group in the sandbox's namespace: applied as given.
	al_run run --backend "$b" --image group-root -- sh -c 'id -u; id -g; echo w >/workspace/w && stat -c "%u:%g" /workspace/w'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "1001
0
1001:0" "$b: User 1001:0 runs as uid 1001, gid 0"
	# airlock's passwd and group name the payload's ids "user" (E2B's name), whatever they are.
	al_run run --backend "$b" --image owners -- sh -c 'id -un; id -gn; echo "$USER $HOME"'
	al_assert_eq "$AL_OUT" "user
user
user /workspace" "$b: the image's User is the sandbox user by name"
done
# exec's code file (written by the supervisor) is the payload's, as is /workspace.
al_run exec --image owners --lang shell -c 'id -u; stat -c "%u:%g" /workspace/main.sh /workspace'
al_assert_rc 0
al_assert_eq "$AL_OUT" "1001
1001:1001
1001:1001" "exec --image: the image's User, owning its code file and the workspace"
# --subids places the caller at the image's uid:gid and its subordinate ids around them; too few
# of them to reach the uid is refused. The test user is given subordinate ids only inside a
# private mount namespace (the host's /etc/subuid and /etc/subgid are never touched).
with_subids() { # COUNT AIRLOCK-ARGS...
	local n=$1
	shift
	printf '%s:300000:%s\n' "$AL_CALLER_UID" "$n" >"$work/subid"
	chmod 0644 "$work/subid"
	AL_RC=0
	# shellcheck disable=SC2016 # expanded by the inner sh
	AL_OUT=$(unshare -m sh -c 'mount --bind "$0" /etc/subuid && mount --bind "$0" /etc/subgid && exec "$@"' \
		"$work/subid" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" "$@" 2>"$work/subid.err") || AL_RC=$?
	AL_ERR=$(cat "$work/subid.err")
	AL_CMD="[$n subordinate ids] airlock $*"
	al_log "$AL_CMD -> rc $AL_RC"
}
if [ "$AL_TEST_MODE" = user ] && [ "$(id -u)" = 0 ] && [ -e /etc/subuid ] && [ -e /etc/subgid ] && [ -x /usr/bin/newuidmap ]; then
	with_subids 65536 run --subids --image owners -- sh -c 'cat /proc/self/uid_map; id -u; id -g; echo w >/workspace/w && stat -c "%u:%g" /workspace/w /home/app/own.txt'
	al_assert_rc 0
	al_assert_eq "$(printf '%s\n' "$AL_OUT" | awk 'NF == 3 { print $1, $2, $3 }')" "0 300000 1001
1001 $AL_CALLER_UID 1
1002 301001 64534" "--subids: the caller at the image's uid, subordinate ids around it"
	al_assert_eq "$(printf '%s\n' "$AL_OUT" | awk 'NF != 3')" "1001
1001
1001:1001
1001:1001" "--subids: the image's User runs and writes"
	with_subids 1001 run --subids --image owners -- id -u
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "has only 1001 subordinate ids; the payload's uid 1001 and gid 1001 need more" "too few subordinate ids for the image's uid: refused"
else
	al_log "--subids with an image's User: checked in user mode run by root (a private mount namespace) only"
fi
al_pass "the image's User runs as its own uid on every backend; the store keeps the layers' owners"

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
