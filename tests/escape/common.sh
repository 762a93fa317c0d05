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
# Environment: AL_ESC_BIN (the built programs), AL_BACKEND (native, bwrap, oci or gvisor; default
# native). lib.sh passes `--backend NAME` to every al_run/al_airlock (ESC_BACKEND_ARGS is for the
# few places that start "$AL_AIRLOCK_BIN" themselves), the verdict's "backend" must name it, and a
# backend `airlock check` calls unavailable in this mode (gvisor as an ordinary user) never runs a
# case: lib.sh asserts its refusal (exit 125) instead.
#
# Backends differ in two ways the judges must know (README.md, "Backends"):
#   - pid 1: native's init is airlock-init, another uid, not dumpable; bwrap's pid 1 is bwrap's own
#     init, the payload's uid under the same seccomp filter and no_new_privs (esc_init_domain);
#     under oci and gvisor the payload itself is the container's pid 1.
#   - gvisor: the payload's system calls go to gVisor's Sentry, a kernel in user space, not to the
#     host's. With --oci-seccomp the Sentry enforces airlock's profile (enforced.seccomp names it)
#     and the calls are judged as everywhere; without, a call the Sentry answers (a nested user
#     namespace, io_uring, syslog) acts on the Sentry's state only, so there the judge is what the
#     call could reach (esc_unfiltered_answers), never the call alone. Objects of the Sentry's own
#     (its /dev, sysfs) are esc_sentry_answers.

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
	al_split_args "$@"
	al_run run --ro "$ESC_DIR:$ESC" --json "${AL_OPTS[@]}" -- "${AL_ARGV[@]}"
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

