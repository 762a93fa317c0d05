#!/usr/bin/env bash
# mcp.sh — airlock mcp over stdio with a real JSON-RPC client (tests/mcp/): handshake and
# version negotiation, every tool, persistence across execs, isolation between sandboxes, path
# traversal and planted symlinks, approval granted and declined (the code never runs), timeout,
# streaming, cancellation, bad input, SIGTERM cleanup and the audit log; then approvals on the
# controlling terminal (tty_approval.py): approved runs, denied and timed out never run.
. "$(dirname "$0")/../lib.sh"

dir=$(al_tmpdir)
chmod 0777 "$dir"
cp "$AL_SRC/tests/mcp/client.py" "$AL_SRC/tests/mcp/scenario.py" "$AL_SRC/tests/mcp/tty_approval.py" "$dir/"
chmod 0644 "$dir"/*.py
AL_MCP_PIDS="$dir/pids" "$AL_PY" "$dir/scenario.py" "$dir" "$dir/audit.jsonl" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "the MCP scenario failed (see above)"
# The terminal prompt: a pseudo-terminal as airlock mcp's controlling terminal, the protocol on pipes.
confdir=$(al_tmpdir 0755)
AL_MCP_PIDS="$dir/pids" "$AL_PY" "$dir/tty_approval.py" "$dir" "$confdir" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "the terminal approval scenario failed (see above)"
# Job cgroups are named airlock-<supervisor pid>-...: none of the servers' may remain. (setpriv
# execs airlock, so the pid the client started is the server's.)
while read -r pid; do
	left=$(find /sys/fs/cgroup -maxdepth 3 -name "airlock-$pid-*" 2>/dev/null || true)
	al_assert_eq "$left" "" "cgroups left behind by airlock mcp (pid $pid)"
done <"$dir/pids"
[ -s "$dir/pids" ] || al_fail "the client recorded no server pid"
al_pass "airlock mcp end to end"
