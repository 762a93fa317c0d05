#!/usr/bin/env bash
# ctr.sh — the issue-20 benchmark: `ctr run --rm IMAGE /bin/true` through containerd with airlock-runc, crun, runsc and runc as the runc shim's binary, as ratios.
#
# Not a test: it prints figures for bench/README.md. Everything is the script's own: a containerd
# with its own root, state, socket and runtime root under a throwaway directory (never the system
# one), in a private mount namespace; the busybox-static image the tests assemble
# (tests/image/mkoci.py) as an OCI archive imported into it. Every runtime runs the same image
# with the same spec through the same shim (io.containerd.runc.v2 with --runc-binary), so the
# difference is the runtime's own create + start + delete.
# Usage: bench/ctr.sh   (root; AIRLOCK_RUNC=path to time another airlock-runc than
#                       build/airlock-runc; WARMUP=N, RUNS=N, ROUNDS=N interleaved rounds;
#                       BENCH_RESULTS=dir keeps the JSON)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need hyperfine python3 containerd ctr unshare
need_json
need_hyperfine_n
((EUID == 0)) || die "containerd needs root: run as root"
[ -x /bin/busybox ] || die "busybox-static is not installed (apt-get install busybox-static)"
warmup=${WARMUP:-5}
runs=${RUNS:-50}

tmp=$(mktemp -d /tmp/airlock-bench-ctr.XXXXXX)
chmod 0711 "$tmp"
cd_pid=
cleanup() {
	if [[ -n $cd_pid ]]; then
		kill "$cd_pid" 2>/dev/null || true
		wait "$cd_pid" 2>/dev/null || true
	fi
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

# ---- the runtimes: name and binary ------------------------------------------------------------
names=() bins=()
add_runtime() {
	names+=("$1")
	bins+=("$2")
}
airlock_runc=${AIRLOCK_RUNC:-$repo/build/airlock-runc}
if [[ -x $airlock_runc ]]; then
	add_runtime airlock "$(realpath -s "$airlock_runc")"
else
	echo "airlock-runc not built (no $airlock_runc; build it, or set AIRLOCK_RUNC=path): timing the others" >&2
fi
for rt in crun runc; do
	if command -v "$rt" >/dev/null 2>&1; then
		add_runtime "$rt" "$(command -v "$rt")"
	else
		echo "$rt is not installed (apt-get install $rt): left out" >&2
	fi
done
# runsc under the runc shim: its default network mode (sandbox) wants a network namespace made
# beforehand by CNI and refuses the one it is in ("cannot run with network enabled in root
# network namespace"); --network=none gives it gVisor's own loopback-only stack, the same
# posture as the others' empty namespace. The shim passes no runtime flags, so a two-line
# wrapper adds it (one exec of sh per runsc call, ~1 ms against runsc's ~100).
if command -v runsc >/dev/null 2>&1; then
	printf '#!/bin/sh\nexec %s --network=none "$@"\n' "$(command -v runsc)" >"$tmp/runsc"
	chmod 0755 "$tmp/runsc"
	add_runtime runsc "$tmp/runsc"
else
	echo "runsc is not installed: left out" >&2
fi
((${#names[@]})) || die "no runtime to time"

# ---- our own containerd ------------------------------------------------------------------------
sock=$tmp/containerd.sock
cat >"$tmp/config.toml" <<EOF
version = 2
root = "$tmp/root"
state = "$tmp/state"
# No Kubernetes here: the CRI plugin would only add start-up work and CNI warnings.
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
EOF
# On a hybrid cgroup host whose v2 hierarchy has a controller (this VM: hugetlb) crun 1.8 refuses
# every container ("cgroups in hybrid mode not supported"; see bench/backends.sh). containerd,
# its shims and the runtimes they run therefore live in a private mount namespace where an empty
# tmpfs hides /sys/fs/cgroup/unified: every runtime, runc included, sees the same v1 layout
# (crun still writes a cgroup.procs there, into the tmpfs: hence 1 MiB, not a page).
hide=
if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) == tmpfs && -n $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null) ]]; then
	hide='mount -t tmpfs -o size=1m,mode=755 airlock-bench-nocg /sys/fs/cgroup/unified && '
	note_hybrid="on this hybrid host /sys/fs/cgroup/unified is hidden from containerd and the runtimes (crun 1.8 refuses the layout)"
fi
unshare --mount --propagation private -- sh -c "${hide}exec containerd --config '$tmp/config.toml'" \
	>"$tmp/containerd.log" 2>&1 &
