#!/usr/bin/env bash
# console.sh — the approver's console (issue 21) in headless Chromium, driven over the DevTools
# protocol by tests/console/drive.py: the page refuses a client's token and takes the approver's; a
# pending call shows over the live stream (the page's polling stopped) with its whole padded code
# and the rule's pattern marked;
# approve runs it, deny (the d key) and a timeout do not, a changed request is refused; the
# sandboxes view lists the client's sandboxes with their image and memory, pauses, resumes and
# destroys one, says which are kept on disk (their stored bytes of their disk limit), and lists
# every principal's snapshots, deleting one for its owner (audited); the
# terminals view renders a client's terminal session with xterm.js, read-only, following its size
# (the approver's routes refuse a client's token: 403); the audit view finds the decision.
# Screenshots land in the build directory's artifacts/console.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v chromium >/dev/null || al_skip "chromium is missing (scripts/deps.sh installs it)"
[ -x /bin/busybox ] || al_skip "busybox-static is not installed (scripts/deps.sh)"
m=$(al_marker)
confdir=$(al_tmpdir 0755)
dir=$(al_tmpdir 0777)
# An image for one sandbox, so the sandboxes view shows a name and digest beside "host".
export AIRLOCK_IMAGES=$dir/store
al_image_import "$dir" bb
digest=$AL_IMAGE_DIGEST
# The first rule whose pattern matches decides: "quick-" calls time out after 10 s (long enough for
# a loaded host to show the card and its countdown before then). "asked" is written in PCRE (\h, a
# horizontal space, which a JavaScript RegExp reads as "h"): the page marks what the server matched.
cat >"$confdir/c.yaml" <<'EOF'
version: 1
approval: {deny_above: CRITICAL, channels: [http]}
rules:
- {name: quick, tools: [code_execute], risk: HIGH, approval_timeout: 10s, when: [{param: code, matches: "quick-"}]}
- {name: asked, tools: [code_execute], risk: HIGH, approval_timeout: 60s, when: [{param: code, matches: 'touch(?=\h)'}]}
- {name: the-rest, tools: ["*"], risk: LOW, require_approval: false}
profiles: {imgs: {images: [bb]}}
EOF
# The socket's approver: the uid that runs serve runs `airlock console` too.
printf 'server: {approver_uids: [%s]}\n' "$AL_CALLER_UID" >>"$confdir/c.yaml"
chmod 0644 "$confdir/c.yaml"

client=$(al_token_file "$dir/serve.token" alice)
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
al_serve_start "$dir" --config "$confdir/c.yaml" --approver-token-file "$dir/reviewer.token" --audit "$dir/audit.jsonl" \
	--socket "$dir/s.sock"
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" console --socket "$dir/s.sock" --port-file "$dir/fwd.port" >"$dir/fwd.out" 2>&1 &
AL_BG_PIDS+=($!)
for _ in $(seq 50); do [ -s "$dir/fwd.port" ] && break; sleep 0.1; done
fwd=$(sed -n 's/^airlock console: open \(http:[^ ]*\)$/\1/p' "$dir/fwd.out")
[ -n "$fwd" ] || { cat "$dir/fwd.out" >&2; al_fail "airlock console printed no URL"; }

shots="$(dirname "$AIRLOCK")/artifacts/console/$AL_TEST_MODE"
mkdir -p "$shots"
rc=0
AL_FWD_URL=$fwd AL_UID=$AL_CALLER_UID AL_IMAGE_DIGEST=$digest AL_URL=$AL_SERVE_URL AL_CLIENT=$client AL_REVIEWER=$reviewer AL_MARK=$m AL_SHOTS=$shots AL_PROFILE="$dir/chromium" \
	timeout 240 "$AL_PY" "$(dirname "$0")/../console/drive.py" || rc=$?
[ "$rc" = 0 ] || { tail -n 20 "$dir/serve.err" >&2; al_fail "the console's checks failed (above)"; }
for v in login approvals approvals-phone-dark sandboxes snapshots terminals audit; do
	[ -s "$shots/console-$v.png" ] || al_fail "no screenshot of the $v view"
done
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_execute approval.by=http approval.decision=approved \
	approval.approver=token:reviewer "$dir/audit.jsonl" | grep -c "approved-$m")" 1 "the audit log holds the console's approval"
al_pass "the approver's console"
