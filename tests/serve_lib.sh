# shellcheck shell=bash
# serve_lib.sh — starting an `airlock serve` on a free loopback port and writing its test config, shared by tests/lib.sh and bench/lib.sh.
#
# Sourced, not run; defines functions only, so the harness (al_fail) and the benchmarks (die)
# each report a server that did not start in their own way.

# serve_launch PREFIX COMMAND...: run COMMAND (an `airlock serve` command line, ARGS included) in
# the background with --http 127.0.0.1:0 and --port-file PREFIX.port added, its stderr in
# PREFIX.err. Sets SERVE_PID at once, and SERVE_PORT when the port file is written. Returns 1,
# with the server's stderr copied to ours, when the server exits first or 15 s pass.
serve_launch() {
	local prefix=$1
	shift
	rm -f "$prefix.port"
	"$@" --http 127.0.0.1:0 --port-file "$prefix.port" 2>"$prefix.err" &
	SERVE_PID=$!
	for _ in $(seq 150); do
		[ -s "$prefix.port" ] && break
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$prefix.port" ]; then
		cat "$prefix.err" >&2
		return 1
	fi
	# shellcheck disable=SC2034 # read by the caller
	SERVE_PORT=$(cat "$prefix.port")
}

# serve_config_head: print the head of a config file with no human in the loop (every tool LOW,
# approvals off) and audit records unsynced (the tests and benchmarks time other things); the
# caller appends its own sections.
serve_config_head() {
	cat <<'YAML'
version: 1
rules:
- name: all
  tools: ["*"]
  risk: LOW
  require_approval: false
audit:
  fsync: false
YAML
}
