# shellcheck shell=bash
# lib.sh — harness sourced by every integration test: run modes, outer guard, temp dirs, assertions, listeners.
#
# A test is `. "$(dirname "$0")/../lib.sh"` followed by its body. Sourcing this file
# happens twice per test:
#   1. outer (AL_GUARDED unset): decide skip/run, make the per-test root dir under /tmp
#      (marked), build the guard (a pids + memory cgroup when root), then re-run the
#      same script inside the guard under `timeout -k 5 120` and wait. Afterwards it
#      kills and reports anything still alive in the guard (a leak is a failure),
#      removes the cgroups and the marked dir, and exits with the body's status.
#   2. inner (AL_GUARDED=1): set up the run mode, traps, and return to the test body.
#
# Environment from CTest: AIRLOCK, AL_PROBE, AL_TEST_MODE (root|user), AL_SRC.
# Optional: CI=true (an environment skip or a missing guard is a failure),
# AL_KEEP=1 (keep temp dirs for debugging), AL_GUARD_TIMEOUT (seconds, default 120),
# AL_BACKEND (native|bwrap|gvisor|oci; default native).
#
# Backends (the conformance matrix, CTest label backend-B): with AL_BACKEND=B other than
# native, al_airlock (so al_run, al_box, al_probe) passes `--backend B` right after the
# `run` or `exec` subcommand; a later --backend in the test's own arguments still wins.
# When `airlock check --json` says B is not available in this mode, the test body never
# runs: the harness asserts instead that `airlock run --backend B` is refused (exit 125,
# a setup-error verdict naming B, a message naming the missing piece, the payload never
# ran) and passes — never a skip. With AL_BACKEND unset or native nothing changes.
#
# Modes: "root" runs airlock as root (skip when we are not root). "user" runs it as an
# unprivileged user: when we are root, as uid/gid 65534 via setpriv, from copies of the
# binaries in a 0755 dir (the build dir may sit under an untraversable /root); when we
# are not root, as ourselves.

set -euo pipefail

: "${AIRLOCK:?AIRLOCK must name the airlock binary}"
: "${AL_PROBE:?AL_PROBE must name the al-probe binary}"
AL_TEST_MODE=${AL_TEST_MODE:-root}
AL_BACKEND=${AL_BACKEND:-native}
# Absolute paths: the test body runs from its own temp dir.
AIRLOCK=$(readlink -f "$AIRLOCK")
AL_PROBE=$(readlink -f "$AL_PROBE")
export AIRLOCK AL_PROBE
AL_SCRIPT=$(readlink -f "$0")
AL_NAME="$AL_TEST_MODE.$(basename "$AL_SCRIPT" .sh)"
[ "$AL_BACKEND" = native ] || AL_NAME="$AL_BACKEND.$AL_NAME"
AL_PY=/usr/bin/python3
[ -x "$AL_PY" ] || AL_PY=python3
AL_MARK=.airlock-test
# The unprivileged identity used in user mode when the harness runs as root.
AL_NOBODY_UID=65534
AL_NOBODY_GID=65534
# Default id_base of `airlock run` as root; the payload (sandbox uid 1000) is id_base+1000.
AL_ID_BASE=1879048192

al_log() { printf '# %s\n' "$*" >&2; }
# serve_launch and serve_config_head, shared with bench/lib.sh.
# shellcheck source=tests/serve_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
# shellcheck source=tests/skips.sh
. "$(dirname "${BASH_SOURCE[0]}")/skips.sh"

# ---------------------------------------------------------------- temp dirs

# Remove DIR only if it carries our marker, never crossing into another mount.
al_rm_marked() {
	local d=$1
	[ -n "$d" ] && [ -d "$d" ] && [ -f "$d/$AL_MARK" ] || return 0
	if [ -n "${AL_KEEP:-}" ]; then
		al_log "keeping $d (AL_KEEP set)"
		return 0
	fi
	rm -rf --one-file-system -- "$d" || al_log "could not fully remove $d"
}

# al_tmpdir [MODE]: print a fresh marked dir (default mode 0755, so the unprivileged
# payload can reach it) under this test's root dir in /tmp.
al_tmpdir() {
	local d
	d=$(mktemp -d "${AL_TEST_ROOT:-/tmp}/t.XXXXXX")
	touch "$d/$AL_MARK"
	chmod "${1:-0755}" "$d"
	printf '%s\n' "$d"
}

# ---------------------------------------------------------------- skip / fail

# al_skip REASON: a skip (exit 77), or a failure with CI=true unless tests/skips.allow lists the
# test (tests/skips.sh; AL_CTEST is the CTest name, AL_NAME when run by hand).
al_skip() {
	al_skip_or_fail "${AL_CTEST:-$AL_NAME}" "$*"
}

# ---------------------------------------------------------------- outer guard (cgroups)

# Path (relative to the hierarchy root) of our cgroup for a v1 controller, or for v2 ("").
al_cg_rel() {
	awk -F: -v c="$1" '
		c == "" && $1 == "0" { print $3; exit }
		c != "" { n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) { print $3; exit } }
	' /proc/self/cgroup
}

al_write() { { printf '%s\n' "$2" >"$1"; } 2>/dev/null; }

# Fill AL_GUARD_DIRS with freshly made cgroup dirs that limit pids and memory, or
# print the reason and return 1. v2 when /sys/fs/cgroup is cgroup2 with both controllers,
# else the v1 per-controller hierarchies (as on hybrid hosts). In user mode the guard is also
# delegated to the unprivileged user, as a service manager delegates a subtree (al_delegate),
# with the cpu controller too: airlock's default limits must be enforced or refused.
al_guard_setup() {
	local name="airlock-test.$$.$RANDOM" fstype rel dir parent ctrl ctrls="pids memory"
	[ "$AL_TEST_MODE" != user ] || ctrls="pids memory cpu"
	# v1: the freezer too where the host has it, so that the test's paused sandboxes are the
	# guard's to find (and thaw: al_guard_teardown) and, in user mode, the user's to pause.
	[ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] || [ ! -f /sys/fs/cgroup/freezer/cgroup.procs ] ||
		ctrls="$ctrls freezer"
	AL_GUARD_DIRS=()
	fstype=$(stat -f -c %T /sys/fs/cgroup 2>/dev/null || echo none)
	if [ "$fstype" = cgroup2fs ]; then
		rel=$(al_cg_rel "")
		if [ "$rel" = / ]; then
			parent=/sys/fs/cgroup
			al_write "$parent/cgroup.subtree_control" "$(printf '+%s ' $ctrls)" ||
				{ AL_GUARD_WHY="cannot enable $ctrls in the v2 root"; return 1; }
		else
			# A non-root cgroup holding processes (ours) cannot delegate controllers
			# (no internal processes), so the guard becomes a sibling of our cgroup;
			# our cgroup listing both controllers proves the parent delegates them.
			parent=$(dirname "/sys/fs/cgroup$rel")
			for ctrl in $ctrls; do
				grep -qw "$ctrl" "/sys/fs/cgroup$rel/cgroup.controllers" 2>/dev/null ||
					al_write "$parent/cgroup.subtree_control" "+$ctrl" ||
					{ AL_GUARD_WHY="v2 controller $ctrl not delegated to $rel"; return 1; }
			done
		fi
		dir="$parent/$name"
		mkdir "$dir" 2>/dev/null || { AL_GUARD_WHY="cannot mkdir $dir"; return 1; }
		AL_GUARD_DIRS+=("$dir")
		al_write "$dir/pids.max" 512 || { AL_GUARD_WHY="cannot set $dir/pids.max"; return 1; }
		al_write "$dir/memory.max" "${AL_GUARD_MEMORY:-2G}" || { AL_GUARD_WHY="cannot set $dir/memory.max"; return 1; }
		al_delegate "$dir" cgroup.procs cgroup.threads cgroup.subtree_control
		return
	fi
	for ctrl in $ctrls; do
		[ -f "/sys/fs/cgroup/$ctrl/cgroup.procs" ] ||
			{ AL_GUARD_WHY="no v1 $ctrl hierarchy at /sys/fs/cgroup/$ctrl and no cgroup2 root"; return 1; }
		rel=$(al_cg_rel "$ctrl")
		[ -n "$rel" ] || { AL_GUARD_WHY="no $ctrl line in /proc/self/cgroup"; return 1; }
		# A child of our own cgroup: the guard adds limits without escaping any outer ones.
		dir="/sys/fs/cgroup/$ctrl${rel%/}/$name"
		mkdir "$dir" 2>/dev/null || { AL_GUARD_WHY="cannot mkdir $dir"; return 1; }
		AL_GUARD_DIRS+=("$dir")
	done
	al_write "${AL_GUARD_DIRS[0]}/pids.max" 512 || { AL_GUARD_WHY="cannot set pids.max"; return 1; }
	al_write "${AL_GUARD_DIRS[1]}/memory.limit_in_bytes" "${AL_GUARD_MEMORY:-2G}" ||
		{ AL_GUARD_WHY="cannot set memory.limit_in_bytes"; return 1; }
	for dir in "${AL_GUARD_DIRS[@]}"; do
		al_delegate "$dir" cgroup.procs tasks || return 1
	done
}

