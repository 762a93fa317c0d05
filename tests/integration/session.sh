#!/usr/bin/env bash
# session.sh — an MCP session's own sandbox (tests/mcp/session.py): write, execute and read without
# sandbox ids over stdio and HTTP, explicit ids beside it, GET /v1/sandboxes per principal (alice's
# session sandbox never shown to bob), and the sandbox's processes and workspace gone once the
# session ends (end of input, DELETE /mcp).
. "$(dirname "$0")/../lib.sh"

al_serve_bin
dir=$(al_mcp_dir session.py)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
# Two client principals in one token file: token:alice and token:bob.
alice=$(al_token_file "$dir/clients.token" alice)
bob=$(al_token_file "$dir/bob.token" bob)
cat "$dir/bob.token" >>"$dir/clients.token"
AL_ALICE_TOKEN=$alice AL_BOB_TOKEN=$bob "$AL_PY" "$dir/session.py" "$dir" "$confdir" "$m" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	{ cat "$dir/serve.err" >&2; al_fail "the session's own sandbox (see above)"; }
al_pass "MCP sessions own a sandbox; GET /v1/sandboxes shows only the caller's"
