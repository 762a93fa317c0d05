# lib.sh — shared by the bench/ scripts: tool checks, the hardened bwrap line, hyperfine JSON reading, an airlock serve started and stopped.
# Sourced, not run. Callers set `set -euo pipefail` and define nothing this file defines.
# shellcheck shell=bash

bench_name=$(basename "$0")

die() {
	echo "$bench_name: $*" >&2
	exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
# serve_launch and serve_config_head: the tests start their servers the same way.
# shellcheck source=tests/serve_lib.sh
. "$repo/tests/serve_lib.sh"

# need TOOL... — each must be on PATH.
need() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			die "'$tool' is not installed (Debian: apt-get install hyperfine bubblewrap gcc libc6-dev jq)"
	done
}

# bench_tls_dir: a directory of the benchmark's own ($dir, 0755, removed at exit with the server
# whose pid the caller puts in $srv) holding cert.pem and key.pem for bench.test (self-signed) and
# a hosts file naming bench.test 127.0.0.1: an HTTPS upstream on the host's loopback, for the
# egress benchmarks.
bench_tls_dir() {
	dir=$(mktemp -d)
	srv=
	trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$dir"' EXIT
	chmod 0755 "$dir"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
		-keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
	printf '127.0.0.1 bench.test\n' >"$dir/hosts"
	chmod 0644 "$dir"/*
}

# Sets $json_tool to jq, or python3 when jq is missing.
need_json() {
	if command -v jq >/dev/null 2>&1; then
		json_tool=jq
	elif command -v python3 >/dev/null 2>&1; then
		json_tool=python3
	else
		die "neither 'jq' nor 'python3' is installed (Debian: apt-get install jq)"
	fi
}

# Sets $airlock to the binary under test: $AIRLOCK, or build/airlock of this checkout.
find_airlock() {
	airlock=${AIRLOCK:-$repo/build/airlock}
	[[ -x $airlock ]] ||
		die "airlock is not built: no executable at '$airlock' (build with 'bash scripts/build.sh', or set AIRLOCK=/path/to/airlock)"
	airlock=$(realpath "$airlock")
	[[ $airlock != *[[:space:]]* ]] || die "the airlock path '$airlock' contains white space (hyperfine -N splits on it)"
}

# hyperfine 1.13+ has -N (no shell between it and the command); we need it, because
# a shell's ~1 ms start would be added to every figure and we subtract nothing.
need_hyperfine_n() {
	hyperfine --help 2>/dev/null | grep -qE '^\s+-N\b' || die "this hyperfine has no -N (need hyperfine 1.13 or later)"
}

# The hardened bwrap command line, the same as bench/startup.sh builds: /usr read-only,
# the top-level dirs as on the host (merged-usr symlinks where the host has them,
# read-only binds where it has dirs), fresh /proc, /dev and /tmp, every namespace.
bwrap_args=(--unshare-all --die-with-parent --new-session --ro-bind /usr /usr)
for _top in bin lib lib32 lib64 libx32 sbin; do
	if [[ -L /$_top ]]; then
		bwrap_args+=(--symlink "$(readlink "/$_top")" "/$_top")
	elif [[ -d /$_top ]]; then
		bwrap_args+=(--ro-bind "/$_top" "/$_top")
	fi
done
bwrap_args+=(--proc /proc --dev /dev --tmpfs /tmp)
unset _top

# What airlock's minimal /etc takes from the host (src/kit/fsplan.c, plan_etc: the read-only binds and
# links of /etc), for a bwrap line with the same /etc: the hardened line has none, and a runtime
# reads some of it at start (node's OpenSSL reads /etc/ssl/openssl.cnf: ~2 ms; python3 runs Debian's
# sitecustomize.py from /etc/python3.N).
# shellcheck disable=SC2034 # used by the scripts that source this file
bwrap_etc_args=()
for _e in /etc/{alternatives,ld.so.cache,mime.types,protocols,services,ssl/certs,ssl/openssl.cnf,python3} /etc/python3.*; do
	[[ -e $_e && ! -L $_e ]] && bwrap_etc_args+=(--ro-bind "$_e" "$_e")
done
for _e in localtime os-release; do
	[[ -L /etc/$_e ]] && bwrap_etc_args+=(--symlink "$(readlink "/etc/$_e")" "/etc/$_e")
done
unset _e

# airlock's layers switched off, as far as the command line allows. `none` parses as
# "no limit" (src/config/units.c), and without a memory or pids limit the pids cgroup is
# not joined; the memory and cpuacct cgroups still are, because every job's peak memory
# and CPU time are accounted (src/cgroup/cgroup.c, cg_wanted). There is no switch for that.
# shellcheck disable=SC2034 # used by the scripts that source this file
airlock_ns_only=(--seccomp off --landlock off --memory none --pids none)

# hyperfine takes each command as one string and with -N splits it on spaces; callers
# make sure no word contains one, so joining is exact.
join() {
	local IFS=' '
	echo "$*"
}

# check_runs NAME CMD... — fail before timing if a command does not run here.
check_runs() {
	local name=$1 out
	shift
	if ! out=$("$@" 2>&1); then
		die "'$name' does not run on this host: $(join "$@"): ${out:-exit status non-zero}"
	fi
}

# json_query FILE EXPR — a few fixed queries, with jq or python3 (see need_json).
#   median NAME   the median wall time (s) of hyperfine command NAME
#   min NAME      the shortest wall time (s) of hyperfine command NAME
#   table         TSV: name, median, mean, stddev, min (s) per hyperfine command
#   layers        one line from an airlock verdict: the enforced seccomp, Landlock, cgroup
json_query() {
	local file=$1 what=$2 arg=${3:-}
	if [[ $json_tool == jq ]]; then
		case $what in
		median | min) jq -er --arg n "$arg" --arg f "$what" '.results[] | select(.command == $n) | .[$f]' "$file" ;;
		table) jq -r '.results[] | [.command, .median, .mean, .stddev, .min] | @tsv' "$file" ;;
		layers) jq -r '.enforced | "seccomp=\(.seccomp) landlock=\(if .landlock then "abi\(.landlock.abi)" else false end) cgroup=\(.cgroup.version // "none") memory-limit=\(.cgroup.memory // false) pids-limit=\(.cgroup.pids // false)"' "$file" ;;
		esac
	else
		python3 - "$file" "$what" "$arg" <<'EOF'
import json, sys
path, what, arg = sys.argv[1:4]
d = json.load(open(path))
if what in ("median", "min"):
    m = [r[what] for r in d["results"] if r["command"] == arg]
    if not m:
        sys.exit(1)
    print(m[0])
elif what == "table":
    for r in d["results"]:
        print("\t".join(str(x) for x in (r["command"], r["median"], r["mean"], r["stddev"], r["min"])))
elif what == "layers":
    e = d["enforced"]
    ll = e["landlock"]
    cg = e.get("cgroup") or {}
    print("seccomp=%s landlock=%s cgroup=%s memory-limit=%s pids-limit=%s" % (
        str(e["seccomp"]).lower(), ("abi%d" % ll["abi"]) if ll else "false",
        cg.get("version", "none"), str(cg.get("memory", False)).lower(), str(cg.get("pids", False)).lower()))
EOF
	fi
}

# ratio A B [DIGITS] — A/B, printed with DIGITS decimals (default 2).
ratio() {
	awk -v a="$1" -v b="$2" -v p="${3:-2}" 'BEGIN { if (b == 0) print "n/a"; else printf "%.*f\n", p, a / b }'
}

# The load when a figure was taken: other work on a 2-CPU VM moves every number.
load_note() {
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M UTC')"
}

# --- added for bench/backends.sh --------------------------------------------------

# proc_tree PID — every pid in the process tree rooted at PID (the root first),
# children of every thread included (runsc's children hang off its threads).
proc_tree() {
	local p=$1 c
	echo "$p"
	# shellcheck disable=SC2013 # each children file is one line of space-separated pids
	for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
		proc_tree "$c"
	done
}

# pss_kib PID — Pss of one process in KiB from smaps_rollup, or "?" when it cannot be
# read (a non-dumpable process hides its smaps from everyone but root).
pss_kib() {
	local v
	v=$(awk '/^Pss:/ { print $2 }' /proc/"$1"/smaps_rollup 2>/dev/null) || true
	echo "${v:-?}"
}

# median_of FILE — the median of the numbers in FILE, one per line (empty if none).
median_of() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# debian_source PKG DIR — the source package PKG downloaded into DIR from the Debian archive this host
# uses (apt-get source with a deb-src list of its own in DIR: the host's apt configuration is not
# touched); prints the path of its upstream tarball.
debian_source() {
	need apt-get
	local pkg=$1 dir=$2 suite orig
	local apt=(-o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache::archives="$dir")
	mkdir -p "$dir/lists/partial"
	suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
	echo "deb-src http://deb.debian.org/debian $suite main" >"$dir/sources.list"
	apt-get "${apt[@]}" -qq update >/dev/null || die "apt-get update of a deb-src list failed (no Debian archive?)"
	(cd "$dir" && apt-get "${apt[@]}" -qq source --download-only "$pkg" >/dev/null 2>&1) ||
		die "apt-get source $pkg failed"
	orig=$(find "$dir" -maxdepth 1 -name "${pkg}_*.orig.tar.*" | sed -n 1p)
	[[ -n $orig ]] || die "the $pkg source package has no upstream tarball"
	echo "$orig"
}

# bare_user — sets bare_as and bare_env: a bare run as the sandbox's payload runs, as an ordinary
# user (root passes tests, and skips others, that a uid 1000 payload would not) in the scrubbed
# environment the sandbox gives, with HOME=$1 (default /tmp).
bare_user() {
	bare_as=()
	[[ $(id -u) != 0 ]] || bare_as=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	bare_env=(USER=sandbox LOGNAME=sandbox HOME="${1:-/tmp}" TMPDIR=/tmp LANG=C.UTF-8
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
}

# suite_dirs NAME — for a suite comparison (pysuite.sh's kin): out (BENCH_RESULTS or a fresh
# /tmp/NAME.XXXXXX for each run's output), opts (AIRLOCK_OPTS as words) and work (a 0755 scratch
# directory the payload can reach, removed at exit).
suite_dirs() {
	out=${BENCH_RESULTS:-$(mktemp -d "/tmp/$1.XXXXXX")}
	mkdir -p "$out"
	read -r -a opts <<<"${AIRLOCK_OPTS:-}"
	work=$(mktemp -d "/tmp/$1-tree.XXXXXX")
	# shellcheck disable=SC2064 # work is fixed now
	trap "rm -rf '$work'" EXIT
	chmod 0755 "$work"
}

# bench_serve_start PREFIX ARGS...: `$airlock serve ARGS...` on a free loopback port (serve_launch:
# PREFIX.port, PREFIX.err); sets spid and port, or dies when the server does not start.
bench_serve_start() {
	local rc=0
	# Each server keeps its sandboxes (the default, and its cost is measured) in a state directory of
	# its own: a later server of the same benchmark must not start with an earlier one's.
	rm -rf "$1.state"
	AIRLOCK_STATE_DIR="$1.state" serve_launch "$1" "$airlock" serve "${@:2}" || rc=$?
	spid=$SERVE_PID
	[ "$rc" = 0 ] || die "airlock serve did not start"
	# shellcheck disable=SC2034 # used by the scripts that source this file
	port=$SERVE_PORT
}

# bench_serve_stop: SIGTERM the server; it must exit 0.
bench_serve_stop() {
	kill -TERM "$spid"
	wait "$spid" || die "airlock serve exited with $?"
	spid=
}

# bench_serve_cleanup: for an EXIT trap: stop a server still running, whatever its status.
bench_serve_cleanup() {
	if [ -n "${spid:-}" ]; then
		kill -TERM "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
	fi
}
