#!/usr/bin/env bash
# cgview.sh — a job reads its own cgroup limits at /sys/fs/cgroup (read-only, as Docker shows them)
# and nothing of the host's cgroup tree (issue 14, part 2): --memory 300M shows 314572800 in
# memory.max (v2) or memory/memory.limit_in_bytes (v1), --pids and --cpus show theirs; every write
# there fails and the limit read from outside is unchanged; no other cgroup is visible; node's
# process.constrainedMemory() reports the limit; a held sandbox (airlock serve) shows its own cgroup.
. "$(dirname "$0")/../lib.sh"

# The files of each limit, by the layout the sandbox shows: cgroup2 at the top, or v1 per hierarchy.
# shellcheck disable=SC2016 # expanded inside the sandbox
LIMITS='if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	echo layout=v2
	echo memory=$(cat /sys/fs/cgroup/memory.max)
	echo pids=$(cat /sys/fs/cgroup/pids.max)
	echo cpu=$(cut -d" " -f1 /sys/fs/cgroup/cpu.max)
else
	echo layout=v1
	echo memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
	echo pids=$(cat /sys/fs/cgroup/pids/pids.max)
	echo cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)
fi'

# gVisor has a sysfs and a cgroupfs of its own: /sys/fs/cgroup inside is gVisor's, empty; the job's
# limits are the host cgroup's around the Sentry and its gofer, and are not shown (docs/backends.md).
if al_backend_is gvisor; then
	# shellcheck disable=SC2016 # expanded inside the sandbox
	al_run run --memory 300M -- /bin/sh -c 'for f in /sys/fs/cgroup/*; do echo "entry $f"; done
		{ echo 1 >/sys/fs/cgroup/memory.max; } 2>/dev/null && echo wrote; true'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" "entry /sys/fs/cgroup/*" "/sys/fs/cgroup under gVisor"
	al_pass "gVisor shows its own empty /sys/fs/cgroup: nothing of the host's cgroups, nothing written"
	exit 0
fi

# ---- the limits, read inside
al_run run --memory 300M --pids 77 --cpus 1.5 -- /bin/sh -c "$LIMITS"
al_assert_rc 0
layout=$(al_kv layout)
al_assert_eq "$(al_kv memory)" 314572800 "memory limit read inside ($layout)"
al_assert_eq "$(al_kv pids)" 77 "pids limit read inside ($layout)"
al_assert_eq "$(al_kv cpu)" 150000 "CPU quota per 100 ms read inside ($layout)"
al_pass "the job reads its memory, pids and CPU limits at /sys/fs/cgroup ($layout layout)"

# ---- read-only: mount flags, and every write refused (judged from outside below)
# shellcheck disable=SC2016 # expanded inside the sandbox
al_run run --memory 300M -- /bin/sh -c '
	awk '\''$5 ~ "^/sys/fs/cgroup" { print "mount", $5, $4, $6 }'\'' /proc/self/mountinfo
	for f in $(find /sys/fs/cgroup -name "*.max" -o -name "*limit_in_bytes" -o -name cgroup.procs -o -name "cpu.cfs_quota_us"); do
		if { echo 1 >"$f"; } 2>/dev/null; then echo "wrote $f"; else echo "refused $f"; fi
	done
	for d in /sys/fs/cgroup /sys/fs/cgroup/memory; do
		[ -d "$d" ] || continue
		if mkdir "$d/sub" 2>/dev/null || touch "$d/new" 2>/dev/null; then echo "created in $d"; else echo "refused in $d"; fi
	done'
