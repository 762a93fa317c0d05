#!/usr/bin/env bash
# serve_fds.sh — a server whose descriptor limit runs out before server.max_sandboxes refuses the
# next create in words that name the limit and what to do (HTTP 429), rather than failing in
# whichever setup step opened a file first; destroying a sandbox makes room again.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_fail "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
al_serve_config "$confdir/fds.yaml" 'server:\n  max_sandboxes: 500\n  pool:\n    untrusted-code-read: 0\n    untrusted-code-write: 0\n  quota:\n    sandboxes: 500\n'
# 400 descriptors, soft and hard: the server cannot raise them, and a dozen sandboxes fill them.
(
	ulimit -n 400
	al_serve_start "$dir" --config "$confdir/fds.yaml" --audit "$dir/audit.jsonl" --state-dir none
	echo "$AL_SERVE_PID $AL_SERVE_URL" >"$dir/server"
	wait "$AL_SERVE_PID" || true
) &
for _ in $(seq 200); do [ -s "$dir/server" ] && break; sleep 0.1; done
read -r pid url <"$dir/server" || al_fail "airlock serve did not start"
AL_BG_PIDS+=("$pid")
al_serve_auth "$dir/serve.token"
post() { curl -sS -m 60 -o "$dir/body" -w '%{http_code}' -H "Authorization: Bearer $AL_TOKEN" -X POST "$url/v1/sandboxes" -d '{}'; }
ids=() code=
for _ in $(seq 40); do
	code=$(post)
	[ "$code" = 201 ] || break
	ids+=("$("$AL_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox_id"])' "$dir/body")")
done
[ "${#ids[@]}" -ge 1 ] || al_fail "no sandbox was made at all: HTTP $code $(cat "$dir/body")"
al_assert_eq "$code" 429 "the create past the descriptor limit, after ${#ids[@]} ($(cat "$dir/body"))"
al_assert_contains "$(cat "$dir/body")" "descriptor limit (400 open files)" "the refusal names the limit"
al_assert_contains "$(cat "$dir/body")" "LimitNOFILE" "and what to do"
curl -sS -m 60 -o /dev/null -H "Authorization: Bearer $AL_TOKEN" -X DELETE "$url/v1/sandboxes/${ids[0]}"
al_assert_eq "$(post)" 201 "a create once a sandbox is destroyed"
al_pass "the descriptor limit is named when it stops creates, and room comes back"
kill -TERM "$pid"