cd_pid=$!
c() { ctr --address "$sock" --namespace airlock-bench "$@"; }
for _ in $(seq 100); do
	c version >/dev/null 2>&1 && break
	kill -0 "$cd_pid" 2>/dev/null || die "containerd exited: $(tail -n 5 "$tmp/containerd.log")"
	sleep 0.1
done
c version >/dev/null 2>&1 || die "containerd did not answer on $sock: $(tail -n 5 "$tmp/containerd.log")"

python3 "$repo/tests/image/mkoci.py" oci-archive "$tmp/bb.tar"
c images import --base-name airlock-bench/bb "$tmp/bb.tar" >/dev/null
image="airlock-bench/bb:latest"

# ---- time them ----------------------------------------------------------------------------------
# One command per runtime, each with its own container id (--rm frees it before the next run)
# and its own runtime root beside containerd's state.
args=() cmds=()
for i in "${!names[@]}"; do
	cmd="ctr --address $sock --namespace airlock-bench run --rm --runc-binary ${bins[$i]} --runc-root $tmp/runc-root $image bench-${names[$i]} /bin/true"
	# shellcheck disable=SC2086 # split into words on purpose, as hyperfine -N does
	check_runs "${names[$i]}" $cmd
	# The image's Entrypoint (echo) would make any command "succeed": check that the command
	# given is what ran, by its exit status, and (for runsc) that the kernel it saw is gVisor's.
	rc=0
	c run --rm --runc-binary "${bins[$i]}" --runc-root "$tmp/runc-root" "$image" "check-${names[$i]}" \
		/bin/sh -c 'cat /proc/version >/proc/self/fd/1; exit 7' >"$tmp/version" 2>&1 || rc=$?
	((rc == 7)) || die "${names[$i]}: a command exiting 7 ended with status $rc: $(cat "$tmp/version")"
	if [[ ${names[$i]} == runsc ]] && cmp -s "$tmp/version" /proc/version; then
		die "runsc: the container saw the host's kernel, not gVisor's"
	fi
	args+=(-n "${names[$i]}" "$cmd")
	cmds+=("$cmd")
done
out=${BENCH_RESULTS:-$tmp}/ctr.json
mkdir -p "$(dirname "$out")"
echo "ctr run --rm $image /bin/true, $warmup warm-up + $runs runs each; $(load_note)" >&2
[[ -z ${note_hybrid:-} ]] || echo "note: $note_hybrid" >&2
hyperfine -N -w "$warmup" -r "$runs" --export-json "$out" "${args[@]}" >&2

ref=runc
[[ " ${names[*]} " == *" runc "* ]] || ref=${names[0]}
ref_median=$(json_query "$out" median "$ref")
ref_min=$(json_query "$out" min "$ref")
# Medians and minima both: on a loaded machine the minimum is the steadier figure of the two.
echo
echo "| runtime (ctr run --rm, /bin/true) | median ms | min ms | median vs $ref | min vs $ref |"
echo "|---|---:|---:|---:|---:|"
for n in "${names[@]}"; do
	m=$(json_query "$out" median "$n")
	lo=$(json_query "$out" min "$n")
	printf '| %s | %.1f | %.1f | %sx | %sx |\n' "$n" "$(awk -v v="$m" 'BEGIN{print v*1000}')" \
		"$(awk -v v="$lo" 'BEGIN{print v*1000}')" "$(ratio "$m" "$ref_median")" "$(ratio "$lo" "$ref_min")"
done

# The same runs again, interleaved: one of each runtime per round, so that a burst of load from
# other work on the machine falls on all of them alike rather than on whichever hyperfine timed
# then. Wall time of each `ctr run` from the shell (date's nanoseconds; a fork+exec of date on
# each side, the same for every runtime).
rounds=${ROUNDS:-20}
for ((r = 0; r < rounds; r++)); do
	for i in "${!names[@]}"; do
		# shellcheck disable=SC2206 # the command's words, as above
		words=(${cmds[$i]})
		t0=$(date +%s%N)
		"${words[@]}" >/dev/null 2>&1 || die "${names[$i]}: round $r failed"
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$tmp/round-${names[$i]}"
	done
done
ref_round=$(median_of "$tmp/round-$ref")
echo
echo "| runtime, $rounds interleaved rounds | median ms | vs $ref |"
echo "|---|---:|---:|"
for n in "${names[@]}"; do
	m=$(median_of "$tmp/round-$n")
	printf '| %s | %.1f | %sx |\n' "$n" "$(awk -v v="$m" 'BEGIN{print v/1000}')" "$(ratio "$m" "$ref_round")"
done
echo "$(load_note) (after)" >&2
