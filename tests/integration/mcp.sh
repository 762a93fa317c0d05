#!/usr/bin/env bash
# mcp.sh — airlock mcp over stdio with a real JSON-RPC client (tests/mcp/): handshake and
# version negotiation, every tool, persistence across execs, isolation between sandboxes, path
# traversal and planted symlinks, approval granted and declined (the code never runs), timeout,
# streaming, cancellation, bad input, SIGTERM cleanup and the audit log.
. "$(dirname "$0")/../lib.sh"

dir=$(al_tmpdir)
chmod 0777 "$dir"
cp "$AL_SRC/tests/mcp/client.py" "$AL_SRC/tests/mcp/scenario.py" "$dir/"
chmod 0644 "$dir"/*.py
before=$(find /sys/fs/cgroup -maxdepth 3 -name 'airlock*' 2>/dev/null | sort)
"$AL_PY" "$dir/scenario.py" "$dir" "$dir/audit.jsonl" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "the MCP scenario failed (see above)"
after=$(find /sys/fs/cgroup -maxdepth 3 -name 'airlock*' 2>/dev/null | sort)
al_assert_eq "$after" "$before" "cgroups left behind by airlock mcp"
al_pass "airlock mcp end to end"
