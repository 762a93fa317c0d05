#!/usr/bin/env bash
# backends.sh — the issue-7 benchmark: every airlock backend and the peers (bare, bwrap, crun, runsc) side by side, in one run.
#
# Not a test: it measures and renders, and fails only when a required tool is missing.
# A column that cannot run here (an airlock backend `airlock check --json` does not
# list as available, a peer that is not installed or does not start) is marked "not
# available" with the reason, and the run goes on.
#
# Usage:  bench/backends.sh                 measure, write the JSON, render docs/bench-backends.{md,png}
#         bench/backends.sh --render FILE   render FILE (a JSON written earlier) again, measure nothing
#
# Knobs (environment):
#   AIRLOCK=path         the airlock binary (default build/airlock of this checkout)
#   BENCH_QUICK=1        a quick run for testing: fewer runs, smaller workloads
#   WARMUP, RUNS         hyperfine warm-up runs and timed runs per start-up command (5, 60)
#   TP_COUNT, TP_ROUNDS  throughput: runs of /bin/true per round with 2 workers, rounds (200, 3)
#   SYSCALL_N, CPU_N     workload sizes (50000 open+fstat+close, 50000000 rounds)
#   LOOP_ROUNDS          interleaved rounds of the workloads per column (5)
#   BENCH_RESULTS=dir    where the JSON goes (default bench/results/, git-ignored)
#   BENCH_OUT=dir        where the .md and .png go (default docs/); BENCH_OUT=none: no render
#   OCI_ID_BASE          as root, the host uid/gid of crun's container id 0 (1610612736)
#
# Writes nothing outside one mktemp -d directory except the JSON, the .md and the .png.
# crun and runsc keep their state under that directory (--root), run without cgroups
# (crun --cgroup-manager=disabled, runsc --ignore-cgroups) and are deleted on every exit path.

# jq programs are single-quoted on purpose ($c and the like are jq variables):
# shellcheck disable=SC2016
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

columns=(bare airlock-native airlock-bwrap airlock-gvisor airlock-oci bwrap crun runsc)
declare -A label=(
	[bare]="bare" [airlock-native]="airlock native" [airlock-bwrap]="airlock bwrap"
	[airlock-gvisor]="airlock gvisor" [airlock-oci]="airlock oci"
	[bwrap]="bwrap" [crun]="crun" [runsc]="runsc (ptrace)"
)
payloads=(true python node)
declare -A payload_title=([true]="/bin/true" [python]="python3 -c pass" [node]="node -e 0")

# ================================================================================
# Rendering: JSON -> markdown table and PNG chart. Used after a run and by --render.
# ================================================================================

# fmt_ms SECONDS — milliseconds with a precision that suits the size.
fmt_ms() {
	awk -v s="$1" 'BEGIN { ms = s * 1000; if (ms < 10) printf "%.2f", ms; else if (ms < 100) printf "%.1f", ms; else printf "%.0f", ms }'
}

# headline — a few lines naming every available column's figure (uses q, columns, label).
headline() {
	local c parts v what
	for what in true python node tp mem sys cpu; do
		parts=()
		for c in "${columns[@]}"; do
			[[ $c != bare && $(q --arg c "$c" '.columns[$c].available') == true ]] || continue
			case $what in
			true | python | node) v=$(q --arg c "$c" --arg p "$what" '.startup[$p][$c].median // empty')
				[[ -z $v ]] || v="$(fmt_ms "$v") ms" ;;
			tp) v=$(q --arg c "$c" '.throughput[$c].runs_per_s // empty | round') ;;
			mem) v=$(q --arg c "$c" '.memory[$c].pss_kib // empty')
				[[ -z $v ]] || v="$((v / 1024)).$(((v % 1024) * 10 / 1024)) MiB" ;;
			sys) v=$(q --arg c "$c" '.slowdown[$c].syscalls_ratio // empty')
				[[ -z $v ]] || v="$(printf '%.2f' "$v")x" ;;
			cpu) v=$(q --arg c "$c" '.slowdown[$c].cpu_ratio // empty')
				[[ -z $v ]] || v="$(printf '%.2f' "$v")x" ;;
			esac
			[[ -z $v ]] || parts+=("${label[$c]} **$v**")
		done
		((${#parts[@]})) || continue
		local IFS=';'
		v=$(printf '%s; ' "${parts[@]}")
		v=${v%; }
		unset IFS
		case $what in
		true) echo "- Start-up of \`/bin/true\` (median): $v (bare: $(fmt_ms "$(q '.startup.true.bare.median')") ms)." ;;
		python) echo "- Start-up of \`python3 -c pass\`: $v (bare: $(fmt_ms "$(q '.startup.python.bare.median')") ms)." ;;
		node) echo "- Start-up of \`node -e 0\`: $v (bare: $(fmt_ms "$(q '.startup.node.bare.median')") ms)." ;;
		tp) echo "- Throughput, \`/bin/true\` with 2 workers (runs/s): $v (bare: $(q '.throughput.bare.runs_per_s | round'))." ;;
		mem) echo "- Memory of the sandbox's own processes (PSS): $v." ;;
		sys) echo "- Syscall-heavy slowdown (open+fstat+close, vs bare): $v." ;;
		cpu) echo "- CPU-bound slowdown: $v." ;;
		esac
	done
}

