#!/usr/bin/env bash
# workload.sh — the issue-3 slowdown benchmark: a syscall-heavy and a CPU-bound program bare, under hardened bwrap and under airlock.
#
# Not a test: it prints figures for bench/README.md and fails only when a tool is
# missing or a command does not run. Usage: bench/workload.sh  (as root or as a user).
# Knobs: AIRLOCK=path/to/airlock, SYSCALL_N (open/fstat/close iterations, default
# 200000), CPU_N (default 50000000), WARMUP (default 3), RUNS (default 40),
# LOOP_ROUNDS (in-process timing rounds, default 15), BENCH_RESULTS=dir to keep the JSON.
# Writes nothing outside its temp dir unless BENCH_RESULTS is set.
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

syscall_n=${SYSCALL_N:-200000}
cpu_n=${CPU_N:-50000000}
warmup=${WARMUP:-3}
runs=${RUNS:-40}
loop_rounds=${LOOP_ROUNDS:-15}

need hyperfine bwrap gcc
need_json
need_hyperfine_n
find_airlock

tmp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-workload.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
[[ $tmp != *[[:space:]]* ]] || die "the temp dir '$tmp' contains white space (hyperfine -N splits on it); set TMPDIR"

# The binary lives in its own directory, bound read-only at /bench in both sandboxes.
# Static, so it needs no library view and runs the same code everywhere. The sandbox
# user is not the invoking user (as root it is an unprivileged mapped id): 0755.
mkdir "$tmp/bin"
gcc -O2 -static -Wall -Wextra -o "$tmp/bin/workload" "$here/workload.c" -lm ||
	die "cannot build $here/workload.c (a static build needs libc6-dev's libc.a)"
chmod 0755 "$tmp" "$tmp/bin" "$tmp/bin/workload"

# --- the sandboxes ----------------------------------------------------------------
sandboxes=(bare bwrap airlock airlock-ns)
declare -A prefix
prefix[bare]=$tmp/bin/workload
prefix[bwrap]=$(join bwrap "${bwrap_args[@]}" --ro-bind "$tmp/bin" /bench -- /bench/workload)
# --cpus none: the default half-CPU share would halve a CPU-bound run; this compares overheads.
prefix[airlock]=$(join "$airlock" run --cpus none --ro "$tmp/bin:/bench" -- /bench/workload)
prefix[airlock-ns]=$(join "$airlock" run "${airlock_ns_only[@]}" --ro "$tmp/bin:/bench" -- /bench/workload)

# syscalls 0 is start-up plus an empty loop: subtracting it from syscalls N in the same
# sandbox leaves the N iterations alone, which gives the per-iteration cost below.
workloads=("syscalls $syscall_n" "syscalls 0" "cpu $cpu_n")
wname() { echo "${1%% *}-${1##* }"; } # "syscalls 200000" -> syscalls-200000