al_assert_rc 0
al_assert_not_contains "$AL_OUT" "wrote " "a write to a cgroup file inside"
al_assert_not_contains "$AL_OUT" "created in" "a new cgroup or file under /sys/fs/cgroup inside"
al_assert_contains "$AL_OUT" "refused " "write attempts"
mounts=$(printf '%s\n' "$AL_OUT" | grep '^mount ' || true)
[ -n "$mounts" ] || al_fail "no mount at /sys/fs/cgroup inside"
# bwrap binds with nosuid and nodev, and offers no noexec (no cgroup file has an execute bit).
flags="nosuid nodev noexec"
! al_backend_is bwrap || flags="nosuid nodev"
while read -r _ where root opts; do
	case ",$opts," in *,ro,*) ;; *) al_fail "$where is mounted $opts, not read-only" ;; esac
	for o in $flags; do
		case ",$opts," in *,$o,*) ;; *) al_fail "$where is mounted $opts, without $o" ;; esac
	done
	# The cgroup namespace's root is the job's cgroup: no mount shows a path above it.
	al_assert_eq "$root" / "the root of the mount at $where inside"
done <<<"$mounts"
al_pass "/sys/fs/cgroup is read-only, ${flags// /, } and refuses every write"

# From outside: the job tries to raise its limit, then waits; the host's file still says 300M.
out=$(al_tmpdir 0777)/job.out
be=()
al_backend_is native || be=(--backend "$AL_BACKEND")
# shellcheck disable=SC2016 # expanded inside the sandbox
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${be[@]}" --memory 300M --time 60s -- /bin/sh -c '
	for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
		[ -e "$f" ] && { echo max >"$f" || echo 9999999999 >"$f"; } 2>/dev/null
	done
	echo tried; sleep 60' >"$out" 2>&1 &
job=$!
AL_BG_PIDS+=("$job")
for _ in $(seq 200); do
	grep -q tried "$out" 2>/dev/null && break
	sleep 0.05
done
grep -q tried "$out" || al_fail "the job never ran: $(cat "$out")"
# Other tests' cgroups vanish while find walks (it exits 1), and head may end it early (SIGPIPE):
# under pipefail either would end the script, so only what find prints counts.
host_file=$({ find /sys/fs/cgroup -maxdepth 8 -path "*/airlock-$job-*/memory.max" -o -maxdepth 8 \
	-path "*/airlock-$job-*/memory.limit_in_bytes" 2>/dev/null || true; } | head -n 1)
[ -n "$host_file" ] || al_fail "the job's memory cgroup (airlock-$job-*) is not found on the host"
al_assert_eq "$(cat "$host_file")" 314572800 "$host_file read from outside after the job's writes"
kill "$job" 2>/dev/null || true
wait "$job" 2>/dev/null || true
al_pass "the limit read from outside is unchanged ($host_file)"

# ---- nothing of the host's tree: no cgroup but the job's, and its processes only
host_names=$({ find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -printf '%f\n' 2>/dev/null || true; } | sort -u | sed -n 1,200p)
# shellcheck disable=SC2016 # expanded inside the sandbox
al_run run -- /bin/sh -c 'find /sys/fs/cgroup -mindepth 1 -type d; echo procs; cat $(find /sys/fs/cgroup -name cgroup.procs)'
al_assert_rc 0
dirs=$(printf '%s\n' "$AL_OUT" | sed '/^procs$/,$d')
if [ "$layout" = v2 ]; then
	[ -z "$dirs" ] || al_fail "cgroups visible inside beside the job's own: $dirs"
else
	# v1: one directory per hierarchy, none beneath (the job made no cgroup of its own).
	extra=$(printf '%s\n' "$dirs" | grep -Ev '^/sys/fs/cgroup/[^/]+$' || true)
	[ -z "$extra" ] || al_fail "cgroups visible inside beside the job's own: $extra"
	printf '%s\n' "$dirs" | grep -qx /sys/fs/cgroup/memory || al_fail "no memory hierarchy inside: $dirs"
fi
while read -r name; do
	case "$name" in memory | pids | cpu | cpuacct | cpu,cpuacct | unified | '') continue ;; esac
	printf '%s\n' "$dirs" | grep -q -- "/$name\$" && al_fail "the host's cgroup $name is visible inside"
done <<<"$host_names"
pids=$(printf '%s\n' "$AL_OUT" | sed '0,/^procs$/d' | sort -un) # 0,: on v2 "procs" is the first line
for p in $pids; do
	[ "$p" -le 10 ] || al_fail "cgroup.procs inside lists pid $p: not the sandbox's own ($pids)"