# al_delegate DIR FILE...: in user mode, hand the cgroup DIR to the unprivileged user (the
# directory and the files that delegation needs; its own limits stay root's).
al_delegate() {
	local dir=$1 f
	shift
	[ "$AL_TEST_MODE" = user ] || return 0
	for f in "" "$@"; do
		chown "$AL_NOBODY_UID:$AL_NOBODY_GID" "$dir/$f" 2>/dev/null ||
			{ AL_GUARD_WHY="cannot delegate $dir/$f to uid $AL_NOBODY_UID"; return 1; }
	done
}

# Pids in the guard cgroups and any cgroups below them (airlock may make its own).
al_guard_pids() {
	local d
	for d in "${AL_GUARD_DIRS[@]}"; do
		[ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
	done | sort -un
}

# al_guard_thaw: thaws every frozen cgroup beneath the guard (v2 cgroup.freeze, v1 freezer.state);
# true when it found one.
al_guard_thaw() {
	local d f files found=1
	for d in "${AL_GUARD_DIRS[@]}"; do
		[ -d "$d" ] || continue
		# (no process substitution: a guest without /dev/fd runs this too)
		files=$(find "$d" -mindepth 1 \( -name cgroup.freeze -o -name freezer.state \) 2>/dev/null) || true
		for f in $files; do
			case "$f" in
			*/cgroup.freeze) [ "$(cat "$f" 2>/dev/null)" = 1 ] || continue; al_write "$f" 0 ;;
			*/freezer.state) [ "$(cat "$f" 2>/dev/null)" != THAWED ] || continue; al_write "$f" THAWED ;;
			esac
			printf '# thawed %s\n' "$f" >&2
			found=0
		done
	done
	return $found
}

# Kill whatever is left in the guard, remove it (deepest first). Prints leftovers and
# returns 1 if anything was still alive: nothing may outlive its test.
al_guard_teardown() {
	local leftovers pid i d status=0
	[ "${#AL_GUARD_DIRS[@]}" -gt 0 ] || return 0
	# A job's processes end within a bounded time of whatever ended airlock (issue 14: 1 s) —
	# e.g. a held sandbox's init after the test body's SIGKILL of airlock serve — so only what is
	# still there a second later outlived the test.
	for i in $(seq 20); do
		leftovers=$(al_guard_pids)
		[ -n "$leftovers" ] || break
		sleep 0.05
	done
	# A frozen cgroup left behind (a paused sandbox whose server and keeper were both killed) is
	# a failure, and thawed so that what is in it can be killed (a frozen v1 task only dies once
	# thawed).
	if al_guard_thaw; then
		echo "FAIL: $AL_NAME: a frozen cgroup outlived the test in the guard" >&2
		status=1
	fi
	if [ -n "$leftovers" ]; then
		echo "FAIL: $AL_NAME: processes outlived the test in the guard cgroup:" >&2
		for pid in $leftovers; do
			printf '#   pid %s uid %s: %s\n' "$pid" \
				"$(awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)" \
				"$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" >&2
		done
		status=1
	fi
	for i in $(seq 50); do
		leftovers=$(al_guard_pids)
		[ -n "$leftovers" ] || break
		for pid in $leftovers; do kill -KILL "$pid" 2>/dev/null || true; done
		sleep 0.1
	done
	for d in "${AL_GUARD_DIRS[@]}"; do
		[ -d "$d" ] || continue
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$d" 2>/dev/null || { al_log "could not remove cgroup $d"; status=1; }
	done
	return $status
}

al_outer_interrupted() {
	trap - TERM INT HUP
	echo "FAIL: $AL_NAME: interrupted; killing the test body" >&2
	# The body's group: timeout's pid is its process group id (timeout calls setpgid).
	[ -z "$AL_GUARD_CHILD" ] || kill -KILL -- "-$AL_GUARD_CHILD" "$AL_GUARD_CHILD" 2>/dev/null || true
	al_guard_teardown || true
	al_rm_marked "$AL_TEST_ROOT"
	exit 143
}

