#!/usr/bin/env bash
# image_serve.sh — POST /v1/sandboxes with "image": a sandbox on an image the profile offers runs
# its code on the image's tree; an image the profile does not offer is refused; the image stays
# locked against rm while the sandbox lives; the approvers' listing names its image and digest.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
al_serve_bin
dir=$(al_tmpdir 0777)
export AIRLOCK_IMAGES=$dir/store
al_image_import "$dir" bb
bb_digest=$AL_IMAGE_DIGEST
al_image_import "$dir" owners owners-named
al_image_import "$dir" binonly bin-only
al_assert_contains "$bb_digest" "sha256:" "the import names the image's digest"
confdir=$(al_tmpdir 0755)
cat >"$confdir/images.yaml" <<'EOF'
version: 1
approval:
  auto_approve_up_to: CRITICAL
profiles:
  imgs:
    images: [bb, owners, binonly]
EOF
chmod 0644 "$confdir/images.yaml"

reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
al_serve_start "$dir" --config "$confdir/images.yaml" --audit "$dir/audit.jsonl" \
	--approver-token-file "$dir/reviewer.token"

# call METHOD PATH [JSON]: prints "CODE BODY" (urllib: one request, no retries).
call() {
	"$AL_PY" - "$AL_SERVE_URL" "$@" <<'PY'
import os, sys, urllib.request, urllib.error
url, method, path = sys.argv[1:4]
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
req = urllib.request.Request(url + path, data=data, method=method,
                             headers={"Content-Type": "application/json",
                                      "Authorization": "Bearer " + os.environ["AL_TOKEN"]})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}

