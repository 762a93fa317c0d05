#!/usr/bin/env bash
# contexts.sh — interpreter contexts (tests/mcp/contexts.py) over MCP on stdio and the JSON API of
# airlock serve: state across cells, values and errors, a timed-out cell interrupted with its
# state kept and every process it started gone, a cell that ignores the interrupt losing its state,
# OOM, restart, figures as PNG, DataFrames as tables, named contexts, sandboxes that share nothing.
. "$(dirname "$0")/../lib.sh"

al_serve_bin
dir=$(al_tmpdir)
chmod 0777 "$dir"
cp "$AL_SRC/tests/mcp/client.py" "$AL_SRC/tests/mcp/contexts.py" "$dir/"
chmod 0644 "$dir"/*.py
"$AL_PY" -c 'import matplotlib, pandas' 2>/dev/null ||
	al_fail "python3-matplotlib and python3-pandas are needed (scripts/deps.sh installs them)"
confdir=$(al_tmpdir 0755)
"$AL_PY" "$dir/contexts.py" "$dir" "$confdir" -- "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" ||
	al_fail "interpreter contexts misbehaved (see above)"
al_pass "interpreter contexts over MCP stdio and the JSON API"
