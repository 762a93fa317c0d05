#!/usr/bin/env bash
# image_serve.sh — POST /v1/sandboxes with "image": a sandbox on an image the profile offers runs
# its code on the image's tree; an image the profile does not offer is refused; the image stays
# locked against rm while the sandbox lives.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
al_serve_bin
dir=$(al_tmpdir 0777)
export AIRLOCK_IMAGES=$dir/store
"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$dir/bb.tar"
chmod a+r "$dir/bb.tar"
al_run image import "$dir/bb.tar" bb
al_assert_rc 0
confdir=$(al_tmpdir 0755)
cat >"$confdir/images.yaml" <<'EOF'
version: 1
approval:
  auto_approve_up_to: CRITICAL
profiles:
  imgs:
    images: [bb]
EOF
chmod 0644 "$confdir/images.yaml"

rm -f "$dir/port"
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --config "$confdir/images.yaml" --http 127.0.0.1:0 \
	--port-file "$dir/port" --audit "$dir/audit.jsonl" 2>"$dir/serve.err" &
AL_BG_PIDS+=("$!")
for _ in $(seq 100); do
	[ -s "$dir/port" ] && break
	sleep 0.1
done
[ -s "$dir/port" ] || { cat "$dir/serve.err" >&2; al_fail "airlock serve did not start"; }
PORT=$(cat "$dir/port")
api() {
	local method=$1 path=$2
	shift 2
	BODY=$(curl -s -o - -w '\n%{http_code}' -X "$method" "http://127.0.0.1:$PORT$path" "$@") || true
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}

api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"profile":"imgs","image":"nosuch"}'
al_assert_contains "$CODE" 4 "an image the profile does not offer: a client error ($BODY)"
al_assert_contains "$BODY" "does not offer" "the refusal names the reason"
api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"profile":"untrusted-code-read","image":"bb"}'
al_assert_contains "$CODE" 4 "a profile without images offers none ($BODY)"
api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"profile":"imgs","image":"bb"}'
al_assert_eq "$CODE" 201 "create a sandbox on the image: $BODY"
sb=$(printf '%s' "$BODY" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
api POST "/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' \
	-d '{"language":"shell","code":"cat /usr/share/hello.txt; test -e /usr/lib/python3 || echo no-host-usr"}'
al_assert_contains "$BODY" "hello from the top layer" "the sandbox runs on the image's tree"
al_assert_contains "$BODY" "no-host-usr" "and not on the host's /usr"
al_run image rm bb
al_assert_rc 125
al_assert_contains "$AL_ERR" "in use" "rm of the image of a live sandbox is refused"
api DELETE "/v1/sandboxes/$sb"
al_assert_contains "$CODE" 20 "destroy the sandbox"
al_run image rm bb
al_assert_rc 0
al_pass "the service's image argument: offered images only, the posture the profile's"