done
[ -n "$pids" ] || al_fail "cgroup.procs inside lists no process"
al_pass "only the job's own cgroup is visible, listing only the sandbox's pids ($(printf '%s\n' "$pids" | tr '\n' ' '))"

# ---- a runtime that sizes itself from its cgroup
if command -v node >/dev/null; then
	al_run run --memory 300M -- node -e 'console.log(process.constrainedMemory())'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" 314572800 "node's process.constrainedMemory() inside"
	al_pass "node's process.constrainedMemory() reports the 300M limit"
elif [ "${CI:-}" = true ]; then
	al_fail "node is missing: process.constrainedMemory() cannot be checked"
else
	al_log "node is missing: process.constrainedMemory() not checked"
fi

# ---- a held sandbox (airlock serve) shows the sandbox's cgroup to each exec (native only: the
# other backends refuse to hold a sandbox)
al_backend_is native || exit 0
command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755) # a config's directory may be writable by its owner only
printf 'version: 1\napproval:\n  auto_approve_up_to: CRITICAL\n' >"$confdir/config.yaml"
chmod 0644 "$confdir/config.yaml"
al_serve_start "$dir" --config "$confdir/config.yaml" --audit "$dir/audit.jsonl"
al_api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"limits":{"memory_mb":300}}'
al_assert_eq "$CODE" 201 "create a sandbox: $BODY"
sb=$(al_json_get "$BODY" sandbox_id)
# A runtime finds the limit in the exec's own cgroup (named by /proc/self/cgroup, as libuv reads
# it): the view's root is the sandbox's cgroup, which gave its memory limit to its code's cgroup so
# that an OOM at the limit never reaches the sandbox's init (docs/backends.md). Were the exec's
# cgroup outside the view (a path with ".."), the root would have to hold the limit instead.
# shellcheck disable=SC2016 # expanded inside the sandbox
OWN='if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	f=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/memory.max; root=/sys/fs/cgroup/memory.max
else
	f=/sys/fs/cgroup/memory$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)/memory.limit_in_bytes
	root=/sys/fs/cgroup/memory/memory.limit_in_bytes
fi
case $(cat /proc/self/cgroup) in */..*) f=$root ;; esac
echo memory=$(cat "$f")
cat /proc/self/cgroup'
req=$("$AL_PY" -c 'import json,sys; print(json.dumps({"language":"shell","code":sys.argv[1],"fresh":True}))' "$OWN")
al_api POST "/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' -d "$req"
res=$(printf '%s\n' "$BODY" | grep '^{"result"' | tail -n 1 | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["result"]["stdout"])') ||
	al_fail "no result for the exec in $sb ($CODE): $(printf '%s' "$BODY" | head -c 600)"
printf '%s\n' "$res" | grep -qx memory=314572800 || al_fail "the held exec does not find the sandbox's 300M limit: $res"
al_pass "an exec in a held sandbox finds the sandbox's memory limit"
# Each exec runs in a child cgroup of the sandbox's, which repeats its limits: a runtime that reads
# only its own cgroup (libuv, from /proc/self/cgroup) finds them there.
if command -v node >/dev/null; then
	req=$("$AL_PY" -c 'import json; print(json.dumps({"language":"shell","fresh":True,"code":"node -e \"console.log(process.constrainedMemory())\""}))')
	al_api POST "/v1/sandboxes/$sb/exec" -H 'Content-Type: application/json' -d "$req"
	res=$(printf '%s\n' "$BODY" | grep '^{"result"' | tail -n 1 | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["result"]["stdout"])') ||
		al_fail "no result for the exec in $sb ($CODE): $(printf '%s' "$BODY" | head -c 600)"
	al_assert_eq "$res" 314572800 "node's process.constrainedMemory() in a held exec"
	al_pass "node in a held exec reads the sandbox's limit in its own cgroup"
fi
al_api DELETE "/v1/sandboxes/$sb" -H 'Content-Type: application/json'
