# shellcheck shell=bash
# common.sh — sourced by every tests/escape driver after tests/lib.sh: hostile programs, backend choice, verdict parsing, judges.
#
# A driver is
#     . "$(dirname "$0")/../lib.sh"      # outer guard (pids + memory cgroup, hard timeout), run mode
#     . "$(dirname "$0")/common.sh"
#     esc_need esc-foo                    # copy the hostile program(s) to a 0755 dir, bound at /esc
#     esc_run [AIRLOCK-OPTS...] -- /esc/esc-foo ARGS...
#     esc_denied NAME...                  # judge each attempt the program reported
# Hostile programs run only inside `airlock run` (esc_run); nothing here executes them on
# the host. Host-side files live in al_tmpdir directories under the test's marked root.
#
# Environment: AL_ESC_BIN (the built programs), AL_BACKEND (default native; airlock has no
# --backend flag yet, so any other name is passed as `--backend NAME` and the verdict's
# "backend" must match).

: "${AL_ESC_BIN:?AL_ESC_BIN must name the directory of the built esc-* programs}"
AL_BACKEND=${AL_BACKEND:-native}
ESC_BACKEND_ARGS=()
[ "$AL_BACKEND" = native ] || ESC_BACKEND_ARGS=(--backend "$AL_BACKEND")

# The programs are copied to a 0755 dir (the build dir may not be traversable by the
# unprivileged user) and bound read-only at /esc inside.
ESC_DIR="$AL_TEST_ROOT/esc"
mkdir -m 0755 "$ESC_DIR"
ESC=/esc

# esc_need PROG...: make the hostile programs available at /esc/PROG inside.
esc_need() {
	local p
	for p in "$@"; do
		[ -x "$AL_ESC_BIN/$p" ] || al_fail "$p was not built (looked in $AL_ESC_BIN)"
		install -m 0755 "$AL_ESC_BIN/$p" "$ESC_DIR/$p"
	done
}

# esc_run [AIRLOCK-OPTS...] -- CMD [ARG...]: `airlock run --json` with /esc bound. Sets, besides
# al_run's AL_RC/AL_OUT/AL_ERR: ESC_STATUS (the verdict's status, or "refused" when airlock
# exited 125), ESC_EXIT, ESC_SIGNAL, ESC_OUT (the job's stdout), ESC_ERRDATA (its stderr),
# ESC_V (the verdict file). A verdict that is not valid JSON fails the test.
esc_run() {
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	al_run run "${ESC_BACKEND_ARGS[@]}" --ro "$ESC_DIR:$ESC" --json "${opts[@]}" -- "$@"
	esc_parse_verdict "$AL_OUT_FILE"
}