echo "## Workload slowdown ($(uname -r), $(nproc) CPUs, $(id -un))"
echo
# Each sandbox must run it and see the same file as the host (same size: same check sum).
want=
for s in "${sandboxes[@]}"; do
	# shellcheck disable=SC2086 # split back on spaces, as hyperfine -N does
	out=$(${prefix[$s]} syscalls 3 2>&1) || die "'$s' cannot run the workload: ${prefix[$s]} syscalls 3: $out"
	got=${out##*check=}
	want=${want:-$got}
	[[ $got == "$want" ]] || die "'$s' ran the workload but read a different file than bare: $out"
done
airlock_cmd=${prefix[airlock]%% -- *}
# shellcheck disable=SC2086
$airlock_cmd --json -- /bench/workload syscalls 1 >"$tmp/verdict.json" 2>/dev/null || die "airlock --json failed"
echo "- airlock:    $(json_query "$tmp/verdict.json" layers)"
airlock_ns_cmd=${prefix[airlock-ns]%% -- *}
# shellcheck disable=SC2086
$airlock_ns_cmd --json -- /bench/workload syscalls 1 >"$tmp/verdict.json" 2>/dev/null || die "airlock --json failed"
echo "- airlock-ns: $(json_query "$tmp/verdict.json" layers)"
echo
echo "Before: $(load_note)"

# --- whole-process times: one hyperfine run for everything ------------------------
hf=(hyperfine -N --warmup "$warmup" --runs "$runs" --style basic --export-json "$tmp/workload.json")
for w in "${workloads[@]}"; do
	for s in "${sandboxes[@]}"; do
		hf+=(-n "$s/$(wname "$w")" "${prefix[$s]} $w")
	done
done
"${hf[@]}" >&2

echo "After hyperfine: $(load_note)"

# --- in-process loop timing -------------------------------------------------------
# The workload times its own loop (CLOCK_MONOTONIC), so start-up is not in this figure
# at all. Rounds are interleaved across the sandboxes so drifting load hits them alike.
for ((r = 0; r < loop_rounds; r++)); do
	for s in "${sandboxes[@]}"; do
		# shellcheck disable=SC2086
		${prefix[$s]} syscalls "$syscall_n" | sed -n 's/.*ns_per_iter=\([0-9.]*\).*/\1/p' >>"$tmp/loop-$s"
	done
done
echo "After loop timing: $(load_note)"
echo
median_of() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A med low
for w in "${workloads[@]}"; do
	for s in "${sandboxes[@]}"; do
		med[$s/$(wname "$w")]=$(json_query "$tmp/workload.json" median "$s/$(wname "$w")") ||
			die "no result for '$s/$(wname "$w")' in hyperfine's JSON"
		low[$s/$(wname "$w")]=$(json_query "$tmp/workload.json" min "$s/$(wname "$w")")
	done
done

sn=syscalls-$syscall_n
cn=cpu-$cpu_n
echo "| command | median (ms) | mean ± σ (ms) | min (ms) |"
echo "|---|---:|---:|---:|"
json_query "$tmp/workload.json" table |
	awk -F'\t' '{ printf "| %s | %.2f | %.2f ± %.2f | %.2f |\n", $1, $2 * 1000, $3 * 1000, $4 * 1000, $5 * 1000 }'
echo
echo "Slowdown, whole process (median inside / median bare, nothing subtracted; in brackets the"
echo "same ratio of the minimums, each command's least-disturbed run: hyperfine does not interleave):"
echo
echo "| sandbox | syscalls $syscall_n | cpu $cpu_n | start-up (syscalls 0) | Δ per iteration, hyperfine (ns) | loop ns/iter, in-process | Δ per iteration, in-process (ns) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
loop_bare=$(median_of "$tmp/loop-bare")
for s in "${sandboxes[@]}"; do
	loop=$(median_of "$tmp/loop-$s")
	# ((inside N - inside 0) - (bare N - bare 0)) / N: the extra cost of one
	# open+fstat+close inside, with each sandbox's own start-up taken out.
	per_iter=$(awk -v a="${med[$s/$sn]}" -v a0="${med[$s/syscalls-0]}" -v b="${med[bare/$sn]}" \
		-v b0="${med[bare/syscalls-0]}" -v n="$syscall_n" 'BEGIN { printf "%+.0f", ((a - a0) - (b - b0)) / n * 1e9 }')
	printf '| %s | %sx (%sx) | %sx (%sx) | %.2f ms | %s | %.0f | %+.0f |\n' "$s" \
		"$(ratio "${med[$s/$sn]}" "${med[bare/$sn]}" 3)" "$(ratio "${low[$s/$sn]}" "${low[bare/$sn]}" 3)" \
		"$(ratio "${med[$s/$cn]}" "${med[bare/$cn]}" 3)" "$(ratio "${low[$s/$cn]}" "${low[bare/$cn]}" 3)" \
		"$(awk -v a="${med[$s/syscalls-0]}" 'BEGIN { print a * 1000 }')" "$per_iter" "$loop" \
		"$(awk -v a="$loop" -v b="$loop_bare" 'BEGIN { print a - b }')"
done
echo
echo "In-process loop ratio airlock/bare = $(ratio "$(median_of "$tmp/loop-airlock")" "$loop_bare" 3)x," \
	"airlock-ns/bare = $(ratio "$(median_of "$tmp/loop-airlock-ns")" "$loop_bare" 3)x," \
	"bwrap/bare = $(ratio "$(median_of "$tmp/loop-bwrap")" "$loop_bare" 3)x  (issue 3 target for airlock: at most 1.05x)"

if [[ -n ${BENCH_RESULTS:-} ]]; then
	mkdir -p "$BENCH_RESULTS"
	cp "$tmp/workload.json" "$BENCH_RESULTS/workload-$(date +%Y%m%d-%H%M%S).json"
fi