# esc_wait_comm PID NAME: until the background helper PID runs NAME (its comm), 5 s at most: al_bg's
# subshell and setpriv exec it in turn, and before that it is neither the program nor of the uid the
# test gave it.
esc_wait_comm() {
	for _ in $(seq 100); do
		[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	al_fail "the host helper $1 never became $2 (comm: $(cat "/proc/$1/comm" 2>/dev/null || echo gone))"
}

# esc_cgroup_limits: 0 when airlock can enforce cgroup limits (memory and pids) in this mode
# (the verdict of a trivial run says so); else 1, and callers check that explicit limits are
# refused instead (fail closed), never run the bomb unguarded by airlock. Under gvisor the pids
# limit bounds gVisor's host tasks, not the payload's processes, and the verdict says so
# (cgroup.pids false, cgroup.pids_host_tasks true): asserted here, and counted as a limit.
esc_cgroup_limits() {
	al_run run --json -- /bin/true
	[ "$AL_RC" = 0 ] || al_fail "airlock cannot run /bin/true"
	[ "$(al_json_type "$AL_OUT" enforced.cgroup)" = object ] || return 1
	if esc_gvisor && [ "$(al_json_get "$AL_OUT" enforced.cgroup.pids_host_tasks)" = true ]; then
		al_assert_eq "$(al_json_get "$AL_OUT" enforced.cgroup.pids)" false \
			"gvisor: enforced.cgroup.pids (never claimed for the payload's processes)"
	elif [ "$(al_json_get "$AL_OUT" enforced.cgroup.pids)" != true ]; then
		return 1
	fi
	[ "$(al_json_get "$AL_OUT" enforced.cgroup.memory)" = true ]
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
# whatever it echoed) goes to FILE. A pty hands its output to the reading side through the
# kernel's flip buffer, asynchronously: when the session ends, script may stop reading
# before the last of it arrives (seen under load: a final line missing). So an end mark is
# printed on a line of its own after CMD, and FILE counts only if the mark arrived (everything before it did
# too); if it did not, CMD runs again (at most three times), then the test fails.
esc_in_pty() {
	local out=$1 end try
	shift
	command -v script >/dev/null || al_skip "script (util-linux) is needed for a pty"
	end="pty-end-$(al_marker)"
	AL_RUN_N=$((AL_RUN_N + 1))
	for try in 1 2 3; do
		# shellcheck disable=SC2034 # read by lib.sh's al_dump_last
		AL_CMD="script -qec '$*'" AL_OUT_FILE=$out AL_ERR_FILE=/dev/null AL_RC=0
		timeout -k 5 60 script -qec "$*; echo; echo $end; sleep 0.1" /dev/null </dev/null >"$out" 2>&1 || AL_RC=$?
		al_log "[$AL_RUN_N] in a pty: $* -> rc $AL_RC"
		if grep -q "$end" "$out"; then
			sed -i "/$end/d" "$out"
			return 0
		fi
		al_log "[$AL_RUN_N] the terminal's output ended before the end mark (try $try): running it again"
	done
	al_fail "the terminal's output never reached the end mark after three runs: $(tr -d '\r' <"$out" | tail -n 5)"
}

# esc_tree_sum DIR: a digest of a host dir's names, types, modes, sizes and contents (no
# link following), to tell from outside whether anything in it changed.
esc_tree_sum() {
	(cd "$1" && find . -printf '%p %y %m %s %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort) |
		sha256sum | cut -d' ' -f1
}

# ---------------------------------------------------------------- backends

# esc_gvisor: 0 under --backend gvisor (system calls answered by gVisor's Sentry).
esc_gvisor() { [ "$AL_BACKEND" = gvisor ]; }

# esc_unfiltered: 0 under gvisor when the last verdict says no seccomp profile was enforced
# (runsc without --oci-seccomp): then the Sentry answers every call itself.
esc_unfiltered() { esc_gvisor && [ "$(esc_v enforced.seccomp)" = false ]; }

# esc_unfiltered_answers NAME...: system calls airlock's seccomp profile refuses. Where a profile is
# enforced (every backend; gvisor with --oci-seccomp, the Sentry enforcing it) they are judged as
# esc_denied. Under gvisor without one, each may succeed because the Sentry implements it for
# itself (its own user namespaces, io_uring, syslog buffer): the host kernel never sees the call,
# and the caller judges what it could reach.
esc_unfiltered_answers() {
	if esc_unfiltered; then
		esc_sentry_answers "$@"
	else
		esc_denied "$@"
	fi
}

# esc_sentry_answers NAME...: under gvisor, each attempt NAME was reported, and may have
# succeeded on an object of the Sentry's own (its emulated /dev/fuse and /dev/net/tun, its sysfs,
# a node in its tmpfs): nothing of the host's is behind it; the caller judges what it could reach.
# Under every other backend: esc_denied.
esc_sentry_answers() {
	local n v said=""
	if ! esc_gvisor; then
		esc_denied "$@"
		return 0
	fi
	for n in "$@"; do
		v=$(esc_kv "$n")
		[ -n "$v" ] || { esc_dump; al_fail "the program reported nothing for '$n'"; }
		said="$said $n=$v"
	done
	al_pass "gvisor: answered by the Sentry (host kernel never called):$said"
}

# esc_init_domain: judge what pid 1 is from the program's self-pid= and init-*= lines
# (esc_report_init in esc.h) and assert it is what the backend promises; prints one word:
#   airlock-init  (native) not the payload, another uid (as root) and not dumpable: every
#                 attempt on it stays judged;
#   same-domain   (bwrap) bwrap's pid 1: the payload's uid, no capability, the same seccomp
#                 filter and no_new_privs, so writing its memory or its oom_score_adj gains
#                 nothing the payload does not hold already (and with airlock-init's Landlock
#                 ruleset the payload cannot reach it at all: ptrace.sh);
#   self          (oci, gvisor) the payload is pid 1: "attacks on init" are on itself.
#                 (oci with airlock-init as the container's pid 1: airlock-init, judged strictly.)
esc_init_domain() {
	local self uid cap sc nnp
	self=$(esc_kv self-pid) uid=$(esc_kv init-uid) cap=$(esc_kv init-CapEff) sc=$(esc_kv init-Seccomp)
	nnp=$(esc_kv init-NoNewPrivs)
	[ -n "$self" ] || { esc_dump; al_fail "the program did not report its own pid"; }
	case "$AL_BACKEND" in
	native)
		[ "$self" != 1 ] || esc_escaped "native: the payload is pid 1 (no airlock-init)"
		# (As root it is another id; as a user the map has one id, so the payload's: then its
		# being not dumpable is what the caller's judged attempts on /proc/1 test.)
		[ -n "$uid" ] || al_fail "native: pid 1's status was not readable"
		echo airlock-init
		;;
	bwrap)
		[ "$self" != 1 ] || al_fail "bwrap: the payload is pid 1, expected bwrap's own init"
		[ "$uid" = 1000 ] || esc_escaped "bwrap: pid 1 runs as uid '$uid', not the payload's 1000"
		[ "$cap" = 0000000000000000 ] || esc_escaped "bwrap: pid 1 holds capabilities $cap"
		[ "$sc" = 2 ] || esc_escaped "bwrap: pid 1 is not under a seccomp filter (Seccomp: $sc): taking it over would shed the filter"
		[ "$nnp" = 1 ] || esc_escaped "bwrap: pid 1 lacks no_new_privs ($nnp)"
		echo same-domain
		;;
	oci | gvisor)
		# The payload is the container's pid 1, or runs under airlock-init (backend/ainit.c), which
		# is then judged as native's is.
		if [ "$self" = 1 ]; then
			echo self
		else
			echo airlock-init
		fi
		;;
	*) al_fail "unknown backend $AL_BACKEND" ;;
	esac
}