al_outer() {
	local rc=0 d
	if [ "$AL_TEST_MODE" = root ] && [ "$(id -u)" != 0 ]; then
		al_skip "root mode needs root"
	fi
	[ "$AL_TEST_MODE" = root ] || [ "$AL_TEST_MODE" = user ] ||
		{ echo "FAIL: AL_TEST_MODE must be root or user, not '$AL_TEST_MODE'" >&2; exit 1; }
	case "$AL_BACKEND" in
	native | bwrap | gvisor | oci) ;;
	*) echo "FAIL: AL_BACKEND must be native, bwrap, gvisor or oci, not '$AL_BACKEND'" >&2; exit 1 ;;
	esac
	[ -x "$AIRLOCK" ] || { echo "FAIL: AIRLOCK=$AIRLOCK is not executable" >&2; exit 1; }
	[ -x "$AL_PROBE" ] || { echo "FAIL: AL_PROBE=$AL_PROBE is not executable" >&2; exit 1; }

	AL_TEST_ROOT=$(mktemp -d /tmp/airlock-test.XXXXXX)
	touch "$AL_TEST_ROOT/$AL_MARK"
	chmod 0755 "$AL_TEST_ROOT"
	export AL_TEST_ROOT

	AL_GUARD_DIRS=()
	AL_GUARD_CHILD=""
	# Interrupted (e.g. by CTest's timeout): still kill the body and whatever is in the
	# guard, and clean up. The body runs in the background and we `wait`, because bash
	# defers traps until a foreground child exits.
	trap 'al_outer_interrupted' TERM INT HUP
	if [ "$(id -u)" = 0 ] && ! al_guard_setup; then
		al_guard_teardown || true
		AL_GUARD_DIRS=()
		if [ "${CI:-}" = true ]; then
			echo "FAIL: $AL_NAME: cannot build the cgroup guard as root: $AL_GUARD_WHY" >&2
			al_rm_marked "$AL_TEST_ROOT"
			exit 1
		fi
		al_log "no cgroup guard ($AL_GUARD_WHY); running with the timeout only"
	fi
	[ "${#AL_GUARD_DIRS[@]}" = 0 ] || al_log "guard: ${AL_GUARD_DIRS[*]} (pids.max 512, memory 2G)"
	(
		trap - EXIT TERM INT HUP
		for d in "${AL_GUARD_DIRS[@]}"; do
			al_write "$d/cgroup.procs" "$BASHPID" ||
				{ echo "FAIL: $AL_NAME: cannot move the test into the guard $d" >&2; exit 1; }
		done
		# shellcheck disable=SC2030 # only the re-run body is guarded
		export AL_GUARDED=1
		# timeout makes its own process group and signals all of it when time is up.
		exec timeout -k 5 "${AL_GUARD_TIMEOUT:-120}" bash "$AL_SCRIPT"
	) &
	AL_GUARD_CHILD=$!
	wait "$AL_GUARD_CHILD" || rc=$?
	AL_GUARD_CHILD=""
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "FAIL: $AL_NAME: the test body hit the guard's ${AL_GUARD_TIMEOUT:-120}s timeout (rc $rc)" >&2
		rc=1
	fi
	if ! al_guard_teardown && [ "$rc" = 0 ]; then
		rc=1
	fi
	al_rm_marked "$AL_TEST_ROOT"
	exit "$rc"
}

# ---------------------------------------------------------------- inner: run modes

AL_BG_PIDS=()

al_inner_cleanup() {
	local pid d
	for pid in "${AL_BG_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	for d in "$AL_TEST_ROOT"/t.*; do
		al_rm_marked "$d"
	done
}

al_inner() {
	trap al_inner_cleanup EXIT
	trap 'exit 143' TERM INT
	cd "$AL_TEST_ROOT"

	# The probe always comes from a 0755 copy so any payload uid can execute it; it is
	# bound read-only at /probe inside the sandbox.
	AL_PROBE_DIR="$AL_TEST_ROOT/probe"
	mkdir -m 0755 "$AL_PROBE_DIR"
	install -m 0755 "$AL_PROBE" "$AL_PROBE_DIR/al-probe"
	[ -z "${AL_TRY_SYSCALL:-}" ] || install -m 0755 "$AL_TRY_SYSCALL" "$AL_PROBE_DIR/al-try-syscall"
	AL_HOST_PROBE="$AL_PROBE_DIR/al-probe"
	P=/probe/al-probe

	AL_SETPRIV=()
	AL_AIRLOCK_BIN=$AIRLOCK
	if [ "$AL_TEST_MODE" = user ] && [ "$(id -u)" = 0 ]; then
		command -v setpriv >/dev/null || al_skip "user mode as root needs setpriv"
		mkdir -m 0755 "$AL_TEST_ROOT/bin"
		install -m 0755 "$AIRLOCK" "$AL_TEST_ROOT/bin/airlock"
		AL_AIRLOCK_BIN="$AL_TEST_ROOT/bin/airlock"
		AL_SETPRIV=(setpriv "--reuid=$AL_NOBODY_UID" "--regid=$AL_NOBODY_GID" --clear-groups --)
		AL_CALLER_UID=$AL_NOBODY_UID
		AL_CALLER_GID=$AL_NOBODY_GID
	else
		AL_CALLER_UID=$(id -u)
		AL_CALLER_GID=$(id -g)
	fi
	# Each test's servers keep their sandboxes in a state directory of its own (airlock serve's
	# default is one per host user, which tests run side by side would share).
	export AIRLOCK_STATE_DIR="$AL_TEST_ROOT/state"
	mkdir -m 0700 "$AIRLOCK_STATE_DIR"
	chown "$AL_CALLER_UID:$AL_CALLER_GID" "$AIRLOCK_STATE_DIR"
	# The payload's uid as the host sees it (SPEC: id_base+1000 as root; the caller otherwise).
	if [ "$AL_CALLER_UID" = 0 ]; then
		AL_PAYLOAD_HOST_UID=$((AL_ID_BASE + 1000))
		AL_PAYLOAD_HOST_GID=$((AL_ID_BASE + 1000))
	else
		AL_PAYLOAD_HOST_UID=$AL_CALLER_UID
		AL_PAYLOAD_HOST_GID=$AL_CALLER_GID
	fi
	# For the few places that call "$AL_AIRLOCK_BIN" run directly: empty for native.
	AL_BACKEND_ARGS=()
	[ "$AL_BACKEND" = native ] || AL_BACKEND_ARGS=(--backend "$AL_BACKEND")
	AL_RUN_N=0
	al_log "$AL_NAME: airlock=$AL_AIRLOCK_BIN backend=$AL_BACKEND caller uid=$AL_CALLER_UID payload host uid=$AL_PAYLOAD_HOST_UID root=$AL_TEST_ROOT"
	if [ "$AL_BACKEND" != native ]; then
		al_check_json >/dev/null # here, not in a subshell: a failing `airlock check` fails the test
		al_backend_available || al_backend_unavailable_case
	fi
}

# al_airlock ARGS...: run airlock in the current mode (as root, or as the unprivileged user),
# under AL_BACKEND: `--backend B` goes right after `run`/`exec` (options are parsed up to the
# command, and a later --backend overrides it); nothing is added for native.
al_airlock() {
	if [ "$AL_BACKEND" != native ] && { [ "${1:-}" = run ] || [ "${1:-}" = exec ]; }; then
		"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" "$1" --backend "$AL_BACKEND" "${@:2}"
	else
		"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" "$@"
	fi
}

# al_run ARGS...: al_airlock with stdout/stderr captured; sets AL_RC, AL_OUT, AL_ERR
# (and AL_OUT_FILE, AL_ERR_FILE, AL_CMD). Never trips `set -e`.
al_run() {
	AL_RUN_N=$((AL_RUN_N + 1))
	AL_OUT_FILE="$AL_TEST_ROOT/run$AL_RUN_N.out"
	AL_ERR_FILE="$AL_TEST_ROOT/run$AL_RUN_N.err"
	AL_CMD="airlock $*"
	if [ "$AL_BACKEND" != native ] && { [ "${1:-}" = run ] || [ "${1:-}" = exec ]; }; then
		AL_CMD="airlock $1 --backend $AL_BACKEND ${*:2}"
	fi
	AL_RC=0
	al_airlock "$@" >"$AL_OUT_FILE" 2>"$AL_ERR_FILE" || AL_RC=$?
	AL_OUT=$(cat "$AL_OUT_FILE")
	AL_ERR=$(cat "$AL_ERR_FILE")
	al_log "[$AL_RUN_N] $AL_CMD -> rc $AL_RC"
}

