#!/usr/bin/env bash
# density.sh — how many idle sandboxes one `airlock serve` holds, and what each costs the host,
# from the host's own counters (bench/density_client.py: /proc/meminfo and the server's /proc
# entry, before and after): MemAvailable's drop, kernel slab (unreclaimable), page tables, kernel
# stacks, per-cpu memory and tmpfs per sandbox, and the server's descriptors and RSS per sandbox.
# Creates go on until SANDBOXES live or one is refused, whose reason is printed: the ceiling and
# what sets it (server.max_sandboxes, the descriptor limit, memory). Prints a markdown table.
# Usage: bench/density.sh   (knobs: BUILD_DIR=build SANDBOXES=1000 STEP=250 CLIENTS=4)
# The sandboxes are the default profile's (untrusted-code-read: a network namespace of its own
# each), without a state directory (persistence's mirror is bench/persist.sh's), no pool.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
need python3 curl
build=${BUILD_DIR:-build}
n=${SANDBOXES:-1000} step=${STEP:-250} clients=${CLIENTS:-4}
[ -x "$build/airlock" ] && [ -x "$build/airlock-serve" ] || die "build airlock first (no $build/airlock-serve)"
airlock=$(realpath "$build/airlock")
tmp=$(mktemp -d)
spid=
cleanup() {
	bench_serve_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
{
	serve_config_head
	cat <<YAML
server:
  max_sandboxes: $((n + 16))
  idle_ttl: 24h
  max_lifetime: 24h
  pool:
    untrusted-code-read: 0
    untrusted-code-write: 0
  quota:
    sandboxes: $((n + 16))
YAML
} >"$tmp/density.yaml"
bench_serve_start "$tmp/density" --config "$tmp/density.yaml" --socket none --token-file "$tmp/tok" \
	--audit "$tmp/density.jsonl" --state-dir none
export BENCH_TOKEN
BENCH_TOKEN=$(awk '{print $NF}' "$tmp/tok")
read -r soft hard < <(awk '/^Max open files/ {print $4, $5}' "/proc/$spid/limits")
echo "$bench_name: up to $n idle sandboxes, $clients clients (server pid $spid, descriptors $soft/$hard)" >&2
python3 bench/density_client.py "$port" "$spid" "$n" "$step" "$clients" >"$tmp/out.json"
python3 - "$tmp/out.json" "$hard" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); hard = int(sys.argv[2]); p = d["per_sandbox"]; k = d["sandboxes"]
print(f"| idle sandboxes | {k} (in {d['create_secs']} s) |\n|---|---|")
for key, label in (("MemAvailable", "MemAvailable drop"), ("Slab", "kernel slab"), ("SUnreclaim", "  of it unreclaimable"),
                   ("PageTables", "page tables"), ("KernelStack", "kernel stacks"), ("Percpu", "per-cpu"),
                   ("Shmem", "tmpfs and shared memory"), ("rss_kib", "server RSS")):
    print(f"| {label} per sandbox | {p.get(key, 0):.0f} KiB |")
print(f"| server descriptors per sandbox | {p.get('fds', 0):.1f} (limit {hard}: at most ~{int(hard / max(p.get('fds', 1), 1))} sandboxes) |")
print(f"| processes per sandbox | {p.get('procs', 0):.2f} |")
f = d["failure"]
print(f"| first refusal | {('HTTP %d after %d: %s' % (f['status'], f['after'], f['body'])) if f else 'none'} |")
PY