render() {
	local json=$1 out=$2 md png gp
	need jq gnuplot
	md=$out/bench-backends.md
	png=$out/bench-backends.png
	# The plot's data files: in the run's temp dir, or (with --render) in one of our own.
	if [[ -n ${tmp:-} ]]; then
		gp=$tmp/plot
		mkdir -p "$gp"
	else
		gp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-backends-plot.XXXXXX")
		# shellcheck disable=SC2064 # expand now: the path is fixed
		trap "rm -rf -- '$gp'" EXIT
	fi

	# q EXPR — one value from the JSON (raw).
	q() { jq -r "$@" "$json"; }
	local c p cell v p95 why
	{
		echo "# airlock backends and peers, side by side"
		echo
		echo "Produced by [\`bench/backends.sh\`](../bench/backends.sh) in one run on $(q '.meta.date')."
		echo
		echo "- Machine: $(q '.meta.cpu_model'), $(q '.meta.cpus') CPUs, $(q '.meta.mem_gib') GiB RAM, $(q '.meta.os'), kernel $(q '.meta.kernel'); run as $(q '.meta.user')."
		echo "- Load average (1, 5, 15 min): $(q '.meta.load_before') before, $(q '.meta.load_after') after."
		echo "- airlock $(q '.meta.airlock_version') ($(q '.meta.airlock_commit')); $(q '.meta.versions | to_entries | map("\(.key) \(.value)") | join(", ")')."
		echo "- Settings: $(q '.meta.settings | to_entries | map("\(.key)=\(.value)") | join(", ")')."
		echo
		echo "**Noise.** This is a shared 2-core VM and other engineers were building and testing"
		echo "code while it ran: absolute figures move by tens of percent between runs. All columns"
		echo "were measured in this one run, under the same conditions, so read the **ratios between"
		echo "columns**, not the absolute values, and do not compare single cells across runs."
		echo
		echo "## Headline"
		echo
		headline
		echo
		echo "## Start-up latency (ms, median / p95)"
		echo
		echo "Each cell: the command started and waited for, wall time, hyperfine \`-N\` (no shell),"
		echo "$(q '.meta.settings.runs') timed runs after $(q '.meta.settings.warmup') warm-up runs; p95 computed from all times (nearest rank)."
		echo
		printf '| sandbox |'
		for p in "${payloads[@]}"; do printf ' `%s` |' "${payload_title[$p]}"; done
		printf ' /bin/true vs bare | /bin/true vs bwrap |\n'
		printf '|---|---:|---:|---:|---:|---:|\n'
		local bare_true bwrap_true
		bare_true=$(q '.startup.true.bare.median // empty')
		bwrap_true=$(q '.startup.true.bwrap.median // empty')
		for c in "${columns[@]}"; do
			if [[ $(q --arg c "$c" '.columns[$c].available') != true ]]; then
				why=$(q --arg c "$c" '.columns[$c].reason')
				printf '| %s | *not available: %s* | | | | |\n' "${label[$c]}" "$why"
				continue
			fi
			printf '| %s |' "${label[$c]}"
			for p in "${payloads[@]}"; do
				v=$(q --arg c "$c" --arg p "$p" '.startup[$p][$c].median // empty')
				p95=$(q --arg c "$c" --arg p "$p" '.startup[$p][$c].p95 // empty')
				if [[ -n $v ]]; then
					cell=$(q --arg c "$c" --arg p "$p" '.startup[$p][$c].failed // 0')
					((cell == 0)) && cell= || cell=" ($cell of $(q '.meta.settings.runs') runs failed)"
					printf ' %s / %s%s |' "$(fmt_ms "$v")" "$(fmt_ms "$p95")" "$cell"
				else
					cell=$(q --arg c "$c" --arg p "$p" '.startup[$p][$c].error // "not measured"')
					printf ' fails (%s) |' "$cell"
				fi
			done
			v=$(q --arg c "$c" '.startup.true[$c].median // empty')
			if [[ -n $v && -n $bare_true ]]; then printf ' %sx |' "$(ratio "$v" "$bare_true" 1)"; else printf ' |'; fi
			if [[ -n $v && -n $bwrap_true ]]; then printf ' %sx |\n' "$(ratio "$v" "$bwrap_true" 2)"; else printf ' |\n'; fi
		done
		echo
		echo "## Throughput, memory, slowdown"
		echo
		echo "- **Throughput**: \`/bin/true\` started $(q '.meta.settings.tp_count') times by 2 concurrent workers"
		echo "  (\`xargs -P 2\`), runs per second, median of $(q '.meta.settings.tp_rounds') round(s)."
		echo "- **Helper PSS**: while the payload is \`sleep\`, the sum of \`Pss\` (\`/proc/PID/smaps_rollup\`)"
		echo "  over the process tree the command started, the payload excluded: the sandbox's own cost."
		echo "- **Slowdown**: \`bench/workload.c\` times its own loop (start-up excluded); ns per"
		echo "  iteration inside / bare, median of $(q '.meta.settings.loop_rounds') round(s) interleaved across the columns."
		echo "  CPU-bound: $(q '.meta.settings.cpu_n') rounds of integer and floating-point work, no system calls."
		echo "  Syscall-heavy: $(q '.meta.settings.syscall_n') × \`open\` + \`fstat\` + \`close\` of /usr/lib/os-release."
		echo
		echo '| sandbox | runs/s (2 workers) | helper PSS (KiB) | helper processes | CPU-bound slowdown | syscall-heavy slowdown | syscall ns/iter |'
		echo '|---|---:|---:|---|---:|---:|---:|'
		for c in "${columns[@]}"; do
			[[ $(q --arg c "$c" '.columns[$c].available') == true ]] || continue
			q --arg c "$c" --arg lbl "${label[$c]}" '
				def num(f): if f == null then "—" else f end;
				def r2: (. * 100 | round) as $n | "\($n / 100 | floor).\($n % 100 | tostring | if length < 2 then "0" + . else . end)";
				"| \($lbl) | \(num(.throughput[$c].runs_per_s | if . then round else null end) // (.throughput[$c].error // "—"))"
				+ " | \(if $c == "bare" then "—" else num(.memory[$c].pss_kib) end)\(if (.memory[$c].unreadable // 0) > 0 then " (+\(.memory[$c].unreadable) unreadable)" else "" end)"
				+ " | \(if $c == "bare" then "—" else (.memory[$c].procs // .memory[$c].error // "—") end)"
				+ " | \(if .slowdown[$c].cpu_ratio then "\(.slowdown[$c].cpu_ratio | r2)x" else (.slowdown[$c].error // "—") end)"
				+ " | \(if .slowdown[$c].syscalls_ratio then "\(.slowdown[$c].syscalls_ratio | r2)x" else (.slowdown[$c].error // "—") end)"
				+ " | \(num(.slowdown[$c].syscalls_ns | if . then round else null end)) |"'
		done
		echo
		echo "## How each column runs"
		echo
		q '.columns | to_entries[] | select(.value.available) | "- **\(.key)**: `\(.value.command)`"'
		echo
		echo "Notes:"
		echo
		q '.notes[] | "- \(.)"'
		echo
		echo "Regenerate: \`bench/backends.sh\` (as root; \`BENCH_QUICK=1\` for a short test run), or"
		echo "\`bench/backends.sh --render FILE.json\` to redraw this page and the chart from a kept JSON."
	} >"$md.tmp"
	mv "$md.tmp" "$md"

	# --- chart ------------------------------------------------------------------------
	local shown=()
	for c in "${columns[@]}"; do
		[[ $(q --arg c "$c" '.columns[$c].available') == true ]] && shown+=("$c")
	done
	: >"$gp/startup.dat"
	: >"$gp/slowdown.dat"
	for c in "${shown[@]}"; do
		{
			printf '"%s"' "${label[$c]}"
			for p in "${payloads[@]}"; do
				v=$(q --arg c "$c" --arg p "$p" '.startup[$p][$c].median // empty')
				if [[ -n $v ]]; then printf ' %s' "$(awk -v s="$v" 'BEGIN { printf "%.4f", s * 1000 }')"; else printf ' ?'; fi
			done
			echo
		} >>"$gp/startup.dat"
		[[ $c == bare ]] && continue
		printf '"%s" %s %s\n' "${label[$c]}" \
			"$(q --arg c "$c" '.slowdown[$c].cpu_ratio // "?"')" \
			"$(q --arg c "$c" '.slowdown[$c].syscalls_ratio // "?"')" >>"$gp/slowdown.dat"
	done
	cat >"$gp/plot.gp" <<EOF
set terminal pngcairo size 1500,620 font "DejaVu Sans,11"
set output "$png"
set datafile missing "?"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics mytics
set key top left
set xtics rotate by -30 nomirror
set logscale y
set multiplot layout 1,2 title "airlock backends and peers — $(q '.meta.date'), $(q '.meta.cpus') CPUs, kernel $(q '.meta.kernel') (one run; shared, noisy VM)"
set title "Start-up latency, median (ms, log scale)"
set yrange [0.1:*]
set format y "%g"
plot "$gp/startup.dat" using 2:xticlabels(1) title "/bin/true" lc rgb "#4c72b0", \
     "" using 3 title "python3 -c pass" lc rgb "#dd8452", \
     "" using 4 title "node -e 0" lc rgb "#55a868"
set title "Slowdown vs bare, in-process loop (x, log scale)"
set yrange [0.5:*]
plot "$gp/slowdown.dat" using 2:xticlabels(1) title "CPU-bound" lc rgb "#8172b3", \
     "" using 3 title "syscall-heavy (open+fstat+close)" lc rgb "#c44e52", \
     1 with lines lc rgb "#333333" dt 2 notitle
unset multiplot
EOF
	gnuplot "$gp/plot.gp" || die "gnuplot failed on $gp/plot.gp"
	echo "wrote $md and $png" >&2
}