# al_split_args [OPTS...] -- [ARGS...]: AL_OPTS the words before the first "--", AL_ARGV those after
# it (all of them when there is none), for the wrappers below that put their own options first.
al_split_args() {
	AL_OPTS=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		AL_OPTS+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	AL_ARGV=("$@")
}

# al_box [AIRLOCK-OPTS...] -- CMD [ARGS...]: `airlock run` with the probe bound at /probe
# (so CMD may be a shell that calls "$P" several times).
al_box() {
	al_split_args "$@"
	al_run run --ro "$AL_PROBE_DIR:/probe" "${AL_OPTS[@]}" -- "${AL_ARGV[@]}"
}

# al_probe [AIRLOCK-OPTS...] -- PROBE-ARGS...: `airlock run` of the probe itself.
al_probe() {
	al_split_args "$@"
	al_box "${AL_OPTS[@]}" -- "$P" "${AL_ARGV[@]}"
}

# ---------------------------------------------------------------- assertions

al_dump_last() {
	[ "${AL_RUN_N:-0}" -gt 0 ] || return 0
	{
		echo "# last run: $AL_CMD -> rc $AL_RC"
		echo "# stdout (first 40 lines):"
		head -n 40 "$AL_OUT_FILE" | cut -c1-300 | sed 's/^/#   /'
		echo "# stderr (first 40 lines):"
		head -n 40 "$AL_ERR_FILE" | cut -c1-300 | sed 's/^/#   /'
	} >&2
}

al_fail() {
	echo "FAIL: $AL_NAME: $*" >&2
	al_dump_last
	exit 1
}

al_pass() { printf 'ok: %s\n' "$*" >&2; }

# al_assert_eq ACTUAL EXPECTED [WHAT]
al_assert_eq() {
	[ "$1" = "$2" ] || al_fail "${3:-value}: expected '$2', got '$1'"
	al_pass "${3:-value} == '$2'"
}

# al_assert_contains HAYSTACK NEEDLE [WHAT] (fixed string)
al_assert_contains() {
	case "$1" in
	*"$2"*) al_pass "${3:-text} contains '$2'" ;;
	*) al_fail "${3:-text} does not contain '$2': '$(printf '%s' "$1" | head -c 500)'" ;;
	esac
}

al_assert_not_contains() {
	case "$1" in
	*"$2"*) al_fail "${3:-text} contains '$2' but must not: '$(printf '%s' "$1" | head -c 500)'" ;;
	*) al_pass "${3:-text} does not contain '$2'" ;;
	esac
}

# al_assert_rc EXPECTED: exit status of the last al_run.
al_assert_rc() { al_assert_eq "$AL_RC" "$1" "exit status of '$AL_CMD'"; }

# al_kv KEY [TEXT]: value of the first "KEY=value" line of TEXT (default: last stdout).
al_kv() {
	printf '%s\n' "${2-$AL_OUT}" | awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }'
}

# al_json_get FILE_OR_STRING KEY.PATH: print a value of a JSON document. Strings print
# raw; null/true/false as such; numbers, objects and lists as JSON. A missing key or bad
# JSON is an error (status 1, message on stderr). List indexes are numbers ("a.0.b").
al_json_get() {
	AL_J_SRC=$1 AL_J_PATH=$2 "$AL_PY" -c '
import json, os, sys
src, path = os.environ["AL_J_SRC"], os.environ["AL_J_PATH"]
try:
    text = open(src).read() if os.path.isfile(src) else src
    v = json.loads(text)
except Exception as e:
    sys.exit("al_json_get: not JSON (%s): %r" % (e, src[:200]))
for part in filter(None, path.split(".")):
    if isinstance(v, list) and part.isdigit() and int(part) < len(v):
        v = v[int(part)]
    elif isinstance(v, dict) and part in v:
        v = v[part]
    else:
        sys.exit("al_json_get: no key %r (path %s)" % (part, path))
print(v if isinstance(v, str) else json.dumps(v))
'
}

# al_json_type FILE_OR_STRING KEY.PATH: one of str int float bool null object list.
al_json_type() {
	AL_J_SRC=$1 AL_J_PATH=$2 "$AL_PY" -c '
import json, os, sys
src, path = os.environ["AL_J_SRC"], os.environ["AL_J_PATH"]
text = open(src).read() if os.path.isfile(src) else src
v = json.loads(text)
for part in filter(None, path.split(".")):
    if isinstance(v, list) and part.isdigit() and int(part) < len(v):
        v = v[int(part)]
    elif isinstance(v, dict) and part in v:
        v = v[part]
    else:
        print("missing"); sys.exit(0)
names = {bool: "bool", int: "int", float: "float", str: "str", type(None): "null", dict: "object", list: "list"}
print(names[type(v)])
'
}

# ---------------------------------------------------------------- backends

# al_backend_is NAME...: 0 if AL_BACKEND is one of NAME.
al_backend_is() {
	local b
	for b in "$@"; do
		[ "$AL_BACKEND" = "$b" ] && return 0
	done
	return 1
}

# al_check_json: path of `airlock check --json` as run in this mode (made once per test).
al_check_json() {
	local f="$AL_TEST_ROOT/check.json" rc=0
	if [ ! -s "$f" ]; then
		"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" check --json >"$f.tmp" 2>"$f.err" || rc=$?
		[ "$rc" = 0 ] || al_fail "airlock check --json failed (rc $rc): $(head -c 500 "$f.err")"
		mv "$f.tmp" "$f"
	fi
	printf '%s\n' "$f"
}

# al_backend_layer LAYER [BACKEND]: backend_layers.BACKEND.LAYER of `airlock check --json`
# in this mode (default AL_BACKEND); "false" when check does not list the backend or layer.
al_backend_layer() {
	local f
	f=$(al_check_json) || exit 1
	AL_J_SRC=$f AL_J_B=${2:-$AL_BACKEND} AL_J_L=$1 "$AL_PY" -c '
import json, os
v = json.load(open(os.environ["AL_J_SRC"])).get("backend_layers", {}).get(os.environ["AL_J_B"], {})
x = v.get(os.environ["AL_J_L"], False) if isinstance(v, dict) else False
print(x if isinstance(x, str) else json.dumps(x))
'
}

# al_backend_enforces LAYER: 0 if AL_BACKEND can enforce LAYER here (check's backend_layers,
# e.g. landlock, checkout_copy, workdir_overlay, egress_proxy, cgroup_limits).
al_backend_enforces() { [ "$(al_backend_layer "$1")" = true ]; }

# al_backend_available: 0 if `airlock check --json` says AL_BACKEND is available in this mode.
al_backend_available() { [ "$(al_backend_layer available)" = true ]; }

# al_backend_words: what names AL_BACKEND and the runtime it needs (an ERE, for messages).
al_backend_words() {
	case "$AL_BACKEND" in
	bwrap) echo 'bwrap|bubblewrap' ;;
	gvisor) echo 'gvisor|runsc' ;;
	oci) echo 'oci|crun|runc' ;;
	*) echo "$AL_BACKEND" ;;
	esac
}

