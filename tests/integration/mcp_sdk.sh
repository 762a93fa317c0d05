#!/usr/bin/env bash
# mcp_sdk.sh — airlock's MCP server driven by a client the project did not write: the official MCP
# SDK from npm (tests/mcp/sdk/client.mjs), over stdio (airlock mcp) and streamable HTTP (airlock
# serve with a bearer token): tools listed, write → execute → read, state kept across cells, a
# human's approval through elicitation shown the request's digest, a declined call that never ran.
. "$(dirname "$0")/../lib.sh"

command -v node >/dev/null || al_fail "node is missing (scripts/deps.sh installs it)"
sdk="$AL_SRC/tests/mcp/sdk"
[ -d "$sdk/node_modules/@modelcontextprotocol/sdk" ] || al_fail "the MCP SDK is not installed in $sdk (scripts/deps.sh runs npm ci)"
al_serve_bin
dir=$(al_tmpdir 0777)
m=$(al_marker)

out=$(AL_MARKER=$m node "$sdk/client.mjs" stdio "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" mcp --audit "$dir/stdio.jsonl" 2>"$dir/stdio.err") ||
	{ printf '%s\n' "$out"; cat "$dir/stdio.err" >&2; al_fail "the SDK over stdio (see above)"; }
al_log "$out"
al_assert_contains "$out" "ok: state persists across cells" "stdio: the SDK's run"

al_serve_start "$dir" --audit "$dir/serve.jsonl"
out=$(AL_MARKER=$m node "$sdk/client.mjs" http "$AL_SERVE_URL/mcp" "$AL_TOKEN" 2>"$dir/http.err") ||
	{ printf '%s\n' "$out"; cat "$dir/http.err" "$dir/serve.err" >&2; al_fail "the SDK over HTTP (see above)"; }
al_log "$out"
al_assert_contains "$out" "ok: and it never ran" "HTTP: the SDK's run"
kill -TERM "$AL_SERVE_PID"
wait "$AL_SERVE_PID" || al_fail "airlock serve did not exit 0 on SIGTERM"
al_pass "the official MCP SDK over stdio and HTTP"
