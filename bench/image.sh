#!/usr/bin/env bash
# image.sh — the issue-18 benchmark: start latency of a sandbox whose root is an image of the store against one on the host's /usr.
#
# Not a test: it prints figures for bench/README.md. The images are the busybox-static one the
# tests assemble and a Debian-shaped one (tests/image/mkoci.py, imported into a throwaway store);
# with BENCH_IMAGE=NAME (and AIRLOCK_IMAGES=store) an image you built, e.g. with `airlock image
# build`, is also timed. Three measures, each of every command:
#   hyperfine -N (one command after the other), then ROUNDS interleaved rounds (one start of each
#   command in turn, so the load moves under all of them alike: median, p10, min), then the system
#   calls of one start (strace -f -c; a count, which the load cannot move).
# With AIRLOCK_BASE=path (an older airlock) its starts join every measure, on a store of its own.
# Usage: bench/image.sh   (AIRLOCK=path, AIRLOCK_BASE=path, WARMUP=N, RUNS=N, ROUNDS=N;
#                          BENCH_RESULTS=dir keeps the JSON)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need hyperfine python3
need_json
need_hyperfine_n
find_airlock
[ -x /bin/busybox ] || die "busybox-static is not installed (apt-get install busybox-static)"
warmup=${WARMUP:-10}
runs=${RUNS:-100}
rounds=${ROUNDS:-100}
base=${AIRLOCK_BASE:+$(realpath "$AIRLOCK_BASE")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
# A throwaway store, or (BENCH_IMAGE) the one that holds that image; the test images go there.
if [ -n "${BENCH_IMAGE:-}" ]; then
	export AIRLOCK_IMAGES=${AIRLOCK_IMAGES:?BENCH_IMAGE needs AIRLOCK_IMAGES: the store that holds it}
else
	export AIRLOCK_IMAGES=$tmp/store
fi
python3 "$repo/tests/image/mkoci.py" oci-archive "$tmp/bb.tar"
python3 "$repo/tests/image/mkoci.py" oci-archive "$tmp/wide.tar" wide
"$airlock" image import "$tmp/bb.tar" bench-bb >/dev/null
"$airlock" image import "$tmp/wide.tar" bench-wide >/dev/null
if [ -n "$base" ]; then
	AIRLOCK_IMAGES=$tmp/store-base "$base" image import "$tmp/bb.tar" bench-bb >/dev/null
	AIRLOCK_IMAGES=$tmp/store-base "$base" image import "$tmp/wide.tar" bench-wide >/dev/null
fi
trap '"$airlock" image rm bench-bb >/dev/null 2>&1; "$airlock" image rm bench-wide >/dev/null 2>&1; rm -rf "$tmp"' EXIT
# The image's whole root is shown: "wide" has nine more top-level directories (each a bind) and
# 150 /etc entries, as a Debian root has (its /etc is bound in one mount: image/etc.c).
names=("host /usr" "image (busybox)" "image (Debian-shaped: 9 top dirs, 150 /etc entries)")
cmds=("$airlock run -- /usr/bin/true" "$airlock run --image bench-bb -- /usr/bin/true"
	"$airlock run --image bench-wide -- /usr/bin/true")
stores=("$AIRLOCK_IMAGES" "$AIRLOCK_IMAGES" "$AIRLOCK_IMAGES")
if [ -n "${BENCH_IMAGE:-}" ]; then
	names+=("image ($BENCH_IMAGE)")
	cmds+=("$airlock run --image $BENCH_IMAGE -- /usr/bin/true")
	stores+=("$AIRLOCK_IMAGES")
fi
if [ -n "$base" ]; then
	names+=("base: host /usr" "base: image (busybox)" "base: image (Debian-shaped)")
	cmds+=("$base run -- /usr/bin/true" "$base run --image bench-bb -- /usr/bin/true"
		"$base run --image bench-wide -- /usr/bin/true")
	stores+=("$tmp/store-base" "$tmp/store-base" "$tmp/store-base")
fi
args=()
for i in "${!cmds[@]}"; do
	# shellcheck disable=SC2086 # each command is split into words on purpose (as hyperfine -N does)
	AIRLOCK_IMAGES=${stores[$i]} check_runs "${names[$i]}" ${cmds[$i]}
	# hyperfine runs every command in this environment: the base's store is named by a wrapper
	if [ "${stores[$i]}" = "$AIRLOCK_IMAGES" ]; then
		args+=(-n "${names[$i]}" "${cmds[$i]}")
	else
		args+=(-n "${names[$i]}" "env AIRLOCK_IMAGES=${stores[$i]} ${cmds[$i]}")
	fi
done
out=${BENCH_RESULTS:-$tmp}/image.json
mkdir -p "$(dirname "$out")"
echo "hyperfine -N, $runs runs each:"
hyperfine -N -w "$warmup" -r "$runs" --export-json "$out" "${args[@]}" >/dev/null
if [ "$json_tool" = jq ]; then
	jq -r '.results[] | "\(.command)\t\(.median * 1000 | . * 100 | round / 100) ms median\t\(.mean * 1000 | . * 100 | round / 100) ms mean"' "$out"
else
	python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]: print("%s\t%.2f ms median\t%.2f ms mean" % (r["command"], r["median"]*1e3, r["mean"]*1e3))' "$out"
fi

# Interleaved: one start of each command in turn, ROUNDS times.
echo "interleaved, $rounds rounds:"
printf '%s\n' "${names[@]}" >"$tmp/names"
printf '%s\n' "${cmds[@]}" >"$tmp/cmds"
printf '%s\n' "${stores[@]}" >"$tmp/stores"
python3 - "$rounds" "$tmp" <<'PY'
import os, subprocess, sys, time
rounds, d = int(sys.argv[1]), sys.argv[2]
names, cmds, stores = (open(os.path.join(d, f)).read().splitlines() for f in ("names", "cmds", "stores"))
times = [[] for _ in cmds]
for _ in range(rounds):
    for i, c in enumerate(cmds):
        env = dict(os.environ, AIRLOCK_IMAGES=stores[i])
        t = time.perf_counter()
        subprocess.run(c.split(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[i].append((time.perf_counter() - t) * 1e3)
for n, t in zip(names, times):
    t.sort()
    print("%s\t%.2f ms median\t%.2f ms p10\t%.2f ms min" % (n, t[len(t) // 2], t[len(t) // 10], t[0]))
PY

# System calls of one start, every process of it (strace -f -c).
if command -v strace >/dev/null 2>&1; then
	echo "system calls of one start (strace -f -c):"
	for i in "${!cmds[@]}"; do
		# shellcheck disable=SC2086 # the command's words
		AIRLOCK_IMAGES=${stores[$i]} strace -f -c -o "$tmp/strace" ${cmds[$i]} >/dev/null 2>&1
		awk -v name="${names[$i]}" '
			$NF == "total" { total = $4 }
			$NF != "total" && $4 ~ /^[0-9]+$/ { c[$NF] = $4 }
			END { printf "%s\ttotal %s\topenat2 %d\tsymlinkat %d\tmounts (open_tree+mount) %d\n", name, total,
				c["openat2"], c["symlinkat"], c["open_tree"] + c["mount"] }' "$tmp/strace"
	done
else
	echo "(strace is not installed: no system call counts)"
fi