# esc_parse_verdict FILE: fill the ESC_* variables from a verdict file (see esc_run).
esc_parse_verdict() {
	ESC_V=$1
	ESC_OUT="" ESC_ERRDATA="" ESC_EXIT="" ESC_SIGNAL=""
	if [ "$AL_RC" = 125 ]; then
		ESC_STATUS=refused
		return 0
	fi
	local fields
	fields=$(AL_V="$ESC_V" AL_O="$ESC_V.stdout" AL_E="$ESC_V.stderr" AL_B="$AL_BACKEND" "$AL_PY" -c '
import json, os, sys
try:
    v = json.load(open(os.environ["AL_V"]))
except Exception as e:
    sys.exit("verdict is not JSON: %s" % e)
open(os.environ["AL_O"], "w").write(v.get("stdout", {}).get("data", ""))
open(os.environ["AL_E"], "w").write(v.get("stderr", {}).get("data", ""))
if v.get("backend") != os.environ["AL_B"]:
    sys.exit("verdict backend %r, expected %r" % (v.get("backend"), os.environ["AL_B"]))
print(v.get("status"), v.get("exit_code"), v.get("signal"))
') || al_fail "bad verdict from '$AL_CMD'"
	read -r ESC_STATUS ESC_EXIT ESC_SIGNAL <<<"$fields"
	ESC_OUT=$(cat "$ESC_V.stdout")
	ESC_ERRDATA=$(cat "$ESC_V.stderr")
	al_log "verdict: status=$ESC_STATUS exit=$ESC_EXIT signal=$ESC_SIGNAL"
}

# esc_v KEY.PATH: a value of the last verdict.
esc_v() { al_json_get "$ESC_V" "$1"; }

# esc_kv NAME: the value the program reported for NAME (first "NAME=value" line).
esc_kv() { al_kv "$1" "$ESC_OUT"; }

esc_dump() {
	# (|| true: head closes the pipe early on long output, and pipefail must not end the test here.)
	{
		echo "# program stdout (first 60 lines):"
		printf '%s\n' "$ESC_OUT" | head -n 60 | cut -c1-300 | sed 's/^/#   /' || true
		echo "# program stderr (first 20 lines):"
		printf '%s\n' "$ESC_ERRDATA" | head -n 20 | cut -c1-300 | sed 's/^/#   /' || true
	} >&2
}

# esc_escaped WHAT: the attack got through. Says so loudly and fails.
esc_escaped() {
	esc_dump
	al_fail "ESCAPE: $*"
}

# esc_ran: the program really ran to its end (the job exited 0), so absent lines mean
# something, and a refusal by airlock is not mistaken for a defence.
esc_ran() {
	if [ "$ESC_STATUS" != exited ] || [ "$ESC_EXIT" != 0 ]; then
		esc_dump
		al_fail "the hostile program did not run to its end (status $ESC_STATUS, exit $ESC_EXIT)"
	fi
}

# esc_denied NAME...: each attempt was reported and did not succeed.
esc_denied() {
	local n v
	for n in "$@"; do
		v=$(esc_kv "$n")
		[ -n "$v" ] || { esc_dump; al_fail "the program reported nothing for '$n'"; }
		[ "$v" != OK ] || esc_escaped "'$n' succeeded"
	done
	al_pass "refused: $*"
}

# esc_denied_matching ERE: every reported attempt whose name matches ERE failed, and there
# was at least one.
esc_denied_matching() {
	local lines bad
	lines=$(printf '%s\n' "$ESC_OUT" | grep -E "^($1)=" || true)
	[ -n "$lines" ] || { esc_dump; al_fail "the program reported nothing matching '$1'"; }
	bad=$(printf '%s\n' "$lines" | grep -E '=OK$' || true)
	[ -z "$bad" ] || esc_escaped "succeeded: $(printf '%s' "$bad" | tr '\n' ' ')"
	al_pass "refused: $(printf '%s\n' "$lines" | wc -l) attempts matching '$1'"
}

# esc_expect NAME VALUE...: the program reported one of VALUEs for NAME (the named defence).
esc_expect() {
	local n=$1 v w
	shift
	v=$(esc_kv "$n")
	[ "$v" != OK ] || esc_escaped "'$n' succeeded"
	for w in "$@"; do
		[ "$v" = "$w" ] && { al_pass "$n=$v"; return 0; }
	done
	esc_dump
	al_fail "$n: expected one of '$*', got '$v'"
}

# esc_no_leak MARKER [WHAT]: nothing the job printed or the verdict holds contains MARKER.
esc_no_leak() {
	if grep -qF -- "$1" "$ESC_V" "$ESC_V.stdout" "$ESC_V.stderr" 2>/dev/null; then
		printf '%s\n' "$ESC_OUT" | grep -F -- "$1" | head -n 5 | sed 's/^/# leaked: /' >&2 || true
		esc_escaped "${2:-the host secret} reached the sandbox (marker $1 in its output)"
	fi
	al_pass "${2:-the host secret} did not reach the sandbox"
}

# esc_bg_as_uid UID CMD...: al_bg a harmless host helper (sleep) as UID where we can (root),
# otherwise as ourselves; AL_BG_PID is the helper's own pid (setpriv execs it).
esc_bg_as_uid() {
	local uid=$1
	shift
	if [ "$(id -u)" = 0 ]; then
		al_bg setpriv "--reuid=$uid" "--regid=$uid" --clear-groups -- "$@"
	else
		al_bg "$@"
	fi
}

# esc_cgroup_limits: 0 when airlock can enforce cgroup limits (memory and pids) in this mode
# (the verdict of a trivial run says so); else 1, and callers check that explicit limits are
# refused instead (fail closed), never run the bomb unguarded by airlock.
esc_cgroup_limits() {
	al_run run "${ESC_BACKEND_ARGS[@]}" --json -- /bin/true
	[ "$AL_RC" = 0 ] || al_fail "airlock cannot run /bin/true"
	[ "$(al_json_type "$AL_OUT" enforced.cgroup)" = object ] &&
		[ "$(al_json_get "$AL_OUT" enforced.cgroup.memory)" = true ] &&
		[ "$(al_json_get "$AL_OUT" enforced.cgroup.pids)" = true ]
}

# esc_refused OPTION...: with no cgroup for this caller, each explicit limit is refused (exit
# 125, naming the cgroup), so the hostile program never runs without it.
esc_refused() {
	local opt
	for opt in "$@"; do
		# shellcheck disable=SC2086 # OPTION is "--flag value"
		esc_run $opt -- /bin/true
		al_assert_eq "$ESC_STATUS" refused "airlock without a cgroup, asked for $opt"
		al_assert_contains "$AL_ERR" cgroup "the refusal of $opt"
	done
	al_pass "no cgroup in mode $AL_TEST_MODE: explicit limits are refused (fail closed), so nothing runs unbounded"
}

# esc_pty_airlock: the shell words that start `airlock run` in this mode with /esc bound, for
# a command line handed to script(1).
esc_pty_airlock() {
	printf '%q ' "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${ESC_BACKEND_ARGS[@]}" --ro "$ESC_DIR:$ESC" --
}

# esc_in_pty FILE CMD: run the shell command line CMD as the session leader of a fresh pty
# (script(1) from util-linux); the terminal's whole output (what was printed to it and
# whatever it echoed) goes to FILE.
esc_in_pty() {
	local out=$1
	shift
	command -v script >/dev/null || al_skip "script (util-linux) is needed for a pty"
	AL_RUN_N=$((AL_RUN_N + 1))
	# shellcheck disable=SC2034 # read by lib.sh's al_dump_last
	AL_CMD="script -qec '$*'" AL_OUT_FILE=$out AL_ERR_FILE=/dev/null AL_RC=0
	timeout -k 5 60 script -qec "$*" /dev/null </dev/null >"$out" 2>&1 || AL_RC=$?
	al_log "[$AL_RUN_N] in a pty: $* -> rc $AL_RC"
}

# esc_tree_sum DIR: a digest of a host dir's names, types, modes, sizes and contents (no
# link following), to tell from outside whether anything in it changed.
esc_tree_sum() {
	(cd "$1" && find . -printf '%p %y %m %s %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort) |
		sha256sum | cut -d' ' -f1
}