if [[ ${1:-} == --render ]]; then
	[[ -f ${2:-} ]] || die "usage: $bench_name --render FILE.json"
	render "$2" "${BENCH_OUT:-$repo/docs}"
	exit 0
fi

# ================================================================================
# Measuring.
# ================================================================================

# Every column gets the same small environment. airlock scrubs the environment, bwrap,
# crun and runsc pass or set their own, and the host's matters: with this VM's
# NODE_EXTRA_CA_CERTS, node parses the whole CA bundle at every start (~25 ms) where the
# file is visible and not where it is not. So the whole run re-executes itself under
# env -i with PATH, HOME, TMPDIR and this script's own knobs only.
if [[ -z ${AIRLOCK_BENCH_CLEAN_ENV:-} ]]; then
	keep=(AIRLOCK_BENCH_CLEAN_ENV=1 "PATH=$PATH" "HOME=${HOME:-/}" LANG=C.UTF-8)
	for v in TMPDIR AIRLOCK BENCH_QUICK WARMUP RUNS TP_COUNT TP_ROUNDS SYSCALL_N CPU_N LOOP_ROUNDS BENCH_RESULTS BENCH_OUT OCI_ID_BASE; do
		[[ -z ${!v+x} ]] || keep+=("$v=${!v}")
	done
	exec env -i "${keep[@]}" bash "$0" "$@"
fi

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	warmup=${WARMUP:-1} runs=${RUNS:-5} tp_count=${TP_COUNT:-20} tp_rounds=${TP_ROUNDS:-1}
	syscall_n=${SYSCALL_N:-5000} cpu_n=${CPU_N:-5000000} loop_rounds=${LOOP_ROUNDS:-1}
else
	warmup=${WARMUP:-5} runs=${RUNS:-60} tp_count=${TP_COUNT:-200} tp_rounds=${TP_ROUNDS:-3}
	syscall_n=${SYSCALL_N:-50000} cpu_n=${CPU_N:-50000000} loop_rounds=${LOOP_ROUNDS:-5}
