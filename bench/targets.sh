#!/usr/bin/env bash
# targets.sh — issue 14 part 4's targets in one run: cold start of /bin/true (back to back, and
# after a 50 ms pause as a lone start sees it), throughput with 2 workers, python3 and node
# start-up; airlock against hardened bwrap and bare, and optionally an older airlock side by side.
# Usage: bench/targets.sh   knobs: AIRLOCK, AIRLOCK_BASE (a second binary, e.g. main's), RUNS (60),
#        TP_COUNT (200), TP_ROUNDS (3), BENCH_RESULTS (keep hyperfine's JSON there)
set -euo pipefail
# Every column starts from the same environment (see backends.sh: the caller's variables, e.g.
# NODE_EXTRA_CA_CERTS, change what a bare interpreter does at start).
if [[ -z ${TARGETS_CLEAN_ENV:-} ]]; then
	keep=(TARGETS_CLEAN_ENV=1 "PATH=/usr/sbin:/usr/bin:/sbin:/bin" "HOME=${HOME:-/root}" "TMPDIR=${TMPDIR:-/tmp}")
	for v in AIRLOCK AIRLOCK_BASE RUNS TP_COUNT TP_ROUNDS BENCH_RESULTS; do
		[[ -z ${!v:-} ]] || keep+=("$v=${!v}")
	done
	exec env -i "${keep[@]}" bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
need hyperfine bwrap jq xargs
need_hyperfine_n
find_airlock
runs=${RUNS:-60} tp_count=${TP_COUNT:-200} tp_rounds=${TP_ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# hyperfine -N runs the binary by path; copies in a 0755 dir so a user run can exec them.
cols=(bare bwrap bwrap-etc airlock)
lines=("" "$(join bwrap "${bwrap_args[@]}") --" "$(join bwrap "${bwrap_args[@]}" "${bwrap_etc_args[@]}") --"
	"$airlock run --")
if [[ -n ${AIRLOCK_BASE:-} ]]; then
	cols+=(base) lines+=("$(realpath "$AIRLOCK_BASE") run --")
fi

# median NAME JSON — the median of one hyperfine result, in ms.
median() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median * 1000 | . * 100 | round / 100' "$2"; }

# time_cmd TITLE ARGS... — one hyperfine run over every column with the same payload.
time_cmd() {
	local title=$1 pause=$2
	shift 2
	local hf=(hyperfine -N -w 5 -r "$runs" --export-json "$tmp/hf.json")
	# A pause before each run: a lone start finds the kernel idle (no recent cgroup move, cold caches).
	[[ -z $pause ]] || hf+=(--prepare "sleep $pause")
	for i in "${!cols[@]}"; do
		hf+=(-n "${cols[$i]}" "${lines[$i]:+${lines[$i]} }$*")
	done
	"${hf[@]}" >/dev/null 2>"$tmp/hf.err" || { cat "$tmp/hf.err" >&2; die "hyperfine failed: $title"; }
	[[ -z ${BENCH_RESULTS:-} ]] || cp "$tmp/hf.json" "$BENCH_RESULTS/targets-$(date +%s)-${title// /_}.json"
	local row="| $title |" bw
	bw=$(median bwrap "$tmp/hf.json")
	for c in "${cols[@]}"; do
		local m
		m=$(median "$c" "$tmp/hf.json")
		row+=" $m ($(jq -n "$m / $bw * 100 | round / 100")x) |"
	done
	echo "$row"
}

# throughput — starts per second of /bin/true, 2 at a time, median of the rounds.
throughput() {
	local row="| /bin/true starts/s, 2 workers |" i r c
	declare -A got=()
	for ((r = 0; r < tp_rounds; r++)); do
		for i in "${!cols[@]}"; do
			c=${cols[$i]}
			local t0 t1
			t0=$(date +%s.%N)
			# shellcheck disable=SC2086 # the command line is split on purpose
			seq 1 "$tp_count" | xargs -P 2 -I{} ${lines[$i]} /bin/true >/dev/null
			t1=$(date +%s.%N)
			got[$c]+="$(jq -n "$tp_count / ($t1 - $t0)") "
		done
	done
	local bw
	bw=$(echo "${got[bwrap]}" | tr ' ' '\n' | sed '/^$/d' | sort -g | sed -n "$(((tp_rounds + 1) / 2))p")
	for c in "${cols[@]}"; do
		local m
		m=$(echo "${got[$c]}" | tr ' ' '\n' | sed '/^$/d' | sort -g | sed -n "$(((tp_rounds + 1) / 2))p")
		row+=" $(jq -n "$m | round") ($(jq -n "$m / $bw * 100 | round / 100")x) |"
	done
	echo "$row"
}

echo "$(date -u '+%F %H:%M UTC'), $(id -un), load $(cut -d' ' -f1-3 /proc/loadavg), airlock $airlock"
hdr="| median ms (vs bwrap) |" sep="|---|"
for c in "${cols[@]}"; do hdr+=" $c |" sep+="---:|"; done
echo "$hdr"
echo "$sep"
time_cmd "/bin/true" "" /bin/true
time_cmd "/bin/true, 50 ms apart" 0.05 /bin/true
time_cmd "python3 -c pass" "" /usr/bin/python3 -c pass
if [[ -x /usr/bin/node ]]; then time_cmd "node -e 0" "" /usr/bin/node -e 0; fi
throughput
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
