#!/usr/bin/env bash
# image_kept.sh — a sandbox on an image that airlock serve keeps comes back on the tree it was
# made on, whatever happens to the image's name while no server runs: the store refuses to remove
# the last name of its content (the sandbox's record pins it) and gc leaves that content; a name
# moved to another image meanwhile changes nothing for the kept sandbox (it comes back by digest)
# while a new sandbox gets the new tree; once the sandbox is destroyed, gc removes the content. A
# client cannot name an image by NAME@sha256: (the server's own form); a kept sandbox that cannot
# come back (its profile no longer offers the image) is said so to its owner, and comes back when
# the configuration offers it again.
: "${AL_GUARD_TIMEOUT:=240}"
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_fail "curl is missing"
[ -x /bin/busybox ] || al_fail "busybox-static is not installed (scripts/deps.sh)"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
export AIRLOCK_IMAGES=$dir/store
al_image_import "$dir" bb
bb_digest=$AL_IMAGE_DIGEST
"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$dir/other.tar" bin-only
chmod a+r "$dir/other.tar"
state="$dir/state"
conf() { # IMAGES: the profile imgs offering them
	al_serve_config "$confdir/kept.yaml" 'profiles:\n  imgs:\n    images: [%s]\n' "$1"
}
start() {
	al_serve_start "$dir" --config "$confdir/kept.yaml" --audit "$dir/audit.jsonl" --state-dir "$state"
}
create() { # the new sandbox's id in SB
	al_api POST /v1/sandboxes -d '{"profile":"imgs","image":"bb"}'
	[ "$CODE" = 201 ] || al_fail "create on bb: HTTP $CODE: $BODY"
	SB=$(al_jget 'd["sandbox_id"]')
}
content() { [ -d "$AIRLOCK_IMAGES/sha256/${bb_digest#sha256:}" ]; }
probe='cat /usr/share/hello.txt 2>/dev/null || echo no-usr-hello; cat /workspace/a.txt 2>/dev/null'

conf bb
start
create
kept=$SB
al_api_sh "$kept" 'echo written >/workspace/a.txt'
al_api POST /v1/sandboxes -d "{\"profile\":\"imgs\",\"image\":\"bb@$bb_digest\"}"
al_assert_eq "$CODE" 400 "a client naming an image NAME@sha256: ($BODY)"
al_assert_contains "$BODY" "by its name or by its sha256: digest" "the refusal says how to name an image"
al_serve_stop TERM

# While no server runs: the last name of the kept sandbox's content is not removed, and gc keeps it.
al_run image rm bb
al_assert_rc 125
al_assert_contains "$AL_ERR" "kept for a sandbox that airlock serve keeps" "rm of the kept sandbox's image"
al_assert_contains "$AL_ERR" "$kept" "the refusal names the sandbox's record"
al_run image gc
content || al_fail "gc removed the content of a kept sandbox's image"
# The name moves to another image: the kept sandbox still stands on the first.
al_run image import "$dir/other.tar" bb
al_assert_rc 0
al_run image gc
content || al_fail "gc removed the unnamed content a kept sandbox stands on"
al_pass "the store keeps a kept sandbox's image while no server runs"

start
al_api_sh "$kept" "$probe"
al_assert_eq "$OUT" "hello from the top layer
written" "the kept sandbox comes back on the tree it was made on, with its files"
al_api GET "/v1/sandboxes/$kept"
al_assert_contains "$BODY" "$bb_digest" "its listing names the digest it stands on"
create
al_api_sh "$SB" "$probe"
al_assert_eq "$OUT" "no-usr-hello" "a new sandbox on bb gets what bb names now"
al_api DELETE "/v1/sandboxes/$SB"
al_pass "a name moved meanwhile changes nothing for a kept sandbox"

# Its profile no longer offers bb: it stays on disk, and its owner is told why.
al_serve_stop TERM
conf other
start
al_api GET "/v1/sandboxes/$kept"
al_assert_eq "$CODE" 404 "a kept sandbox this configuration cannot make"
al_assert_contains "$BODY" "could not bring it back" "its owner hears that it is kept ($BODY)"
al_assert_contains "$BODY" "does not offer" "and why"
al_assert_contains "$(cat "$dir/serve.err")" "could not be brought back" "the server says so"
al_serve_stop TERM
conf bb
start
al_api_sh "$kept" "$probe"
al_assert_eq "$OUT" "hello from the top layer
written" "back, files and tree, once the configuration offers its image again"
al_pass "a kept sandbox that cannot come back is said so, and nothing of it is lost"

# Destroyed: nothing keeps the unnamed content, and gc takes it.
al_api DELETE "/v1/sandboxes/$kept"
[ "$CODE" = 200 ] || [ "$CODE" = 204 ] || al_fail "destroy: HTTP $CODE: $BODY"
al_serve_stop TERM
al_run image gc
al_assert_rc 0
! content || al_fail "the content stayed after the sandbox it was kept for was destroyed"
al_pass "a destroyed sandbox's image content is gc's again"