# al_expect_refusal TOKEN [AIRLOCK-RUN-OPTS...]: `airlock run OPTS -- (a payload that would
# write a witness file)` must be refused: exit 125, stderr naming TOKEN (an ERE, -i), and the
# payload never ran. For what the backend legitimately cannot do: asserted, never skipped.
al_expect_refusal() {
	local token=$1 witness
	shift
	witness=$(al_tmpdir 0777)
	al_run run --ro "$AL_PROBE_DIR:/probe" --rw "$witness:/out" "$@" -- "$P" write /out/ran yes
	al_assert_rc 125
	printf '%s\n' "$AL_ERR" | grep -qiE -e "$token" || al_fail "the refusal does not name '$token': $AL_ERR"
	[ ! -e "$witness/ran" ] || al_fail "the payload ran despite the refusal ($*)"
	al_pass "refused under --backend $AL_BACKEND ($token): $(printf '%s' "$AL_ERR" | head -n 1)"
}

# al_tree_sum DIR: a digest of DIR's names, types, modes, owners, sizes, link targets and file
# contents (never following a link), to tell from outside whether anything in it changed.
al_tree_sum() {
	(cd "$1" && find . -printf '%p %y %m %U:%G %s %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort) |
		sha256sum | cut -d' ' -f1
}

# al_workdir_refused: 0 when AL_BACKEND refuses --workdir: a backend other than native without
# the --workdir overlay (`airlock check --json`: workdir_overlay false; bwrap, oci and gvisor could
# only bind the host directory read-write, so the job's set-id files, FIFOs and modes would land
# on the host as it left them). 1 when it takes --workdir (native copies the changes back).
al_workdir_refused() { ! al_backend_is native && ! al_backend_enforces workdir_overlay; }

# al_expect_workdir_refused DIR [AIRLOCK-RUN-OPTS...] [-- CMD...]: under such a backend, `airlock
# run --json OPTS --workdir DIR` is refused before anything runs: exit 125, a setup-error verdict
# naming AL_BACKEND whose error.message is airlock's stderr line, "the B backend cannot take
# --workdir safely" naming the set-id files it keeps off the host; the payload never ran (its first
# act writes a witness), and DIR is exactly as before (judged from outside: al_tree_sum). The
# payload would then run CMD, or by default write /workspace/new, chmod 06755 a file and make a
# FIFO there: what the refusal keeps off the host. (A backend's own test, run as a native one, calls
# it as `AL_BACKEND=B al_expect_workdir_refused ...`: al_run then passes --backend B.)
al_expect_workdir_refused() {
	local dir=$1 before witness opts=() cmd=() msg
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	cmd=("$@")
	[ ${#cmd[@]} -gt 0 ] || cmd=(/bin/sh -c 'echo x >/workspace/new; chmod 06755 /workspace/new; mkfifo /workspace/fifo')
	before=$(al_tree_sum "$dir")
	witness=$(al_tmpdir 0777)
	# shellcheck disable=SC2016 # expanded by the payload's shell
	al_run run --json --ro "$AL_PROBE_DIR:/probe" --rw "$witness:/out" "${opts[@]}" --workdir "$dir" -- \
		/bin/sh -c '"$0" write /out/ran yes; exec "$@"' "$P" "${cmd[@]}"
	al_assert_rc 125
	al_assert_eq "$(al_json_get "$AL_OUT" status)" setup-error "verdict status of --workdir under $AL_BACKEND"
	al_assert_eq "$(al_json_get "$AL_OUT" backend)" "$AL_BACKEND" "verdict backend of the refusal"
	al_assert_eq "$(al_json_get "$AL_OUT" exit_code)" null "verdict exit_code of the refusal"
	msg=$(al_json_get "$AL_OUT" error.message)
	al_assert_contains "$msg" "the $AL_BACKEND backend cannot take --workdir safely" "the refusal's error.message"
	al_assert_contains "$msg" "set-id files" "the refusal's error.message"
	al_assert_eq "$(printf '%s\n' "$AL_ERR" | tail -n 1)" "airlock: $msg" "airlock's stderr line"
	[ ! -e "$witness/ran" ] || al_fail "the payload ran despite the --workdir refusal"
	al_assert_eq "$(al_tree_sum "$dir")" "$before" "the --workdir directory after the refused run"
	al_pass "--workdir refused under --backend $AL_BACKEND: nothing ran, nothing in $dir changed"
}

# The whole test when AL_BACKEND is not available in this mode: the refusal is the result.
al_backend_unavailable_case() {
	local words
	words=$(al_backend_words)
	al_log "backend $AL_BACKEND is not available in mode $AL_TEST_MODE (airlock check --json): asserting the refusal"
	al_expect_refusal "$words"
	al_run run --json -- /bin/true
	al_assert_rc 125
	al_assert_eq "$(al_json_get "$AL_OUT" status)" setup-error "verdict status under an unavailable backend"
	al_assert_eq "$(al_json_get "$AL_OUT" backend)" "$AL_BACKEND" "verdict backend (never replaced by another)"
	al_json_get "$AL_OUT" error.message | grep -qiE -e "$words" ||
		al_fail "the verdict's error.message does not name the backend: $(al_json_get "$AL_OUT" error.message)"
	al_run exec --lang shell -c 'echo ran'
	al_assert_rc 125
	al_assert_not_contains "$AL_OUT" ran "exec under an unavailable backend"
	al_pass "$AL_BACKEND is unavailable here and refused as such ($(basename "$AL_SCRIPT") not run against it)"
	exit 0
}

# ---------------------------------------------------------------- host-side observers

# al_bg CMD...: run CMD in the background, killed at exit; sets AL_BG_PID.
al_bg() {
	"$@" &
	AL_BG_PID=$!
	AL_BG_PIDS+=("$AL_BG_PID")
}

# al_wait_started FILE WHAT: wait (5 s at most) for a helper started in the background to write
# FILE (its ports, or that it is ready); fail saying WHAT did not start otherwise.
al_wait_started() {
	for _ in $(seq 100); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	al_fail "$2 did not start"
}

# al_https_upstream DIR: tests/net/https_upstream.py on $AL_NS_ADDR:443 in the namespace al_netns_host
# made, with al_test_certs' DIR/srv.pem; waits for it, and leaves DIR/up.log empty and writable
# (what each request brought, one record a request, in the format the script names).
al_https_upstream() {
	al_bg ip netns exec "$AL_NS" "$AL_PY" "$AL_SRC/tests/net/https_upstream.py" "$1" "$AL_NS_ADDR"
	al_wait_started "$1/up.ready" "the upstream host"
	: >"$1/up.log"
	chmod 0666 "$1/up.log"
}

# al_listen LOG: a TCP and a UDP listener on 127.0.0.1 (random ports) that append one
# line per event to LOG ("tcp-accept ...", "tcp-data N", "udp N ..."). Sets
# AL_LISTEN_TCP, AL_LISTEN_UDP, AL_LISTEN_PID. Stop with al_listen_stop.
al_listen() {
	local log=$1 ready="$1.ready" i
	: >"$log"
	al_bg "$AL_PY" -c '
import os, select, socket, sys
log = open(sys.argv[1], "a", buffering=1)
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", 0)); t.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d %d\n" % (t.getsockname()[1], u.getsockname()[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
conns = []
while True:
    r, _, _ = select.select([t, u] + conns, [], [])
    for s in r:
        if s is t:
            c, a = t.accept(); conns.append(c); log.write("tcp-accept %s:%d\n" % a)
        elif s is u:
            d, a = u.recvfrom(65536); log.write("udp %d %s:%d\n" % ((len(d),) + a))
        else:
            d = s.recv(65536)
            if d:
                log.write("tcp-data %d\n" % len(d))
            else:
                conns.remove(s); s.close()
' "$log" "$ready"
	AL_LISTEN_PID=$AL_BG_PID
	al_wait_started "$ready" "listener"
	read -r AL_LISTEN_TCP AL_LISTEN_UDP <"$ready"
	al_log "listening on 127.0.0.1 tcp $AL_LISTEN_TCP udp $AL_LISTEN_UDP, log $log"
}

al_listen_stop() {
	kill -KILL "$AL_LISTEN_PID" 2>/dev/null || true
	wait "$AL_LISTEN_PID" 2>/dev/null || true
}

# al_test_certs DIR NAME...: a test CA (DIR/ca.pem, ca.key) and a server certificate for the names
# (DIR/srv.pem, srv.key) that it signed, for TLS test hosts only the test's clients trust.
al_test_certs() {
	local d=$1 san
	shift
	san=$(printf 'DNS:%s,' "$@")
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=airlock-test-ca -keyout "$d/ca.key" \
		-out "$d/ca.pem" 2>/dev/null || al_fail "openssl: no test CA"
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=%s\n' "${san%,}" >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
		-extfile "$d/ext" -out "$d/srv.pem" 2>/dev/null || al_fail "openssl: no server certificate for $*"
}

# al_mcp_dir SCRIPT...: a temporary directory the mode's user may write (audit logs, port files)
# holding tests/mcp/client.py and these scripts of tests/mcp; prints its path.
al_mcp_dir() {
	local d f
	d=$(al_tmpdir)
	chmod 0777 "$d"
	for f in client.py "$@"; do install -m 0644 "$AL_SRC/tests/mcp/$f" "$d/$f"; done
	printf '%s\n' "$d"
}

# al_netns_host NET: (root) a test host in a network namespace of its own, joined to ours by a
# veth pair on the /30 NET (10.213.77.0): we are .1, it is .2 (AL_NS_ADDR); run its servers with
# `ip netns exec "$AL_NS"`. Both go at exit, or earlier with al_netns_host_del.
al_netns_host() {
	AL_NS="al$(al_marker)"
	AL_NS_VETH="${AL_NS:0:11}h"
	AL_NS_ADDR="${1%.0}.2"
	trap 'al_netns_host_del; al_inner_cleanup' EXIT
	ip netns add "$AL_NS"
	ip link add "$AL_NS_VETH" type veth peer name eth0 netns "$AL_NS"
	ip addr add "${1%.0}.1/30" dev "$AL_NS_VETH"
	ip link set "$AL_NS_VETH" up
	ip -n "$AL_NS" addr add "$AL_NS_ADDR/30" dev eth0
	ip -n "$AL_NS" link set eth0 up
	ip -n "$AL_NS" link set lo up
}

al_netns_host_del() {
	ip link del "$AL_NS_VETH" 2>/dev/null || true
	ip netns del "$AL_NS" 2>/dev/null || true
	trap al_inner_cleanup EXIT
}

# al_serve_bin: the airlock-serve binary beside the airlock this mode runs (user mode: a 0755 copy
# beside the airlock copy); fails when it was not built.
al_serve_bin() {
	local b
	b=$(dirname "$AIRLOCK")/airlock-serve
	[ -x "$b" ] || al_fail "airlock-serve is not built beside airlock"
	[ "$AL_AIRLOCK_BIN" = "$AIRLOCK" ] || install -m 0755 "$b" "$(dirname "$AL_AIRLOCK_BIN")/airlock-serve"
}

# al_serve_auth TOKEN_FILE: TCP needs a bearer token: the client token airlock serve generated (or
# read) in TOKEN_FILE is sent by every later curl of this test (a .curlrc under CURL_HOME; `curl -q`
# as the first argument sends none) and is in AL_TOKEN for other clients.
al_serve_auth() {
	local t home
	t=$(head -n1 "$1" 2>/dev/null) || true
	[ -n "$t" ] || al_fail "no client token in $1"
	home=$(dirname "$1")/.curl
	mkdir -p "$home"
	printf 'header = "Authorization: Bearer %s"\n' "${t##* }" >"$home/.curlrc"
	export CURL_HOME=$home AL_TOKEN=${t##* }
}

# al_token_file PATH NAME: a token file for airlock serve (one "NAME TOKEN" line, mode 0600, owned
# by the uid the server runs as); prints the token.
al_token_file() {
	local t
	t=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf '%s %s\n' "$2" "$t" >"$1"
	chmod 0600 "$1"
	chown "$AL_CALLER_UID:$AL_CALLER_GID" "$1"
	printf '%s\n' "$t"
}

# al_orphan_dirs BEFORE NOW: of the directories in NOW (airlock-NAME.<supervisor pid>.XXXXXX, one
# per line) that were not in BEFORE, those whose supervisor is gone and that are still there (other
# airlock runs on the machine may hold theirs right now; one that removed its own and exited between
# the listing and this check left nothing).
al_orphan_dirs() {
	comm -13 <(printf '%s\n' "$1" | sort) <(printf '%s\n' "$2" | sort) | while read -r d; do
		[ -n "$d" ] || continue
		pid=${d#*/airlock-*.}
		pid=${pid%%.*}
		[ -d "/proc/$pid" ] || [ ! -e "$d" ] || printf '%s\n' "$d"
	done
}

# al_marker: a unique word (<= 15 chars, so it also fits a process's comm).
al_marker() { printf 'alm%05d%05d\n' "$(($$ % 100000))" "$RANDOM"; }

# al_marker_pids MARKER: host pids (not ours) whose cmdline or comm contains MARKER,
# one "pid comm" per line. The marker travels in the environment so that the scanner's
# own cmdline does not match.
al_marker_pids() {
	AL_M=$1 AL_SELF=$$ "$AL_PY" -c '
import os
m, me = os.environ["AL_M"].encode(), os.getpid()
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == me:
        continue
    try:
        cmd = open("/proc/%s/cmdline" % p, "rb").read()
        comm = open("/proc/%s/comm" % p, "rb").read().strip()
    except OSError:
        continue
    if m in cmd or m in comm:
        print(p, comm.decode(errors="replace"))
'
}

# al_payload_start MARKER [RUN_OPTS...]: `airlock run RUN_OPTS -- al-probe sleep 3 MARKER` in the
# background (AL_BG: its pid, its output in $AL_TEST_ROOT/bg.out), then waits for the payload to
# show on the host and sets AL_PAYLOAD_PID (the process named al-probe carrying the marker:
# airlock's own cmdline carries it too, so the comm tells them apart). End with al_payload_wait.
al_payload_start() {
	local m=$1 _
	shift
	al_airlock run "$@" --ro "$AL_PROBE_DIR:/probe" -- "$P" sleep 3 "$m" >"$AL_TEST_ROOT/bg.out" 2>&1 &
	AL_BG=$!
	AL_PAYLOAD_PID=""
	for _ in $(seq 60); do
		AL_PAYLOAD_PID=$(al_marker_pids "$m" | awk '$2 == "al-probe" { print $1; exit }')
		[ -n "$AL_PAYLOAD_PID" ] && return 0
		sleep 0.05
	done
	wait "$AL_BG" || true
	al_fail "payload with marker $m never appeared on the host: $(cat "$AL_TEST_ROOT/bg.out")"
}

# al_payload_wait: the background run of al_payload_start ends well.
al_payload_wait() { wait "$AL_BG" || al_fail "background airlock run failed: $(cat "$AL_TEST_ROOT/bg.out")"; }

# al_payload_host_ids PID: the payload seen from the host: the sandbox's unprivileged uid as real,
# effective, saved and filesystem uid, never host root, and no effective capability. Its status is
# read once (the payload may end soon after: a slow VM takes most of its 3 s to find it) and kept
# in AL_PAYLOAD_STATUS for further checks.
al_payload_host_ids() {
	local uids u=$AL_PAYLOAD_HOST_UID
	AL_PAYLOAD_STATUS=$(cat "/proc/$1/status") || al_fail "the payload (pid $1) ended before its status was read"
	uids=$(printf '%s\n' "$AL_PAYLOAD_STATUS" | awk '/^Uid:/ { print $2, $3, $4, $5 }')
	al_assert_eq "$uids" "$u $u $u $u" "host Uid (real effective saved fs) of the payload"
	[ "${uids%% *}" != 0 ] || al_fail "the payload runs as host root"
	al_assert_eq "$(printf '%s\n' "$AL_PAYLOAD_STATUS" | awk '/^CapEff:/ { print $2 }')" 0000000000000000 \
		"host view of the payload's CapEff"
}

# al_identity_inside [RUN_OPTS...]: the payload's identity as it sees it: no capability in any
# set, no_new_privs, uid 1000, hostname airlock, under a seccomp filter (AL_OUT keeps the probe's
# status for further checks).
al_identity_inside() {
	local k
	al_probe "$@" -- status
	al_assert_rc 0
	for k in CapEff CapPrm CapBnd CapAmb CapInh; do
		al_assert_eq "$(al_kv "$k")" 0000000000000000 "$k inside"
	done
	al_assert_eq "$(al_kv NoNewPrivs)" 1 "NoNewPrivs inside"
	al_assert_eq "$(al_kv uid)" 1000 "uid inside"
	al_assert_eq "$(al_kv hostname)" airlock "hostname inside"
	[ "$(al_kv Seccomp)" = 2 ] || al_fail "the payload is not under a seccomp filter (Seccomp: $(al_kv Seccomp))"
}

# al_wait_marker_gone MARKER SECONDS: 0 once no process carries MARKER; 1 (and prints
# the survivors) if some still do after SECONDS.
al_wait_marker_gone() {
	local deadline left
	deadline=$(($(date +%s%N) + ${2%.*} * 1000000000 + 500000000))
	while :; do
		left=$(al_marker_pids "$1")
		[ -z "$left" ] && return 0
		[ "$(date +%s%N)" -lt "$deadline" ] || break
		sleep 0.1
	done
	al_log "still alive with marker $1: $left"
	return 1
}

# al_host_uid PID: real uid of a host process (first field of its Uid: line).
al_host_uid() { awk '/^Uid:/ { print $2 }' "/proc/$1/status"; }

# al_kernel_at_least MAJOR MINOR: whether the running kernel is that version or later.
al_kernel_at_least() {
	local r major minor
	r=$(uname -r)
	major=${r%%.*}
	minor=${r#*.}
	minor=${minor%%[!0-9]*}
	((major > $1 || (major == $1 && minor >= $2)))
}

# al_oci_end STATUS EXIT_CODE SIGNAL: the end airlock-runc's verdict gives a container whose
# init its reaper reaped before delete: the one given where the kernel keeps a reaped process's
# exit status for a pidfd (Linux 6.15), else none ("stopped null null", exit_unknown says why).
al_oci_end() {
	if al_kernel_at_least 6 15; then echo "$*"; else echo "stopped null null"; fi
}

# al_http_host DIR [TLS]: a test HTTP server on the host's loopback answering "hello <path>" to
# every GET, each path served appended to DIR/access.log; with TLS, a second one speaking HTTPS
# with DIR/srv.pem and DIR/srv.key. Sets AL_HTTP_PORT (and AL_TLS_PORT).
al_http_host() {
	rm -f "$1/http.port"
	al_bg "$AL_PY" -c '
import http.server, os, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello " + self.path + "\n").encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        with open(sys.argv[1] + "/access.log", "a") as f: f.write(self.path + "\n")
servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), H) for _ in range(1 + (sys.argv[2] == "TLS"))]
if len(servers) == 2:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1] + "/srv.pem", sys.argv[1] + "/srv.key")
    servers[1].socket = ctx.wrap_socket(servers[1].socket, server_side=True)
for s in servers: threading.Thread(target=s.serve_forever, daemon=True).start()
open(sys.argv[1] + "/http.port.tmp", "w").write(" ".join(str(s.server_address[1]) for s in servers) + "\n")
os.rename(sys.argv[1] + "/http.port.tmp", sys.argv[1] + "/http.port")
threading.Event().wait()
' "$1" "${2:-}"
	al_wait_started "$1/http.port" "the test HTTP host"
	read -r AL_HTTP_PORT AL_TLS_PORT <"$1/http.port"
}

# al_image_import DIR NAME [MKOCI-ARGS...]: DIR/NAME.tar, an OCI archive of busybox-static made by
# tests/image/mkoci.py (its arguments pick the variant), imported as NAME into $AIRLOCK_IMAGES as
# the mode's user; sets AL_IMAGE_DIGEST to the digest the import names.
al_image_import() {
	local d=$1 name=$2
	shift 2
	"$AL_PY" "$AL_SRC/tests/image/mkoci.py" oci-archive "$d/$name.tar" "$@"
	chmod a+r "$d/$name.tar"
	al_run image import "$d/$name.tar" "$name"
	al_assert_rc 0
	# shellcheck disable=SC2034 # read by the tests
	AL_IMAGE_DIGEST=$(printf '%s' "$AL_OUT" | awk -v n="$name" '$1 == n { print $2 }')
}

# al_serve_launch PREFIX WHAT COMMAND...: serve_launch PREFIX COMMAND... (a server the test starts
# its own way) for the harness: its pid in AL_SERVE_PID (and AL_BG_PIDS: it goes at exit), its URL
# in AL_SERVE_URL (al_api's); fails with "WHAT did not start" when it did not.
al_serve_launch() {
	local prefix=$1 what=$2 rc=0
	shift 2
	serve_launch "$prefix" "$@" || rc=$?
	AL_SERVE_PID=$SERVE_PID
	AL_BG_PIDS+=("$AL_SERVE_PID")
	[ "$rc" = 0 ] || al_fail "$what did not start"
	AL_SERVE_URL="http://127.0.0.1:$SERVE_PORT"
}

# al_serve_start DIR ARGS...: airlock serve --http 127.0.0.1:0 ARGS... in the background as the
# mode's user (airlock-serve copied beside the user mode's airlock), stderr in DIR/serve.err;
# waits for its port (al_serve_launch); later curls send the client token it generated
# (al_serve_auth). Sets AL_SERVE_PID, AL_SERVE_URL and AL_SERVE_DIR (DIR).
al_serve_start() {
	AL_SERVE_DIR=$1
	shift
	al_serve_bin
	al_serve_launch "$AL_SERVE_DIR/serve" "airlock serve" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --socket none \
		--token-file "$AL_SERVE_DIR/serve.token" "$@"
	al_serve_auth "$AL_SERVE_DIR/serve.token"
}

# al_serve_stop SIGNAL: sends it to the server al_serve_start started and waits (10 s) until it
# has ended, its sandboxes' processes with it; fails if it has not.
al_serve_stop() {
	kill "-$1" "$AL_SERVE_PID" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$AL_SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$AL_SERVE_PID" 2>/dev/null || al_fail "airlock serve did not end after SIG$1"
}

# al_serve_config FILE [FORMAT [ARG...]]: a test's config for airlock serve in FILE: the head every
# test shares (serve_config_head) and printf FORMAT ARG... after it, readable by every mode's user.
al_serve_config() {
	local f=$1
	shift
	{
		serve_config_head
		# shellcheck disable=SC2059 # the caller's format, as its own printf had it
		[ $# = 0 ] || printf "$@"
	} >"$f"
	chmod 0644 "$f"
}

# al_serve_tokens FILE [LINE...]: the two clients of a test of airlock serve, alice and bob: each
# one's token file beside FILE (alice.token, bob.token: al_token_file) and FILE, the server's token
# file, with alice's line first (so hers is the token later curls send, al_serve_auth), bob's, then
# each LINE ("NAME TOKEN"); mode 0600, owned as al_token_file's. Sets AL_ALICE and AL_BOB to their
# tokens.
al_serve_tokens() {
	local f=$1 d
	shift
	d=$(dirname "$f")
	# shellcheck disable=SC2034 # read by the tests
	AL_ALICE=$(al_token_file "$d/alice.token" alice)
	# shellcheck disable=SC2034 # read by the tests
	AL_BOB=$(al_token_file "$d/bob.token" bob)
	{
		cat "$d/alice.token" "$d/bob.token"
		[ $# = 0 ] || printf '%s\n' "$@"
	} >"$f"
	chmod 0600 "$f"
	chown "$AL_CALLER_UID:$AL_CALLER_GID" "$f"
}

# al_api METHOD PATH [CURL ARGS...]: one request to the server at AL_SERVE_URL (al_serve_start's)
# as the client whose token the .curlrc sends (al_serve_auth), two minutes at the most; sets CODE
# (000 when no answer came) and BODY, the whole answer (an exec's NDJSON lines, its result last).
AL_API_PRE=()
CODE="" BODY=""
al_api() {
	local method=$1 path=$2
	shift 2
	BODY=$(curl "${AL_API_PRE[@]}" -sS -m 120 -o - -w '\n%{http_code}' -X "$method" "$AL_SERVE_URL$path" "$@") || true
	CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}

# al_api_as TOKEN METHOD PATH [CURL ARGS...]: al_api as another client: TOKEN as the bearer token
# instead of the .curlrc's (`-q`, first), or no token at all where TOKEN is empty.
al_api_as() {
	local AL_API_PRE=(-q)
	[ -z "$1" ] || AL_API_PRE+=(-H "Authorization: Bearer $1")
	shift
	al_api "$@"
}

# al_jget EXPR: a Python expression over d, the JSON document in BODY (the last al_api's answer),
# printed as Python prints it (a string raw). BODY goes on stdin: an argument holds 128 KiB at most.
al_jget() { printf '%s' "$BODY" | "$AL_PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# al_api_exec ID JSON: an exec in sandbox ID (its request JSON), which must answer 200; BODY keeps
# its last NDJSON line, the result.
al_api_exec() {
	al_api POST "/v1/sandboxes/$1/exec" -d "$2"
	[ "$CODE" = 200 ] || al_fail "exec in $1: HTTP $CODE: $BODY"
	BODY=$(printf '%s\n' "$BODY" | grep -v '^$' | tail -n1)
}

# al_exec_last ID JSON: prints the last NDJSON line of an exec in sandbox ID (its result, or the
# error), as a streaming client reads it; unlike al_api it sets nothing, so it can run in the
# background.
al_exec_last() { curl -sS -XPOST "$AL_SERVE_URL/v1/sandboxes/$1/exec" -d "$2" | tail -n1; }

# al_mcp_sdk SCRIPT WHAT: tests/mcp/sdk/SCRIPT, a client of the official MCP SDK, against the
# server al_serve_start started (its /mcp, alice's token); its stdout in AL_SDK_OUT and the log. It
# fails, showing its output and stderr and the server's, as "WHAT through the MCP SDK".
al_mcp_sdk() {
	local sdk="$AL_SRC/tests/mcp/sdk"
	command -v node >/dev/null || al_fail "node is missing (scripts/deps.sh installs it)"
	[ -d "$sdk/node_modules/@modelcontextprotocol/sdk" ] || al_fail "the MCP SDK is not installed in $sdk (scripts/deps.sh runs npm ci)"
	AL_SDK_OUT=$(node "$sdk/$1" "$AL_SERVE_URL/mcp" "$AL_TOKEN" 2>"$AL_SERVE_DIR/sdk.err") || {
		printf '%s\n' "$AL_SDK_OUT"
		cat "$AL_SERVE_DIR/sdk.err" "$AL_SERVE_DIR/serve.err" >&2
		al_fail "$2 through the MCP SDK (see above)"
	}
	al_log "$AL_SDK_OUT"
}

# al_api_result WHAT: RES, the result object of the exec answer in BODY (its last result line) as
# JSON; fails, naming WHAT (e.g. "exec in $sb"), when it has none.
al_api_result() {
	# shellcheck disable=SC2034 # read by the tests
	RES=$(printf '%s\n' "$BODY" | grep '^{"result"' | tail -n 1 | "$AL_PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["result"]))') ||
		al_fail "no result line for $1 ($CODE): $(printf '%s' "$BODY" | head -c 600)"
}

# al_api_sh ID COMMAND: COMMAND as a fresh shell exec in sandbox ID, which must answer 200 with a
# result; its stdout in OUT (BODY keeps the whole answer).
al_api_sh() {
	local body
	body=$("$AL_PY" -c 'import json,sys; print(json.dumps({"language": "shell", "code": sys.argv[1], "fresh": True}))' "$2")
	al_api POST "/v1/sandboxes/$1/exec" -d "$body"
	[ "$CODE" = 200 ] || al_fail "exec in $1: HTTP $CODE: $BODY"
	# shellcheck disable=SC2034 # read by the tests
	OUT=$(printf "%s\n" "$BODY" | grep '"result"' | tail -n1 | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["result"]["stdout"], end="")') ||
		al_fail "exec in $1: no result: $BODY"
}

# ---------------------------------------------------------------- entry

# shellcheck disable=SC2031
if [ -z "${AL_GUARDED:-}" ]; then
	al_outer
fi
al_inner
