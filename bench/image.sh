#!/usr/bin/env bash
# image.sh — the issue-18 benchmark: start latency of a sandbox whose root is an image of the store against one on the host's /usr.
#
# Not a test: it prints figures for bench/README.md. The image is the busybox-static one the
# tests assemble (tests/image/mkoci.py), imported into a throwaway store; with BENCH_IMAGE=NAME
# (and AIRLOCK_IMAGES=store) an image you built, e.g. with `airlock image build`, is also timed.
# Usage: bench/image.sh   (AIRLOCK=path, WARMUP=N, RUNS=N; BENCH_RESULTS=dir keeps the JSON)
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
# A throwaway store, or (BENCH_IMAGE) the one that holds that image; the busybox image goes there.
if [ -n "${BENCH_IMAGE:-}" ]; then
	export AIRLOCK_IMAGES=${AIRLOCK_IMAGES:?BENCH_IMAGE needs AIRLOCK_IMAGES: the store that holds it}
else
	export AIRLOCK_IMAGES=$tmp/store
fi
python3 "$repo/tests/image/mkoci.py" oci-archive "$tmp/bb.tar"
python3 "$repo/tests/image/mkoci.py" oci-archive "$tmp/wide.tar" wide
"$airlock" image import "$tmp/bb.tar" bench-bb >/dev/null
"$airlock" image import "$tmp/wide.tar" bench-wide >/dev/null
trap '"$airlock" image rm bench-bb >/dev/null 2>&1; "$airlock" image rm bench-wide >/dev/null 2>&1; rm -rf "$tmp"' EXIT
# The image's whole root is shown: "wide" has nine more top-level directories (each a bind) and
# 150 /etc entries (each a symlink into one bind of its /etc), as a Debian root has.
names=("host /usr" "image (busybox)" "image (Debian-shaped: 9 top dirs, 150 /etc entries)")
cmds=("$airlock run -- /usr/bin/true" "$airlock run --image bench-bb -- /usr/bin/true"
	"$airlock run --image bench-wide -- /usr/bin/true")
if [ -n "${BENCH_IMAGE:-}" ]; then
	names+=("image ($BENCH_IMAGE)")
	cmds+=("$airlock run --image $BENCH_IMAGE -- /usr/bin/true")
fi
args=()
for i in "${!cmds[@]}"; do
	# shellcheck disable=SC2086 # each command is split into words on purpose (as hyperfine -N does)
	check_runs "${names[$i]}" ${cmds[$i]}
	args+=(-n "${names[$i]}" "${cmds[$i]}")
done
out=${BENCH_RESULTS:-$tmp}/image.json
mkdir -p "$(dirname "$out")"
hyperfine -N -w "$warmup" -r "$runs" --export-json "$out" "${args[@]}" >/dev/null
if [ "$json_tool" = jq ]; then
	jq -r '.results[] | "\(.command)\t\(.median * 1000 | . * 100 | round / 100) ms median\t\(.mean * 1000 | . * 100 | round / 100) ms mean"' "$out"
else
	python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]: print("%s\t%.2f ms median\t%.2f ms mean" % (r["command"], r["median"]*1e3, r["mean"]*1e3))' "$out"
fi