# esc_tree_walk tasks|pids PID: walk PID's descendants (not PID) in the host's /proc. "tasks": how
# many tasks (threads) the host counts in them, what a pids cgroup counts, seen from outside,
# whatever the backend makes of its processes. "pids": "pid:starttime" of each (to tell later
# whether one lives).
esc_tree_walk() {
	AL_MODE=$1 AL_P=$2 "$AL_PY" -c '
import os
mode, root = os.environ["AL_MODE"], int(os.environ["AL_P"])
kids, threads, start = {}, {}, {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        st = open("/proc/%s/stat" % p).read()
        f = st[st.rindex(")") + 2:].split()
        kids.setdefault(int(f[1]), []).append(int(p))
        threads[int(p)] = int(f[17])
        start[int(p)] = f[19]
    except (OSError, ValueError, IndexError):
        continue
n, todo = 0, list(kids.get(root, []))
while todo:
    p = todo.pop()
    n += threads.get(p, 1)
    if mode == "pids":
        print("%d:%s" % (p, start[p]))
    todo.extend(kids.get(p, []))
if mode == "tasks":
    print(n)
'
}
esc_tree_tasks() { esc_tree_walk tasks "$1"; }
esc_tree_pids() { esc_tree_walk pids "$1"; }

# esc_alive PID:START...: those of the given processes still alive (same pid, same start time, not a
# zombie: a zombie runs nothing and holds nothing but its pid until its new parent — often the host's
# init, after a pid namespace is torn down — reaps it; pgrep -f does not see zombies either).
esc_alive() {
	local e pid st
	for e in "$@"; do
		pid=${e%%:*} st=${e#*:}
		[ -r "/proc/$pid/stat" ] || continue
		[ "$(awk '{ sub(/.*\) /, ""); print $1 == "Z" ? "zombie" : $20 }' "/proc/$pid/stat" 2>/dev/null)" = "$st" ] &&
			echo "$e($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80); $(awk '/^(Name|State|PPid):/ { printf "%s ", $2 }' "/proc/$pid/status" 2>/dev/null))"
	done
	return 0
}

# esc_workdir_cap_refused OPTS...: for a backend without the --workdir overlay (`airlock check`:
# workdir_overlay false; bwrap, oci and gvisor could only bind the directory read-write), `airlock
# run --workdir DIR --disk N` must be refused by the --disk refusal, which comes first (exit 125, a
# setup-error naming --disk), and `--workdir DIR` alone by the --workdir one (al_expect_workdir_refused:
# the set-id files, FIFOs and modes it keeps off the host); nothing is written in DIR and the hostile
# program never runs. Returns 1 when the backend has the overlay (the caller then runs the attack).
esc_workdir_cap_refused() {
	local wd before
	if ! al_workdir_refused; then
		return 1
	fi
	wd=$(al_tmpdir 0777)
	before=$(esc_tree_sum "$wd")
	esc_run "$@" --workdir "$wd" --disk 8M -- "$ESC/esc-fill" /workspace/fill 1
	al_assert_eq "$ESC_STATUS" refused "--workdir with --disk under $AL_BACKEND (no overlay)"
	al_assert_contains "$AL_ERR" "the $AL_BACKEND backend cannot cap --workdir with --disk" "the refusal"
	al_assert_eq "$(al_json_get "$AL_OUT" status)" setup-error "verdict status of the refusal"
	al_assert_eq "$(esc_tree_sum "$wd")" "$before" "the workdir after the refused job"
	al_expect_workdir_refused "$wd" --ro "$ESC_DIR:$ESC" "$@" -- "$ESC/esc-fill" /workspace/fill 1
	al_pass "$AL_BACKEND has no --workdir overlay: --workdir is refused, with --disk or without, so no job writes the host dir"
	return 0
}