out=$(call POST /v1/sandboxes '{"profile":"imgs","image":"nosuch"}')
al_assert_eq "${out%% *}" 403 "an image the profile does not offer: refused ($out)"
al_assert_contains "$out" "does not offer" "the refusal names the reason"
out=$(call POST /v1/sandboxes '{"profile":"untrusted-code-read","image":"bb"}')
al_assert_contains "${out%% *}" 4 "a profile without images offers none ($out)"
out=$(call POST /v1/sandboxes '{"profile":"imgs","image":"bb"}')
al_assert_eq "${out%% *}" 201 "create a sandbox on the image: $out"
sb=$(printf '%s' "${out#* }" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
out=$(call POST "/v1/sandboxes/$sb/exec" \
	'{"language":"shell","code":"cat /usr/share/hello.txt; test -e /usr/lib/python3 || echo no-host-usr"}')
al_assert_contains "$out" "hello from the top layer" "the sandbox runs on the image's tree"
al_assert_contains "$out" "no-host-usr" "and not on the host's /usr"
# An image without /usr and without bash: the shell language runs its /bin/sh.
out=$(call POST /v1/sandboxes '{"profile":"imgs","image":"binonly"}')
al_assert_eq "${out%% *}" 201 "create a sandbox on an image without /usr: $out"
sbb=$(printf '%s' "${out#* }" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
out=$(call POST "/v1/sandboxes/$sbb/exec" '{"language":"shell","code":"cat /hello.txt; test -e /usr || echo no-usr"}')
al_assert_contains "$out" "hello from the top layer" "a shell exec on an image without bash ($out)"
al_assert_contains "$out" "no-usr" "a shell exec on an image without bash"
call DELETE "/v1/sandboxes/$sbb" >/dev/null
plain=$(call POST /v1/sandboxes '{}')
plain=$(printf '%s' "${plain#* }" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
# The approvers' listing: the image a sandbox was made with, or "host".
images=$(curl -q -s -H "Authorization: Bearer $reviewer" "$AL_SERVE_URL/v1/admin/sandboxes" | SB=$sb PLAIN=$plain "$AL_PY" -c '
import json, os, sys
by = {x["id"]: x for x in json.load(sys.stdin)["sandboxes"]}
print(by[os.environ["SB"]]["image"], by[os.environ["SB"]]["image_digest"], by[os.environ["PLAIN"]]["image"], by[os.environ["PLAIN"]]["image_digest"])')
al_assert_eq "$images" "bb $bb_digest host None" "GET /v1/admin/sandboxes: the image's name and digest, or host"
# The image has no python3: a named Python context cannot start, and says why (a 400, not a 500),
# through the context API and a cell alike; the default context's cell still runs, as a fresh exec.
out=$(call POST "/v1/sandboxes/$sb/contexts" '{"context_id":"py","language":"python"}')
al_assert_eq "${out%% *}" 400 "a named context without its interpreter: the request's fault ($out)"
al_assert_contains "$out" "python3 is not found in this sandbox's root" "the error names the cause"
out=$(call POST "/v1/sandboxes/$sb/exec" '{"language":"python","code":"print(1)","context_id":"py"}')
al_assert_contains "$out" "python3 is not found in this sandbox's root" "a named context's cell: the same clear error ($out)"
out=$(call POST "/v1/sandboxes/$sb/exec" '{"language":"shell","code":"echo default-ok"}')
al_assert_contains "$out" "default-ok" "the default context's cell runs as a fresh exec"
al_run image rm bb
al_assert_rc 125
al_assert_contains "$AL_ERR" "in use" "rm of the image of a live sandbox is refused"
out=$(call DELETE "/v1/sandboxes/$sb")
al_assert_contains "${out%% *}" 20 "destroy the sandbox"
al_run image rm bb
al_assert_rc 0
# An image whose User is app2 (1001): its sandbox's execs run as 1001:1001, and what the server
# writes for them (PUT files) is theirs, as is what they write themselves.
out=$(call POST /v1/sandboxes '{"profile":"imgs","image":"owners"}')
al_assert_eq "${out%% *}" 201 "create a sandbox on the image with a User: $out"
own=$(printf '%s' "${out#* }" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
out=$(call PUT "/v1/sandboxes/$own/files/sub/data.txt" 'written by the server')
al_assert_contains "${out%% *}" 20 "write_file into the sandbox ($out)"
out=$(call POST "/v1/sandboxes/$own/exec" \
	'{"language":"shell","code":"id -u; id -g; stat -c %u:%g /workspace/sub /workspace/sub/data.txt; echo more >>/workspace/sub/data.txt && echo x >/workspace/sub/new && echo t >/tmp/t && stat -c %u:%g /workspace/sub/new /tmp/t"}')
al_assert_eq "$(printf '%s' "${out#* }" | "$AL_PY" -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
print("".join(e.get("data", "") for e in ev if e.get("stream") == "stdout"), end="")')" "1001
1001
1001:1001
1001:1001
1001:1001
1001:1001" "the image's User runs the sandbox's execs and owns the server's files ($out)"
out=$(call DELETE "/v1/sandboxes/$own")
al_assert_contains "${out%% *}" 20 "destroy the sandbox"
al_pass "the service's image argument: offered images only, the posture the profile's"

# A warm pool of image sandboxes (server.pool's list form): with room for one sandbox only, held
# by the spare, a create on that image can only succeed by claiming it, and a create on the
# profile's own root (no spare of that kind) is refused as the server is full.
kill -TERM "$AL_SERVE_PID"
wait "$AL_SERVE_PID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_run image import "$dir/bb.tar" bb
al_assert_rc 0
cat >"$confdir/pool.yaml" <<'EOF'
version: 1
approval:
  auto_approve_up_to: CRITICAL
profiles:
  imgs:
    images: [bb]
server:
  max_sandboxes: 1
  pool:
  - {profile: imgs, image: bb, count: 1}
EOF
chmod 0644 "$confdir/pool.yaml"
al_serve_start "$dir" --config "$confdir/pool.yaml" --audit "$dir/audit2.jsonl" --state-dir none # the first server's sandboxes stay kept: max_sandboxes 1 holds only the spare
pooled=
for _ in $(seq 100); do
	pooled=$(call GET /metrics | grep '^airlock_sandboxes_pooled ' | awk '{print $2}')
	[ "$pooled" = 1 ] && break
	sleep 0.1
done
al_assert_eq "$pooled" 1 "the pool holds a spare on the image"
out=$(call POST /v1/sandboxes '{"profile":"imgs"}')
al_assert_eq "${out%% *}" 429 "no spare on the profile's own root, and no room for a cold one ($out)"
out=$(call POST /v1/sandboxes '{"profile":"imgs","image":"bb"}')
al_assert_eq "${out%% *}" 201 "a create on the image claims the spare ($out)"
sb=$(printf '%s' "${out#* }" | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])')
out=$(call POST "/v1/sandboxes/$sb/exec" '{"language":"shell","code":"cat /usr/share/hello.txt /etc/app.conf"}')
al_assert_contains "$out" "hello from the top layer" "the claimed spare runs on the image"
al_assert_contains "$out" "app-conf" "... and shows its whole root"
out=$(call DELETE "/v1/sandboxes/$sb")
al_assert_contains "${out%% *}" 20 "destroy the claimed sandbox"
kill -TERM "$AL_SERVE_PID"
wait "$AL_SERVE_PID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_pass "a warm pool of image sandboxes: a create on the image claims its spare"
