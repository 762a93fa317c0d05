#!/usr/bin/env bash
# layers.sh — the issue-3 start-up benchmark: /bin/true bare, under hardened bwrap, and under airlock with all layers and with namespaces only.
#
# Not a test: it prints figures for bench/README.md and fails only when a tool is
# missing or a command does not run. Usage: bench/layers.sh  (as root or as a user;
# AIRLOCK=path/to/airlock, WARMUP=N (default 10), RUNS=N (default 100),
# BENCH_RESULTS=dir to keep the JSON). Writes nothing outside its temp dir unless
# BENCH_RESULTS is set.
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

warmup=${WARMUP:-10}
runs=${RUNS:-100}

need hyperfine bwrap
need_json
need_hyperfine_n
find_airlock

# --- the commands -----------------------------------------------------------------
# The four the issue asks for, then one layer at a time on top of namespaces only, so
# a difference between the first two airlock lines can be put down to a layer.
names=(bare bwrap airlock-all airlock-ns)
declare -A cmd
cmd[bare]=$(join /bin/true)
cmd[bwrap]=$(join bwrap "${bwrap_args[@]}" -- /bin/true)
cmd[airlock-all]=$(join "$airlock" run -- /bin/true)
cmd[airlock-ns]=$(join "$airlock" run "${airlock_ns_only[@]}" -- /bin/true)
if [[ ${LAYERS_EACH:-1} == 1 ]]; then
	names+=(ns+seccomp ns+landlock ns+limits)
	cmd[ns+seccomp]=$(join "$airlock" run --seccomp default --landlock off --memory none --pids none -- /bin/true)
	cmd[ns+landlock]=$(join "$airlock" run --seccomp off --landlock on --memory none --pids none -- /bin/true)
	cmd[ns+limits]=$(join "$airlock" run --seccomp off --landlock off -- /bin/true)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-layers.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

# Fail before timing if a sandbox cannot start, and show what each airlock line
# really enforced (from its verdict), so "all" and "namespaces only" are checked, not assumed.
echo "## Start-up per layer ($(uname -r), $(nproc) CPUs, $(id -un))"
echo
for n in "${names[@]}"; do
	# shellcheck disable=SC2086 # the joined command is split back on spaces, as hyperfine -N does
	check_runs "$n" ${cmd[$n]}
	if [[ $n == airlock-* || $n == ns+* ]]; then
		# shellcheck disable=SC2086
		set -- ${cmd[$n]}
		"$1" run --json "${@:3}" >"$tmp/verdict.json" 2>/dev/null || die "'$n' failed with --json"
		printf -- '- %-12s %s\n' "$n:" "$(json_query "$tmp/verdict.json" layers)"
	fi
done
echo
echo "Before: $(load_note)"

hf=(hyperfine -N --warmup "$warmup" --runs "$runs" --style basic --export-json "$tmp/layers.json")
for n in "${names[@]}"; do
	hf+=(-n "$n" "${cmd[$n]}")
done
"${hf[@]}" >&2

echo "After:  $(load_note)"
echo
echo "| command | median (ms) | mean ± σ (ms) | min (ms) |"
echo "|---|---:|---:|---:|"
json_query "$tmp/layers.json" table |
	awk -F'\t' '{ printf "| %s | %.2f | %.2f ± %.2f | %.2f |\n", $1, $2 * 1000, $3 * 1000, $4 * 1000, $5 * 1000 }'
echo

declare -A med low
for n in "${names[@]}"; do
	med[$n]=$(json_query "$tmp/layers.json" median "$n") || die "no result for '$n' in hyperfine's JSON"
	low[$n]=$(json_query "$tmp/layers.json" min "$n")
done
# Medians are the figures; ratios of the minimums are printed beside them because
# hyperfine times the commands one after another, not interleaved, so load from other
# work that comes and goes during the run can move one command's median and not another's.
# The minimum is each command's least-disturbed run.
pair() { # pair LABEL A B: the median ratio and the minimum ratio of A to B
	printf '%-30s = %sx   (minimums: %sx)\n' "$1" "$(ratio "${med[$2]}" "${med[$3]}")" "$(ratio "${low[$2]}" "${low[$3]}")"
}
pair "airlock(all)/bwrap" airlock-all bwrap
echo "  (issue 3 target: airlock with all layers at most 0.5x hardened bwrap)"
pair "airlock(all)/airlock(ns only)" airlock-all airlock-ns
pair "airlock(ns only)/bwrap" airlock-ns bwrap
pair "airlock(all)/bare" airlock-all bare
if [[ ${LAYERS_EACH:-1} == 1 ]]; then
	for n in ns+seccomp ns+landlock ns+limits; do
		printf '%-30s = %+.2f ms   (minimums: %+.2f ms)\n' "$n - airlock(ns only)" \
			"$(awk -v a="${med[$n]}" -v b="${med[airlock-ns]}" 'BEGIN { print (a - b) * 1000 }')" \
			"$(awk -v a="${low[$n]}" -v b="${low[airlock-ns]}" 'BEGIN { print (a - b) * 1000 }')"
	done
fi

if [[ -n ${BENCH_RESULTS:-} ]]; then
	mkdir -p "$BENCH_RESULTS"
	cp "$tmp/layers.json" "$BENCH_RESULTS/layers-$(date +%Y%m%d-%H%M%S).json"
fi
