#!/bin/bash
# image_shapes.sh — images of every shape run on every backend: busybox with /bin alone (no /usr,
# no bash) and a static binary FROM scratch (one file at the root). The shell language falls back
# to /bin/sh where bash is absent, a missing command is reported as such, and a --rootfs without
# /usr is refused in words that name --rootfs (and point at --image), which an image never hears.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || al_fail "busybox-static is not installed (scripts/deps.sh)"
mk() { "$AL_PY" "$AL_SRC/tests/image/mkoci.py" "$@"; }
work=$(al_tmpdir 0777)
export AIRLOCK_IMAGES=$work/store
mk oci-archive "$work/bb.tar" bin-only
mk oci-archive "$work/st.tar" static
chmod -R a+rX "$work"
for i in bb st; do
	al_run image import "$work/$i.tar" "$i"
	al_assert_rc 0
done
al_assert_eq "$(ls "$AIRLOCK_IMAGES"/sha256/*/rootfs/usr 2>/dev/null | wc -l)" 0 "a /usr in the images' trees"

# As image.sh: a sanitizer build's init is dynamically linked, and only native runs it outside the image.
sanitized=$(ldd "$AIRLOCK" 2>/dev/null | grep -c 'libasan' || true)
for b in native bwrap oci gvisor; do
	if [ "${sanitized:-0}" != 0 ] && [ "$b" != native ]; then
		al_log "$b: not in a sanitizer build (its dynamically linked init cannot start inside the image)"
		continue
	fi
	if [ "$b" != native ] && [ "$(al_backend_layer available "$b")" != true ]; then
		al_run run --backend "$b" --image bb -- sh -c 'echo ran'
		al_assert_rc 125
		continue
	fi
	al_run run --backend "$b" --image bb -- sh -c 'cat /hello.txt; test -e /usr && echo has-usr; test -e /usr/lib/python3 && echo host-usr; echo x >/bin/new 2>/dev/null && echo wrote; id -u'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "hello from the top layer
1000" "$b: busybox with /bin alone: its tree, no /usr (not the host's), read-only"
	al_run run --backend "$b" --image st -- /busybox cat /hello.txt
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "hello from the top layer" "$b: a static binary at the root of an image FROM scratch"
	al_run run --backend "$b" --image bb -- cat '/naïve-名前.txt'
	al_assert_eq "$AL_OUT" "a UTF-8 name" "$b: a file whose name is beyond ASCII (imported in the C locale)"
	al_run run --json --backend "$b" --image bb -- nosuch-cmd
	al_assert_rc 125
	al_assert_eq "$(al_json_get "$AL_OUT" error.message)" "command not found in the sandbox: nosuch-cmd" "$b: a missing command"
	al_run exec --backend "$b" --image bb --lang shell -c 'echo "shell $0"; [ -z "$BASH_VERSION" ] && echo not-bash'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "shell main.sh
not-bash" "$b: the shell language on an image without bash runs /bin/sh"
	al_run exec --backend "$b" --image st --lang shell -c 'echo ran'
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "command not found in the sandbox: bash" "$b: the shell language on an image with no shell at all"
	al_pass "$b: images without /usr run; the shell falls back to sh; a missing command is said"
done

al_run exec --image bb --list
al_assert_contains "$AL_OUT" "shell        available  /bin/sh" "the language table on the busybox image"
al_assert_contains "$AL_OUT" "python       missing" "the language table on the busybox image"

# --rootfs is a system tree: one without /usr is refused naming --rootfs; an image never is.
al_run run --rootfs "$(ls -d "$AIRLOCK_IMAGES"/sha256/*/rootfs | head -1)" -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "--rootfs" "the refusal of a --rootfs without /usr"
al_assert_contains "$AL_ERR" "--image" "the refusal of a --rootfs without /usr"
al_pass "images of every shape"