fi
oci_id_base=${OCI_ID_BASE:-1610612736}

need hyperfine jq gcc xargs
need_hyperfine_n
find_airlock
json_tool=jq

# Absolute interpreter paths: PATH differs between the host (a pyenv shim may come
# first) and the sandboxes, and a shim would time a shell script, not python.
python_bin=$(command -v /usr/bin/python3 || true)
node_bin=$(command -v /usr/bin/node || true)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/airlock-backends.XXXXXX")
[[ $tmp != *[[:space:]]* ]] || die "the temp dir '$tmp' contains white space (hyperfine -N splits on it); set TMPDIR"
holder=

# Every exit path: delete the crun and runsc containers we created (all live under our
# own --root), stop the mount-namespace holder we started, remove the temp dir.
cleanup() {
	local id
	set +e
	if [[ -d $tmp/crun-state ]] && command -v crun >/dev/null; then
		for id in $("${crun_pre[@]}" crun --root "$tmp/crun-state" list -q 2>/dev/null); do
			"${crun_pre[@]}" crun --root "$tmp/crun-state" delete -f "$id" >/dev/null 2>&1
		done
	fi
	if [[ -d $tmp/runsc-state ]] && command -v runsc >/dev/null; then
		for id in $("${runsc_cmd[@]}" list -q 2>/dev/null); do
			"${runsc_cmd[@]}" kill "$id" KILL >/dev/null 2>&1
			"${runsc_cmd[@]}" delete --force "$id" >/dev/null 2>&1
		done
	fi
	if [[ -n $holder ]]; then
		kill "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	fi
	rm -rf -- "$tmp"
}
crun_pre=()
runsc_cmd=()
trap cleanup EXIT
trap 'exit 130' INT TERM

res=$tmp/results.jsonl
: >"$res"
# record JSON — one result line (a JSON object made by jq -nc).
record() { echo "$1" >>"$res"; }
note() { record "$(jq -nc --arg n "$*" '{section: "note", text: $n}')"; }

# --- the workload binary ------------------------------------------------------------
# Static, in its own directory, bound read-only at /bench everywhere (as in workload.sh).
chmod 0755 "$tmp"
mkdir "$tmp/bin"
gcc -O2 -static -Wall -Wextra -o "$tmp/bin/workload" "$here/workload.c" -lm ||
	die "cannot build $here/workload.c (a static build needs libc6-dev's libc.a)"
chmod 0755 "$tmp/bin" "$tmp/bin/workload"

# payload_argv KEY [BENCHDIR] — the payload's argv, one word per line.
payload_argv() {
	local wl=${2:-/bench}/workload
	case $1 in
	true) echo /bin/true ;;
	python) printf '%s\n' "$python_bin" -c pass ;;
	node) printf '%s\n' "$node_bin" -e 0 ;;
	sleep) printf '%s\n' /bin/sleep 6 ;;
	syscalls) printf '%s\n' "$wl" syscalls "$syscall_n" ;;
	cpu) printf '%s\n' "$wl" cpu "$cpu_n" ;;
	esac
}
needs_bench() { [[ $1 == syscalls || $1 == cpu ]]; }

# --- OCI bundles for crun and runsc -------------------------------------------------
# One shared rootfs directory: empty mount points, plus the host's top-level symlinks
# (merged /usr) or read-only binds of those dirs. The hardening matches the bwrap
# line: every namespace, read-only root, /usr read-only, fresh /proc, a small /dev, a
# tmpfs /tmp, no capabilities at all, no_new_privs, an unprivileged uid; no seccomp
# profile (the bwrap line has none either).
rootfs=$tmp/rootfs
mkdir -p "$rootfs"/{usr,proc,dev,tmp,bench}
extra_mounts='[]'
for top in bin lib lib32 lib64 libx32 sbin; do
	if [[ -L /$top ]]; then
		ln -s "$(readlink "/$top")" "$rootfs/$top"
	elif [[ -d /$top ]]; then
		mkdir "$rootfs/$top"
		extra_mounts=$(jq -c --arg d "/$top" '. + [{destination: $d, type: "bind", source: $d, options: ["rbind", "ro", "nosuid", "nodev"]}]' <<<"$extra_mounts")
	fi
done
chmod -R go+rX "$rootfs"

