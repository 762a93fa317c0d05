#!/usr/bin/env bash
# startup.sh — the issue-2 benchmark: start latency of airlock against bare exec, unshare and a hardened bwrap, plus their memory.
#
# Not a test: it prints figures for bench/README.md and fails only when a tool is
# missing or a command does not run. Usage: bench/startup.sh  (as root or as a user;
# AIRLOCK=path/to/airlock, WARMUP=N, MIN_RUNS=N, BENCH_RESULTS=dir to keep the JSON).
set -euo pipefail

die() {
	echo "startup.sh: $*" >&2
	exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
airlock=${AIRLOCK:-$repo/build/airlock}
warmup=${WARMUP:-10}
min_runs=${MIN_RUNS:-50}

# --- tools ------------------------------------------------------------------------
for tool in hyperfine unshare bwrap jq; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "'$tool' is not installed (Debian: apt-get install hyperfine util-linux bubblewrap jq)"
done
if [[ ! -x $airlock ]]; then
	die "airlock is not built: no executable at '$airlock' (build with 'cmake -S . -B build && cmake --build build', or set AIRLOCK=/path/to/airlock)"
fi
airlock=$(realpath "$airlock")

# -N runs each command without a shell, so the shell's own ~1 ms start is not part of
# every figure; hyperfine before 1.13 lacks it and we then subtract nothing: say so.
no_shell=()
if hyperfine --help 2>/dev/null | grep -qE '^\s+-N\b'; then
	no_shell=(-N)
else
	echo "note: this hyperfine has no -N; every figure includes a shell start" >&2
fi

# --- the hardened bwrap command line -----------------------------------------------
# The same view airlock builds: /usr read-only, the top-level dirs as on the host
# (merged-usr symlinks where the host has them, read-only binds where it has dirs).
bwrap_args=(--unshare-all --die-with-parent --new-session --ro-bind /usr /usr)
for d in bin lib lib32 lib64 libx32 sbin; do
	if [[ -L /$d ]]; then
		bwrap_args+=(--symlink "$(readlink "/$d")" "/$d")
	elif [[ -d /$d ]]; then
		bwrap_args+=(--ro-bind "/$d" "/$d")
	fi
done
bwrap_args+=(--proc /proc --dev /dev --tmpfs /tmp)

bare_cmd=(/bin/true)
unshare_cmd=(unshare -Urnpimu --fork true)
bwrap_cmd=(bwrap "${bwrap_args[@]}" -- /bin/true)
airlock_cmd=("$airlock" run -- /bin/true)

# hyperfine takes each command as one string (split on spaces with -N); none of our
# words contains a space, so joining them is exact.
join() {
	local IFS=' '
	echo "$*"
}

# Fail before timing if a sandbox cannot start here (hyperfine's own error is terse).
check_runs() {
	local name=$1
	shift
	local out
	if ! out=$("$@" 2>&1); then
		die "'$name' does not run on this host: $(join "$@"): ${out:-exit status non-zero}"
	fi
}
check_runs bare "${bare_cmd[@]}"
check_runs unshare "${unshare_cmd[@]}"
check_runs bwrap "${bwrap_cmd[@]}"
check_runs airlock "${airlock_cmd[@]}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

echo "## Start latency ($(uname -r), $(nproc) CPUs, $(id -un))"
echo
hyperfine "${no_shell[@]}" --warmup "$warmup" --min-runs "$min_runs" --style basic \
	--export-json "$tmp/startup.json" \
	-n bare "$(join "${bare_cmd[@]}")" \
	-n unshare "$(join "${unshare_cmd[@]}")" \
	-n bwrap "$(join "${bwrap_cmd[@]}")" \
	-n airlock "$(join "${airlock_cmd[@]}")" >&2

median_ms() {
	jq -r --arg n "$1" '.results[] | select(.command == $n) | .median * 1000' "$tmp/startup.json"
}
echo "| command | median (ms) | mean ± σ (ms) | min (ms) |"
echo "|---|---:|---:|---:|"
jq -r '.results[] | [.command, .median, .mean, .stddev, .min] | @tsv' "$tmp/startup.json" |
	awk -F'\t' '{ printf "| %s | %.2f | %.2f ± %.2f | %.2f |\n", $1, $2 * 1000, $3 * 1000, $4 * 1000, $5 * 1000 }'
echo
m_bare=$(median_ms bare)
m_bwrap=$(median_ms bwrap)
m_airlock=$(median_ms airlock)
awk -v a="$m_airlock" -v w="$m_bwrap" -v b="$m_bare" \
	'BEGIN { printf "airlock/bwrap = %.2fx   airlock/bare = %.1fx\n", a / w, a / b }'

if [[ -n ${BENCH_RESULTS:-} ]]; then
	mkdir -p "$BENCH_RESULTS"
	cp "$tmp/startup.json" "$BENCH_RESULTS/startup-$(date +%Y%m%d-%H%M%S).json"
fi

# --- memory ----------------------------------------------------------------------
# PSS (proportional set size) charges shared pages fractionally, so summing it over
# processes does not count libc twice. We measure the sandbox's own processes — the
# supervisor and the namespace's init for airlock, the bwrap processes for bwrap —
# and leave out the payload, which is the same `sleep` in both.

# Every pid in the process tree rooted at $1 (the root first).
tree() {
	local p=$1 c
	echo "$p"
	# shellcheck disable=SC2013 # the children file is one line of space-separated pids
	for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
		tree "$c"
	done
}

# True once the `sleep` payload runs somewhere in the tree rooted at $1.
has_payload() {
	local p
	for p in $(tree "$1"); do
		[[ $(cat /proc/"$p"/comm 2>/dev/null) == sleep ]] && return 0
	done
	return 1
}

# Pss of one process in KiB, or "?" when it cannot be read: a process that made itself
# non-dumpable (airlock's init does, so the payload cannot inspect it) hides its
# smaps from everyone but root.
pss_kib() {
	local v
	v=$(awk '/^Pss:/ { print $2 }' /proc/"$1"/smaps_rollup 2>/dev/null) || true
	echo "${v:-?}"
}

# Starts "$@" (payload `sleep 2`), waits until the payload runs, then prints each
# non-payload process and the PSS total. The label is $1.
measure() {
	local label=$1
	shift
	"$@" >/dev/null 2>&1 &
	local root=$! pids=() p comm i total=0 kib
	# The payload appears once setup is done; give setup up to 1.5 s.
	for ((i = 0; i < 30; i++)); do
		has_payload "$root" && break
		sleep 0.05
	done
	sleep 0.2 # let the sandbox settle (init done, payload exec'd)
	while read -r p; do
		comm=$(cat /proc/"$p"/comm 2>/dev/null) || continue
		[[ $comm == sleep ]] && continue
		pids+=("$p")
	done < <(tree "$root")
	local unreadable=0
	for p in "${pids[@]}"; do
		kib=$(pss_kib "$p")
		if [[ $kib == "?" ]]; then
			unreadable=$((unreadable + 1))
		else
			total=$((total + kib))
		fi
		printf '  %-8s pid %-7s %-10s Pss %6s KiB\n' "$label" "$p" "$(cat /proc/"$p"/comm 2>/dev/null)" "$kib"
	done
	printf '  %-8s total Pss %s KiB in %d processes\n' "$label" "$total" "${#pids[@]}"
	wait "$root" || true
	if ((unreadable > 0)); then
		# Say so rather than print a total that silently leaves processes out.
		echo "  note: $unreadable $label process(es) unreadable as $(id -un); run as root for a full figure" >&2
		echo "$total (+$unreadable unreadable)" >"$tmp/pss-$label"
	else
		echo "$total" >"$tmp/pss-$label"
	fi
}

echo
echo "## Memory while the payload is \`sleep 2\` (PSS of the sandbox's own processes)"
echo
measure airlock "$airlock" run -- /bin/sleep 2
measure bwrap bwrap "${bwrap_args[@]}" -- /bin/sleep 2
echo
echo "| sandbox | PSS (KiB) |"
echo "|---|---:|"
echo "| airlock | $(cat "$tmp/pss-airlock") |"
echo "| bwrap | $(cat "$tmp/pss-bwrap") |"
