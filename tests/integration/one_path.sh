#!/usr/bin/env bash
# one_path.sh — one call runner for every transport (tests/mcp/one_path.py): the same calls over MCP
# on stdio, MCP over HTTP and the JSON API get the same risk rule, the same approval and one audit
# record each with the same fields; what the rules deny never runs on any of them.
. "$(dirname "$0")/../lib.sh"

serve_bin=$(dirname "$AIRLOCK")/airlock-serve
[ -x "$serve_bin" ] || al_fail "airlock-serve is not built beside airlock"
if [ "$AL_AIRLOCK_BIN" != "$AIRLOCK" ]; then # user mode: a 0755 copy beside the airlock copy
	install -m 0755 "$serve_bin" "$(dirname "$AL_AIRLOCK_BIN")/airlock-serve"
fi
dir=$(al_mcp_dir one_path.py)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
AL_REVIEWER_FILE="$dir/reviewer.token" AL_REVIEWER_TOKEN=$reviewer AL_MCP_PIDS="$dir/pids" "$AL_PY" "$dir/one_path.py" "$dir" "$confdir" "$m" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "the same calls over three transports differ (see above)"
# Job cgroups are named airlock-<supervisor pid>-...: none of the servers' may remain.
[ -s "$dir/pids" ] || al_fail "the client recorded no server pid"
while read -r pid; do
	left=$(find /sys/fs/cgroup -maxdepth 3 -name "airlock-$pid-*" 2>/dev/null || true)
	al_assert_eq "$left" "" "cgroups left behind by airlock (pid $pid)"
done <"$dir/pids"
al_pass "one call runner: stdio MCP, HTTP MCP and the JSON API alike"