# bundle RUNTIME KEY — makes $tmp/oci/RUNTIME-KEY/config.json, prints the bundle dir.
# runsc's bundle has no user namespace: runsc (20221219) then fails in its gofer here
# ("mounting root on root: permission denied"); gVisor's own kernel is the boundary.
bundle() {
	local rt=$1 key=$2 dir=$tmp/oci/$1-$2 args userns=true uid=65534
	mkdir -p "$dir"
	args=$(payload_argv "$key" | jq -R . | jq -sc .)
	[[ $rt == runsc ]] && userns=false
	local map_host=$oci_id_base map_size=65536
	if ((EUID != 0)); then
		map_host=$EUID map_size=1 uid=0
	fi
	jq -n --argjson args "$args" --argjson extra "$extra_mounts" --arg root "$rootfs" \
		--argjson userns "$userns" --argjson uid "$uid" --argjson mh "$map_host" --argjson ms "$map_size" \
		--arg bench "$tmp/bin" --argjson wantbench "$(needs_bench "$key" && echo true || echo false)" '
	{
		ociVersion: "1.0.2",
		process: {
			terminal: false,
			user: {uid: $uid, gid: $uid},
			args: $args,
			env: ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"],
			cwd: "/tmp",
			capabilities: {bounding: [], effective: [], permitted: [], inheritable: [], ambient: []},
			rlimits: [{type: "RLIMIT_NOFILE", hard: 1024, soft: 1024}],
			noNewPrivileges: true
		},
		root: {path: $root, readonly: true},
		hostname: "bench",
		mounts: ([
			{destination: "/usr", type: "bind", source: "/usr", options: ["rbind", "ro", "nosuid", "nodev"]},
			{destination: "/proc", type: "proc", source: "proc"},
			{destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "strictatime", "mode=755", "size=65536k"]},
			{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"]}
		] + $extra + (if $wantbench then [{destination: "/bench", type: "bind", source: $bench, options: ["rbind", "ro", "nosuid", "nodev"]}] else [] end)),
		linux: ({
			namespaces: ([{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"}, {type: "cgroup"}]
				+ (if $userns then [{type: "user"}] else [] end)),
			maskedPaths: [],
			readonlyPaths: []
		} + (if $userns then {
			uidMappings: [{containerID: 0, hostID: $mh, size: $ms}],
			gidMappings: [{containerID: 0, hostID: $mh, size: $ms}]
		} else {} end))
	}' >"$dir/config.json"
	echo "$dir"
}

# crun 1.8 refuses every container on a hybrid cgroup host whose v2 hierarchy has a
# controller ("cgroups in hybrid mode not supported"), even with cgroups disabled. It
# decides from statfs of /sys/fs/cgroup/unified, so crun runs in a mount namespace we
# hold open where an empty tmpfs hides that directory (private to that namespace; the
# host's mounts are untouched). Entering it costs one exec of nsenter per start,
# which the script times on its own and reports.
if command -v crun >/dev/null 2>&1 && [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) == tmpfs ]] &&
	[[ -n $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null) ]]; then
	if ((EUID == 0)) && command -v unshare >/dev/null && command -v nsenter >/dev/null; then
		unshare --mount --propagation private -- sh -c \
			'mount -t tmpfs -o size=4k,mode=755 airlock-bench-nocg /sys/fs/cgroup/unified && exec sleep 86400' &
		holder=$!
		for _ in $(seq 50); do
			[[ $(readlink "/proc/$holder/ns/mnt" 2>/dev/null) != "$(readlink /proc/self/ns/mnt)" ]] &&
				[[ $(cat "/proc/$holder/comm" 2>/dev/null) == sleep ]] && break
			sleep 0.05
		done
		crun_pre=(nsenter "--mount=/proc/$holder/ns/mnt" --)
		note "crun 1.8 refuses to run on a hybrid cgroup host whose v2 hierarchy has a controller (here: $(tr -s '\n' ' ' </sys/fs/cgroup/unified/cgroup.controllers | sed 's/ $//')), even with --cgroup-manager=disabled; crun is therefore run through \`nsenter --mount\` into a mount namespace where an empty tmpfs hides /sys/fs/cgroup/unified. Its figures include one exec of nsenter (timed separately: see nsenter below)."
	fi
fi
mkdir -p "$tmp/crun-state" "$tmp/runsc-state"
runsc_flags=(--root "$tmp/runsc-state" --ignore-cgroups --network=none --platform=ptrace)
((EUID == 0)) || runsc_flags=(--rootless "${runsc_flags[@]}")
runsc_cmd=(runsc "${runsc_flags[@]}")

# cmd COL KEY [ID] — the command line (one string, words split on spaces as hyperfine
# -N does) that runs payload KEY in column COL; ID names the OCI container.
cmd() {
	local col=$1 key=$2 id=${3:-b-$2} argv b
	argv=$(payload_argv "$key" | tr '\n' ' ')
	argv=${argv% }
	case $col in
	bare) payload_argv "$key" "$tmp/bin" | tr '\n' ' ' | sed 's/ $//' ;;
	airlock-*)
		# --cpus none: the default policy's 0.5-CPU quota would throttle python's and node's
		# start and halve the CPU-bound loop; no peer has a CPU limit. Everything else is
		# the default policy.
		local ro=()
		needs_bench "$key" && ro=(--ro "$tmp/bin:/bench")
		join "$airlock" run --backend "${col#airlock-}" --cpus none "${ro[@]}" -- "$argv"
		;;
	bwrap)
		local ro=()
		needs_bench "$key" && ro=(--ro-bind "$tmp/bin" /bench)
		join bwrap "${bwrap_args[@]}" "${ro[@]}" -- "$argv"
		;;
	crun)
		b=$(bundle crun "$key")
		join "${crun_pre[@]}" crun --root "$tmp/crun-state" --cgroup-manager=disabled run --bundle "$b" "$id"
		;;
	runsc)
		b=$(bundle runsc "$key")
		join "${runsc_cmd[@]}" run --bundle "$b" "$id"
		;;
	esac
}

# try CMDLINE — run it once; on failure print the last line of its output.
try() {
	local out
	# shellcheck disable=SC2086 # split on spaces, as hyperfine -N does
	if out=$(timeout 120 $1 </dev/null 2>&1); then
		return 0
	fi
	out=$(grep -v '^\s*$' <<<"$out" | grep -v 'Unsupported syscall' | tail -n 1)
	echo "${out:-exit status non-zero}" | cut -c1-160
	return 1
}

