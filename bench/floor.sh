#!/usr/bin/env bash
# floor.sh — the kernel's floor under a fully confined start on this host: bench/floor.c adds
# airlock's layers one at a time, each the cheapest way the kernel offers (no configuration, no
# checks, no verdict), timed in one hyperfine run beside bare /bin/true, hardened bwrap and
# airlock; then lone starts (50 ms apart) and the throughput of 2 parallel workers for the same
# three; then an exec in a held sandbox the same way (bench/heldfloor.c) against a bare spawn.
# Says what issue 14 part 4's targets (≤ 0.6x bwrap's cold start, ≥ 1.5x its throughput, held
# exec ≤ 1.2x bare) leave for a sandbox's own code.
# Usage: bench/floor.sh   knobs: AIRLOCK, BUILD_DIR (its build: the seccomp filter), RUNS (100),
#        TP_COUNT (300). Root only (cgroups, id maps of another uid).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
need gcc hyperfine bwrap jq xargs
need_hyperfine_n
find_airlock
[[ $(id -u) == 0 ]] || die "needs root (floor writes cgroups and id maps)"
build=${BUILD_DIR:-$(dirname "$airlock")}
blobs=$build/src/seccomp_blobs.c
[[ -f $blobs ]] || die "no $blobs: set BUILD_DIR to airlock's build directory (its seccomp filter is compiled there)"
runs=${RUNS:-100} tp_count=${TP_COUNT:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Static, as airlock is: no dynamic loader in anyone's figure but bwrap's own.
gcc -O2 -static-pie -I"$repo/src" "$here/floor.c" "$blobs" -o "$tmp/floor"
gcc -O2 -static-pie -pthread -I"$repo/src" "$here/heldfloor.c" "$blobs" -o "$tmp/heldfloor"
"$tmp/floor" -n -r -i -s -l -c /bin/true || die "floor with every layer failed (its message is above)"

names=(bare namespaces +net +root +init +seccomp +landlock +cgroups bwrap airlock)
lines=("/bin/true" "$tmp/floor /bin/true" "$tmp/floor -n /bin/true" "$tmp/floor -n -r /bin/true"
	"$tmp/floor -n -r -i /bin/true" "$tmp/floor -n -r -i -s /bin/true" "$tmp/floor -n -r -i -s -l /bin/true"
	"$tmp/floor -n -r -i -s -l -c /bin/true" "$(join bwrap "${bwrap_args[@]}") -- /bin/true" "$airlock run -- /bin/true")
hf=(hyperfine -N -w 10 -r "$runs" --export-json "$tmp/hf.json")
for i in "${!names[@]}"; do hf+=(-n "${names[$i]}" "${lines[$i]}"); done

echo "$(date -u '+%F %H:%M UTC'), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), airlock $airlock"
"${hf[@]}" >/dev/null 2>"$tmp/hf.err" || { cat "$tmp/hf.err" >&2; die "hyperfine failed"; }
med() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median * 1000' "$tmp/hf.json"; }
bw=$(med bwrap)
echo "| cold start of /bin/true | median ms | vs bwrap | this layer adds |"
echo "|---|---:|---:|---:|"
prev=""
for n in "${names[@]}"; do
	m=$(med "$n") add=""
	[[ -z $prev || $n == bwrap || $n == airlock ]] || add=$(jq -n "($m - $prev) * 100 | round / 100")
	[[ $n == bwrap || $n == airlock ]] || prev=$m
	echo "| $n | $(jq -n "$m * 100 | round / 100") | $(jq -n "$m / $bw * 100 | round / 100")x | $add |"
done
echo "0.6x bwrap is $(jq -n "$bw * 0.6 * 100 | round / 100") ms; every layer at its floor is $(jq -n "$(med +cgroups) * 100 | round / 100") ms."

# A lone start: 50 ms of quiet before each, as a user's one command sees it (a cgroup move by pid
# after a quiet moment waits for an RCU grace period: src/cgroup/cgroup.h, cg_join_fds).
hf=(hyperfine -N -w 3 -r "$((runs / 2))" --prepare "sleep 0.05" --export-json "$tmp/hf.json")
for i in 7 8 9; do hf+=(-n "${names[$i]}" "${lines[$i]}"); done
"${hf[@]}" >/dev/null 2>"$tmp/hf.err" || { cat "$tmp/hf.err" >&2; die "hyperfine failed (lone starts)"; }
bw=$(med bwrap)
echo "| lone start (50 ms apart) | median ms | vs bwrap |"
echo "|---|---:|---:|"
for n in +cgroups bwrap airlock; do
	m=$(med "$n")
	echo "| $n | $(jq -n "$m * 100 | round / 100") | $(jq -n "$m / $bw * 100 | round / 100")x |"
done

# throughput LINE — starts per second of LINE, 2 at a time.
throughput() {
	local t0 t1
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086 # the command line is split on purpose
	seq 1 "$tp_count" | xargs -P 2 -I{} $1 >/dev/null
	t1=$(date +%s.%N)
	jq -n "$tp_count / ($t1 - $t0) | round"
}
echo "| starts/s, 2 workers | every layer at its floor | bwrap | airlock |"
echo "|---|---:|---:|---:|"
f=$(throughput "${lines[7]}") b=$(throughput "${lines[8]}") a=$(throughput "${lines[9]}")
echo "| /bin/true | $f ($(jq -n "$f / $b * 100 | round / 100")x) | $b | $a ($(jq -n "$a / $b * 100 | round / 100")x) |"

# An exec in a held sandbox (bench/heldfloor.c): a spare made ahead, the next made while the exec
# runs; then with every layer airlock gives a held exec. airlock's own: bench/held.sh.
for layers in "" -l; do
	# shellcheck disable=SC2086 # an empty $layers is no argument
	for gap in 0 2000; do "$tmp/heldfloor" 400 "$gap" $layers || die "heldfloor failed"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
