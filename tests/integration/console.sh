#!/usr/bin/env bash
# console.sh — the approver's console (issue 21) in headless Chromium, driven over the DevTools
# protocol by tests/console/drive.py: the page refuses a client's token and takes the approver's; a
# pending call shows within a second with its whole padded code and the rule's pattern marked;
# approve runs it, deny (the d key) and a timeout do not, a changed request is refused; the audit
# view finds the decision. Screenshots land in the build directory's artifacts/console.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v chromium >/dev/null || al_skip "chromium is missing (scripts/deps.sh installs it)"
al_serve_bin
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
cat >"$confdir/c.yaml" <<'EOF'
version: 1
rules:
- name: quick
  tools: [code_execute]
  when:
  - param: code
    matches: "quick-"
  risk: HIGH
  approval_timeout: 3s
- name: asked
  tools: [code_execute]
  when:
  - param: code
    matches: "touch"
  risk: HIGH
  approval_timeout: 60s
- name: the-rest
  tools: ["*"]
  risk: LOW
  require_approval: false
approval:
  deny_above: CRITICAL
  channels: [http]
EOF
chmod 0644 "$confdir/c.yaml"

client=$(al_token_file "$dir/alice.token" alice)
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --config "$confdir/c.yaml" --http 127.0.0.1:0 --port-file "$dir/port" \
	--socket none --token-file "$dir/alice.token" --approver-token-file "$dir/reviewer.token" \
	--audit "$dir/audit.jsonl" 2>"$dir/serve.err" &
AL_BG_PIDS+=("$!")
for _ in $(seq 100); do
	[ -s "$dir/port" ] && break
	sleep 0.1
done
[ -s "$dir/port" ] || { cat "$dir/serve.err" >&2; al_fail "airlock serve did not start"; }

shots="$(dirname "$AIRLOCK")/artifacts/console/$AL_TEST_MODE"
mkdir -p "$shots"
rc=0
AL_URL="http://127.0.0.1:$(cat "$dir/port")" AL_CLIENT=$client AL_REVIEWER=$reviewer AL_MARK=$m AL_SHOTS=$shots \
	AL_PROFILE="$dir/chromium" timeout 240 "$AL_PY" "$(dirname "$0")/../console/drive.py" || rc=$?
[ "$rc" = 0 ] || { tail -n 20 "$dir/serve.err" >&2; al_fail "the console's checks failed (above)"; }
for v in login approvals approvals-phone-dark audit; do
	[ -s "$shots/console-$v.png" ] || al_fail "no screenshot of the $v view"
done
al_assert_eq "$("$AL_AIRLOCK_BIN" audit grep event=end tool=code_execute approval.by=http approval.decision=approved \
	approval.approver=token:reviewer "$dir/audit.jsonl" | grep -c "approved-$m")" 1 "the audit log holds the console's approval"
al_pass "the approver's console"