# --- which columns can run here ----------------------------------------------------
declare -A avail reason
unlisted=0
"$airlock" check --json >"$tmp/check.json" 2>/dev/null || die "airlock check --json failed"
for c in "${columns[@]}"; do
	avail[$c]=false
	reason[$c]=
	case $c in
	bare) ;;
	airlock-*)
		# `airlock check --json` decides: .backend_layers.B.available. A backend it does
		# not list at all (an airlock older than the backend's check entry) is tried, and
		# counts when it runs; one it lists as unavailable is not tried.
		b=${c#airlock-}
		case $(jq -r --arg b "$b" '.backend_layers[$b].available | if . == null then "unlisted" else tostring end' "$tmp/check.json") in
		true) ;;
		unlisted) unlisted=1 ;;
		*)
			reason[$c]="\`airlock check --json\` says the $b backend is not available here"
			e=$(jq -r --arg b "$b" '.backend_layers[$b].error // empty' "$tmp/check.json")
			[[ -z $e ]] || reason[$c]+=" ($e)"
			;;
		esac
		;;
	bwrap | crun | runsc)
		command -v "$c" >/dev/null 2>&1 || reason[$c]="$c is not installed"
		;;
	esac
	if [[ -z ${reason[$c]} ]]; then
		if msg=$(try "$(cmd "$c" true)"); then
			avail[$c]=true
			((!unlisted)) || note "${label[$c]}: this airlock's \`check --json\` has no backend_layers entry for the ${c#airlock-} backend; it was measured because it runs."
		elif ((unlisted)); then
			reason[$c]="not in \`airlock check --json\`, and \`/bin/true\` fails: $msg"
		else
			reason[$c]="\`/bin/true\` fails: $msg"
		fi
	fi
	unlisted=0
	printf '%-16s %s\n' "$c" "$([[ ${avail[$c]} == true ]] && echo available || echo "not available: ${reason[$c]}")" >&2
	cmd_shown=$(cmd "$c" true)
	cmd_shown=${cmd_shown//$tmp/\$TMP}
	cmd_shown=${cmd_shown//$airlock/airlock}
	[[ -z $holder ]] || cmd_shown=${cmd_shown//\/proc\/$holder\//\/proc\/\$HOLDER\/}
	record "$(jq -nc --arg c "$c" --argjson a "${avail[$c]}" --arg r "${reason[$c]}" --arg cmd "$cmd_shown" \
		'{section: "column", col: $c, available: $a, reason: $r, command: $cmd}')"
done
avail_cols=()
for c in "${columns[@]}"; do [[ ${avail[$c]} == true ]] && avail_cols+=("$c"); done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "Before: $(load_note)" >&2

# --- start-up latency ----------------------------------------------------------------
# One hyperfine run per payload over every column that runs it, so the columns of one
# payload are timed in the same minute. p95 from all times (nearest rank).
for p in "${payloads[@]}"; do
	# -i: a run that fails does not abort the whole comparison; failed runs are left out
	# of the figures below and counted. runsc reuses the container id from one run to the
	# next, and about 1 run in 100 then finds the previous sandbox's control socket still
	# bound ("address already in use"): its prepare step waits 50 ms (outside the timing);
	# every other command gets a no-op prepare (hyperfine takes one per command or one for all).
	hf=(hyperfine -N -i --warmup "$warmup" --runs "$runs" --style basic --export-json "$tmp/startup-$p.json")
	n=0
	for c in "${avail_cols[@]}"; do
		line=$(cmd "$c" "$p")
		if [[ $p == python && -z $python_bin ]] || [[ $p == node && -z $node_bin ]]; then
			msg="not installed on the host"
		elif msg=$(try "$line"); then
			if [[ $c == runsc ]]; then prep="sleep 0.05"; else prep=/bin/true; fi
			hf+=(-n "$c" --prepare "$prep" "$line")
			n=$((n + 1))
			continue
		fi
		record "$(jq -nc --arg p "$p" --arg c "$c" --arg e "$msg" '{section: "startup", payload: $p, col: $c, error: $e}')"
	done
	if [[ $p == true && -n $holder ]]; then
		# What crun's nsenter wrapper costs by itself.
		hf+=(-n nsenter --prepare /bin/true "$(join "${crun_pre[@]}" /bin/true)")
	fi
	((n > 0)) || continue
	echo "== start-up: ${payload_title[$p]}" >&2
	"${hf[@]}" >&2
	# Statistics over the successful runs only (hyperfine's own include the failed ones).
	jq -c --arg p "$p" '.results[]
		| ([.times, .exit_codes] | transpose | map(select(.[1] == 0) | .[0]) | sort) as $t
		| ($t | length) as $n
		| {section: "startup", payload: $p, col: .command, n: $n, failed: ((.times | length) - $n)}
		+ if $n == 0 then {error: "every run failed"} else {
			median: (if $n % 2 == 1 then $t[($n - 1) / 2] else ($t[$n / 2 - 1] + $t[$n / 2]) / 2 end),
			mean: ($t | add / $n), min: $t[0], max: $t[$n - 1],
			p95: $t[(($n * 0.95) | ceil) - 1]} end' "$tmp/startup-$p.json" >>"$res"
done

# --- throughput: 2 concurrent workers --------------------------------------------------
# A fixed count of /bin/true starts, 2 at a time (xargs -P 2 starts each command
# directly, no shell); runs per second = count / elapsed. Rounds interleave the columns.
echo "== throughput: $tp_count × /bin/true, 2 workers, $tp_rounds round(s)" >&2
for ((r = 0; r < tp_rounds; r++)); do
	for c in "${avail_cols[@]}"; do
		line=$(cmd "$c" true "tp{}")
		[[ $c == crun || $c == runsc ]] || line+=" {}" # bare, bwrap, airlock: /bin/true ignores the extra argument
		t0=$(date +%s%N)
		# shellcheck disable=SC2086
		if seq 1 "$tp_count" | xargs -P 2 -I{} $line >/dev/null 2>"$tmp/tp-err"; then
			t1=$(date +%s%N)
			awk -v n="$tp_count" -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", n / (ns / 1e9) }' >>"$tmp/tp-$c"
		else
			echo "throughput $c failed: $(tail -n 1 "$tmp/tp-err")" >&2
			tail -n 1 "$tmp/tp-err" | cut -c1-160 >"$tmp/tp-fail-$c"
		fi
	done
done
for c in "${avail_cols[@]}"; do
	if [[ -s $tmp/tp-$c ]]; then
		record "$(jq -nc --arg c "$c" --argjson v "$(median_of "$tmp/tp-$c")" --argjson all "$(jq -sc . "$tmp/tp-$c")" \
			'{section: "throughput", col: $c, runs_per_s: $v, rounds: $all}')"
	else
		record "$(jq -nc --arg c "$c" --arg e "fails: $(cat "$tmp/tp-fail-$c" 2>/dev/null)" '{section: "throughput", col: $c, error: $e}')"
	fi
	printf '  %-16s %s runs/s\n' "$c" "$(median_of "$tmp/tp-$c" 2>/dev/null || echo '?')" >&2
done

# --- memory of the helper processes ------------------------------------------------
# Payload `sleep 6`. Once it runs (a host process named sleep appears in the tree; under
# runsc the payload lives inside the sandbox's stub processes, so we wait for the tree
# to settle instead), sum Pss over every process of the tree except the payload.
echo "== memory (PSS of the helper processes, payload sleep 6)" >&2
for c in "${avail_cols[@]}"; do
	[[ $c == bare ]] && continue
	line=$(cmd "$c" sleep m-sleep)
	# shellcheck disable=SC2086
	$line </dev/null >/dev/null 2>&1 &
	root=$!
	found=false
	# Up to 2 s of wall time (the walk itself is slow on a loaded machine), then 0.3 s to settle.
	deadline=$(($(date +%s%N) + 2000000000))
	while (($(date +%s%N) < deadline)); do
		for p in $(proc_tree "$root"); do
			[[ $(cat /proc/"$p"/comm 2>/dev/null) == sleep ]] && found=true
		done
		[[ $found == true ]] && break
		sleep 0.05
	done
	sleep 0.3
	total=0 nproc_=0 unreadable=0 comms=()
	while read -r p; do
		comm=$(cat /proc/"$p"/comm 2>/dev/null) || continue
		[[ $comm == sleep ]] && continue
		kib=$(pss_kib "$p")
		nproc_=$((nproc_ + 1))
		comms+=("$comm")
		if [[ $kib == "?" ]]; then unreadable=$((unreadable + 1)); else total=$((total + kib)); fi
	done < <(proc_tree "$root")
	kill "$root" 2>/dev/null || true # crun, runsc, bwrap and airlock take the payload down with them
	wait "$root" || true
	if ((nproc_ == 0)); then
		echo "  $c: the sandbox had exited before it was measured" >&2
		record "$(jq -nc --arg c "$c" '{section: "memory", col: $c, error: "exited before it was measured"}')"
		continue
	fi
	summary=$(printf '%s\n' "${comms[@]}" | sort | uniq -c | awk '{ printf "%s%s×%s", (NR > 1 ? ", " : ""), $1, $2 }')
	printf '  %-16s %6s KiB in %d processes (%s)%s\n' "$c" "$total" "$nproc_" "$summary" \
		"$( ((unreadable == 0)) || echo " +$unreadable unreadable")" >&2
	record "$(jq -nc --arg c "$c" --argjson t "$total" --argjson n "$nproc_" --argjson u "$unreadable" --arg s "$summary" \
		--argjson payload_seen "$found" \
		'{section: "memory", col: $c, pss_kib: $t, procs: "\($n): \($s)", unreadable: $u, payload_seen: $payload_seen}')"
done

# --- slowdown of a CPU-bound and a syscall-heavy workload ------------------------
# The workload times its own loop, so start-up is not in these figures. Rounds are
# interleaved across the columns so drifting load hits them alike.
echo "== slowdown: syscalls $syscall_n, cpu $cpu_n, $loop_rounds round(s)" >&2
declare -A wl_fail
for c in "${avail_cols[@]}"; do
	for w in syscalls cpu; do
		msg=$(try "$(cmd "$c" "$w")") || wl_fail[$c]="fails: $msg"
	done
done
for ((r = 0; r < loop_rounds; r++)); do
	for c in "${avail_cols[@]}"; do
		[[ -z ${wl_fail[$c]:-} ]] || continue
		for w in syscalls cpu; do
			line=$(cmd "$c" "$w")
			# shellcheck disable=SC2086
			$line </dev/null 2>/dev/null | sed -n 's/.*ns_per_iter=\([0-9.]*\).*/\1/p' >>"$tmp/wl-$c-$w"
		done
	done
done
for c in "${avail_cols[@]}"; do
	if [[ -n ${wl_fail[$c]:-} ]]; then
		record "$(jq -nc --arg c "$c" --arg e "${wl_fail[$c]}" '{section: "slowdown", col: $c, error: $e}')"
		continue
	fi
	s=$(median_of "$tmp/wl-$c-syscalls") u=$(median_of "$tmp/wl-$c-cpu")
	record "$(jq -nc --arg c "$c" --argjson s "$s" --argjson u "$u" '{section: "slowdown", col: $c, syscalls_ns: $s, cpu_ns: $u}')"
	printf '  %-16s syscalls %s ns/iter, cpu %s ns/iter\n' "$c" "$s" "$u" >&2
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "After: $(load_note)" >&2

# --- notes on what the columns are -------------------------------------------------------
note "airlock columns run \`airlock run --backend B --cpus none -- CMD\`: the default policy (all namespaces, read-only root, seccomp where the backend has it, Landlock where it has it, memory and pids limits, cgroup accounting, supervision and a verdict) except the CPU quota (default 0.5 CPU), which would throttle the interpreters' start and halve the CPU-bound loop while no peer has a CPU limit. They do more per start than the bare peers."
note "bwrap is the hardened line of bench/startup.sh (bench/lib.sh): every namespace, /usr read-only, fresh /proc, /dev and /tmp; no seccomp filter, no cgroups."
note "crun and runsc run a generated OCI bundle with the same view (read-only root, /usr read-only, /proc, a tmpfs /dev and /tmp), no capabilities, no_new_privs, uid 65534, no seccomp profile and no cgroups (crun --cgroup-manager=disabled, runsc --ignore-cgroups); their state lives under a private --root that is removed afterwards."
note "crun's bundle has a user namespace (as root: container ids 0-65535 on host ids from $oci_id_base); runsc's has none: runsc 20221219 fails in its gofer with one here, and gVisor's own kernel is its boundary."
note "runsc uses --platform=ptrace (what this Debian build supports here without KVM set-up); its syscall-heavy slowdown is that platform's cost. Its helper PSS counts the runsc CLI, the gofer, the sentry and the ptrace stub processes, in which the payload's own (tiny) address space also lives."
note "Helper PSS as root; \`?\`/unreadable counts processes whose smaps could not be read."
note "Throughput depends on 2 CPUs shared with other work; a figure above about 1000 runs/s is bounded by xargs itself."

# --- the JSON ------------------------------------------------------------------------------
stamp=$(date -u +%Y%m%d-%H%M%S)
results_dir=${BENCH_RESULTS:-$repo/bench/results}
mkdir -p "$results_dir"
json_out=$results_dir/backends-$stamp.json
git_desc=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$repo" status --porcelain -- src 2>/dev/null) ]]; then
	git_desc+=" + uncommitted changes in src/"
fi
ver() { "$@" 2>/dev/null | head -n 1 | grep -oE '[0-9][0-9.~a-z+-]*[0-9]' | head -n 1 || true; }
jq -s \
	--arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
	--arg kernel "$(uname -r)" \
	--arg cpus "$(nproc)" \
	--arg cpu_model "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
	--arg mem_gib "$(awk '/^MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" \
	--arg os "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-Linux}")" \
	--arg user "$(id -un)" \
	--arg lb "$load_before" --arg la "$load_after" \
	--arg av "$("$airlock" version 2>/dev/null | awk '{ print $NF }')" --arg ac "$git_desc" \
	--arg v_bwrap "$(ver bwrap --version)" --arg v_crun "$(ver crun --version)" \
	--arg v_runsc "$(ver runsc --version)" --arg v_hf "$(ver hyperfine --version)" \
	--arg v_py "$(ver "$python_bin" --version)" --arg v_node "$(ver "$node_bin" --version)" \
	--argjson settings "$(jq -nc --argjson warmup "$warmup" --argjson runs "$runs" --argjson tp_count "$tp_count" \
		--argjson tp_rounds "$tp_rounds" --argjson syscall_n "$syscall_n" --argjson cpu_n "$cpu_n" \
		--argjson loop_rounds "$loop_rounds" --argjson quick "${BENCH_QUICK:-0}" \
		'{quick: $quick, warmup: $warmup, runs: $runs, tp_count: $tp_count, tp_rounds: $tp_rounds, syscall_n: $syscall_n, cpu_n: $cpu_n, loop_rounds: $loop_rounds}')" '
	. as $all
	| ($all | map(select(.section == "slowdown" and .col == "bare")) | first) as $bare
	| {
		meta: {date: $date, kernel: $kernel, cpus: $cpus, cpu_model: $cpu_model, mem_gib: $mem_gib, os: $os, user: $user,
			load_before: $lb, load_after: $la, airlock_version: $av, airlock_commit: $ac,
			versions: ({bwrap: $v_bwrap, crun: $v_crun, runsc: $v_runsc, hyperfine: $v_hf, python3: $v_py, node: $v_node}
				| with_entries(select(.value != ""))),
			settings: $settings},
		columns: (map(select(.section == "column")) | map({key: .col, value: (del(.section, .col))}) | from_entries),
		startup: (map(select(.section == "startup")) | group_by(.payload)
			| map({key: .[0].payload, value: (map({key: .col, value: del(.section, .payload, .col)}) | from_entries)}) | from_entries),
		throughput: (map(select(.section == "throughput")) | map({key: .col, value: del(.section, .col)}) | from_entries),
		memory: (map(select(.section == "memory")) | map({key: .col, value: del(.section, .col)}) | from_entries),
		slowdown: (map(select(.section == "slowdown"))
			| map({key: .col, value: (del(.section, .col)
				+ (if .syscalls_ns and $bare.syscalls_ns then {syscalls_ratio: (.syscalls_ns / $bare.syscalls_ns), cpu_ratio: (.cpu_ns / $bare.cpu_ns)} else {} end))})
			| from_entries),
		notes: map(select(.section == "note") | .text)
	}' "$res" >"$json_out"
echo "wrote $json_out" >&2

# nsenter's own cost, for the note on crun.
if [[ -n $holder ]]; then
	jq -r '"nsenter alone: \(.startup.true.nsenter.median * 1000 * 100 | round / 100) ms median (bare /bin/true: \(.startup.true.bare.median * 1000 * 100 | round / 100) ms)"' "$json_out" >&2
	tmpj=$(jq '.notes += ["nsenter: `nsenter --mount=... -- /bin/true` took \(.startup.true.nsenter.median * 1000 * 100 | round / 100) ms median against \(.startup.true.bare.median * 1000 * 100 | round / 100) ms bare: about \((.startup.true.nsenter.median - .startup.true.bare.median) * 1000 * 100 | round / 100) ms of every crun figure is this wrapper."]' "$json_out")
	echo "$tmpj" >"$json_out"
fi

if [[ ${BENCH_OUT:-} != none ]]; then
	render "$json_out" "${BENCH_OUT:-$repo/docs}"
fi
