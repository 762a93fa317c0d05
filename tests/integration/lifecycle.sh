#!/usr/bin/env bash
# lifecycle.sh — the sandbox manager's lifecycle, judged from outside (process table, cgroupfs,
# HTTP answers) against airlock serve with small limits from config files the test writes:
# idle expiry (an idle sandbox goes: 404, init reaped, cgroup removed; one in use stays, and so
# does one whose exec outran the TTL, idle counting from the end of its last operation), max
# lifetime (a hard cap that ends even a busy sandbox and its exec; counted from when a client got
# the sandbox, not from its time as a spare), the warm pool (creates take a spare, whose init is
# one of the spares'; the pool is back to N, by /metrics and by the inits), max_sandboxes (429
# naming the limit; the server keeps serving), max_execs (a second exec waits for the first; one
# queued past its own timeout gives up with an error and never runs),
# and a server killed with SIGKILL (every process of it ends, payload included; no mount
# namespace of a sandbox is left; its cgroups stay until the next server removes them; nothing in
# its TMPDIR). SIGTERM cleanup is serve.sh's. Every wait is a bounded poll; the only time figures
# asserted are "still there before its TTL", with seconds of margin.
: "${AL_GUARD_TIMEOUT:=270}" # several servers wait out TTLs, in both modes (CTest allows 300s)
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
al_serve_bin
dir=$(al_tmpdir 0777)
cfgdir=$(al_tmpdir 0755) # as root, a config file anyone but root could change is refused
# Job cgroups exist only where the server may make them: as root here (the unprivileged
# server gets no writable hierarchy on this kind of host, so there is nothing to leave).
cgroups=false
[ "$AL_CALLER_UID" != 0 ] || cgroups=true

# ---------------------------------------------------------------- helpers

# config NAME SERVER-YAML: a config file with approvals off (every tool LOW) and SERVER-YAML as
# its server section; the pool lists both shipped profiles so the defaults' spares do not merge in.
config() {
	al_serve_config "$cfgdir/$1.yaml" 'server:\n%s\n' "$2"
}

# start_server NAME: airlock serve with $dir/NAME.yaml on a free loopback port, its TMPDIR a
# directory of its own (it must stay empty), and a state directory of its own (each server starts
# with none of the previous one's sandboxes kept); sets PORT, AL_SERVE_URL and SPID.
start_server() {
	local name=$1
	mkdir -m 0777 "$dir/$name.tmp"
	mkdir -m 0700 "$dir/$name.state"
	chown "$AL_CALLER_UID:$AL_CALLER_GID" "$dir/$name.state"
	TMPDIR="$dir/$name.tmp" al_serve_launch "$dir/$name" "airlock serve ($name)" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" \
		serve --config "$cfgdir/$name.yaml" --socket none --token-file "$dir/token" --audit "$dir/$name.jsonl" \
		--state-dir "$dir/$name.state"
	SPID=$AL_SERVE_PID
	PORT=$SERVE_PORT
	al_serve_auth "$dir/token"
	al_log "server $name: pid $SPID port $PORT"
}

stop_server() {
	kill -TERM "$SPID"
	wait "$SPID" || al_fail "airlock serve (pid $SPID) did not exit 0 on SIGTERM"
	al_assert_eq "$(ls -A "$dir/$1.tmp")" "" "what server $1 left in its TMPDIR"
}


# has_file SANDBOX PATH: PATH is in SANDBOX's workspace (GET answers 200).
has_file() {
	al_api GET "/v1/sandboxes/$1/files/$2"
	[ "$CODE" = 200 ]
}

# metric NAME: a gauge of /metrics (reading it touches no sandbox).
metric() {
	al_api GET /metrics
	printf '%s\n' "$BODY" | awk -v n="$1" '$1 == n { print $2 }'
}

# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds; fails the test after SECONDS.
wait_for() {
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$(($(date +%s) + secs))
	until "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || al_fail "not within ${secs}s: $what"
		sleep 0.2
	done
	al_pass "$what"
}

# inits: the pids of the server's sandbox inits (its children named airlock-init).
inits() {
	local p
	for p in $(pgrep -P "$SPID" 2>/dev/null); do
		case "$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")" in airlock-init*) echo "$p" ;; esac
	done
}
pooled_is() { [ "$(metric airlock_sandboxes_pooled)" = "$1" ]; }
live_is() { [ "$(metric airlock_sandboxes_live)" = "$1" ]; }
ninits_is() { [ "$(inits | wc -l)" = "$1" ]; }

# create: a sandbox of the default profile; sets SB.
create() {
	al_api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
	al_assert_eq "$CODE" 201 "create a sandbox: $BODY"
	SB=$(al_json_get "$BODY" sandbox_id)
}

# init_of ID: the host pid of sandbox ID's init, found by a file put into its workspace (the
# workspace is a tmpfs in the init's mount namespace; root sees it through /proc/PID/root).
init_of() {
	local p tag=".lc-$1"
	al_api PUT "/v1/sandboxes/$1/files/$tag" --data-binary "$1"
	al_assert_eq "$CODE" 200 "tag the workspace of $1: $BODY"
	for p in $(inits); do
		if [ "$(cat "/proc/$p/root/workspace/$tag" 2>/dev/null)" = "$1" ]; then
			echo "$p"
			return 0
		fi
	done
	al_fail "no init of server $SPID holds the workspace of $1"
}

# cgroup_of PID: the name of the job cgroup PID is in (empty when it has none of the server's).
cgroup_of() { grep -o "airlock-$SPID-[0-9]*-[0-9a-f]*" "/proc/$1/cgroup" | head -n 1 || true; }
# cgroup_dirs NAME: the directories of job cgroup NAME, in every hierarchy.
cgroup_dirs() { find /sys/fs/cgroup -maxdepth 8 -type d -name "$1" 2>/dev/null || true; }

# gone PID: no such process (reaped, not a zombie: the server reaps what it destroys).
gone() { [ ! -e "/proc/$1" ]; }
# dead PID: gone, or a zombie (what a killed server leaves to pid 1).
dead() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
answers_404() {
	al_api GET "/v1/sandboxes/$1/files"
	[ "$CODE" = 404 ]
}

# expect_alive PID WHAT: the init PID still runs.
expect_alive() {
	local pid=$1 what=$2
	[ -e "/proc/$pid" ] || al_fail "$what: its init $pid is gone"
}

# expect_destroyed ID PID CG WHY: the init is reaped (watched from outside: a request would be a
# use), then the id answers 404 naming it and the cgroup is gone.
expect_destroyed() {
	local id=$1 pid=$2 cg=$3 why=$4
	wait_for 30 "$why: the init ($pid) of $id is reaped" gone "$pid"
	wait_for 5 "$why: $id answers 404" answers_404 "$id"
	al_assert_contains "$BODY" "no sandbox" "the answer for $why $id"
	if $cgroups; then
		al_assert_eq "$(cgroup_dirs "$cg")" "" "$why: cgroup $cg of $id"
	fi
}

# sandbox_facts ID: sets PID and CG of sandbox ID (CG required as root).
sandbox_facts() {
	PID=$(init_of "$1")
	CG=$(cgroup_of "$PID")
	if $cgroups; then
		[ -n "$CG" ] || al_fail "the init of $1 is in no job cgroup of server $SPID: $(cat "/proc/$PID/cgroup")"
		[ -n "$(cgroup_dirs "$CG")" ] || al_fail "no directory of cgroup $CG"
	fi
}

# bg_exec NAME ID CODE: an exec in the background, its NDJSON answer in $dir/NAME.out; sets BGPID.
bg_exec() {
	curl -s -N -X POST "http://127.0.0.1:$PORT/v1/sandboxes/$2/exec" -H 'Content-Type: application/json' \
		-d "$(CODE_ARG=$3 "$AL_PY" -c 'import json,os; print(json.dumps({"language":"shell","code":os.environ["CODE_ARG"]}))')" \
		>"$dir/$1.out" 2>&1 &
	BGPID=$!
	AL_BG_PIDS+=("$BGPID")
}

# exec_ok ID CODE EXPECTED: a foreground exec that must exit 0 with EXPECTED in its output.
exec_ok() {
	al_api POST "/v1/sandboxes/$1/exec" -H 'Content-Type: application/json' \
		-d "$(CODE_ARG=$2 "$AL_PY" -c 'import json,os; print(json.dumps({"language":"python","code":os.environ["CODE_ARG"]}))')"
	al_assert_eq "$CODE" 200 "exec in $1"
	al_assert_contains "$(printf '%s\n' "$BODY" | grep '^{"result"')" '"exit_code":0' "exec in $1's result"
	al_assert_contains "$BODY" "$3" "exec output in $1"
}

nopool='  pool:
    untrusted-code-read: 0
    untrusted-code-write: 0'

# ---------------------------------------------------------------- idle TTL

config idle "  idle_ttl: 5s
  max_lifetime: 1h
$nopool"
start_server idle
create
idle_sb=$SB
sandbox_facts "$idle_sb"
idle_pid=$PID idle_cg=$CG
create
busy_sb=$SB
sandbox_facts "$busy_sb"
busy_pid=$PID
create
long_sb=$SB
sandbox_facts "$long_sb"
long_pid=$PID long_cg=$CG
# long: one exec that outlasts the TTL; busy: a file listing every half second.
bg_exec long "$long_sb" 'sleep 7; echo long-done'
long_curl=$BGPID
touch_busy() {
	al_api GET "/v1/sandboxes/$busy_sb/files"
	[ "$CODE" = 200 ] || al_fail "the sandbox in use ($busy_sb) answered $CODE: $BODY"
	sleep 0.5
	[ -e "/proc/$idle_pid" ] && return 1 || return 0
}
wait_for 30 "the idle sandbox's init ends while another is in use" touch_busy
expect_destroyed "$idle_sb" "$idle_pid" "$idle_cg" "idle past idle_ttl"
expect_alive "$busy_pid" "a sandbox in use"
expect_alive "$long_pid" "a sandbox whose exec runs longer than idle_ttl"
# busy stays in use while the long exec ends (on a loaded host that can take seconds).
while kill -0 "$long_curl" 2>/dev/null; do
	al_api GET "/v1/sandboxes/$busy_sb/files"
	[ "$CODE" = 200 ] || al_fail "the sandbox in use ($busy_sb) answered $CODE: $BODY"
	sleep 0.5
done
wait "$long_curl" || true
al_assert_contains "$(cat "$dir/long.out")" '"exit_code":0' "the exec that outlasted idle_ttl"
al_assert_contains "$(cat "$dir/long.out")" 'long-done' "the exec that outlasted idle_ttl"
# Idle is counted from the end of its last operation: 2s on (two housekeeping sweeps, 3s under
# the TTL), looking only from outside (any request would count as use), it is still there.
sleep 2
expect_alive "$long_pid" "2s after an exec longer than idle_ttl ended (idle counts from the end)"
al_api GET "/v1/sandboxes/$long_sb/files"
al_assert_eq "$CODE" 200 "the sandbox whose exec outlasted idle_ttl answers"
al_api GET "/v1/sandboxes/$busy_sb/files"
al_assert_eq "$CODE" 200 "the sandbox in use answers"
# Left alone, both expire too.
expect_destroyed "$long_sb" "$long_pid" "$long_cg" "idle past idle_ttl after its exec"
stop_server idle

# ---------------------------------------------------------------- max lifetime

config life "  idle_ttl: 1h
  max_lifetime: 8s
  pool:
    untrusted-code-read: 1
    untrusted-code-write: 0"
start_server life
wait_for 30 "the pool holds its one spare" pooled_is 1
spare=$(inits)
# A spare well into its lifetime (5s of 8s) when claimed still gets a full lifetime.
spare_age() {
	local start hz up
	[ -e "/proc/$spare" ] || return 0 # replaced meanwhile: a fresh spare proves less, but proceed
	start=$(awk '{print $22}' "/proc/$spare/stat") hz=$(getconf CLK_TCK) up=$(awk '{print $1}' /proc/uptime)
	awk -v s="$start" -v h="$hz" -v u="$up" 'BEGIN { exit !(u - s / h >= 5) }'
}
wait_for 20 "the spare is 5s old" spare_age
create
life_sb=$SB
sandbox_facts "$life_sb"
life_pid=$PID life_cg=$CG
al_log "claimed sandbox $life_sb: init $life_pid (the spare was $spare)"
# Busy for its whole life: an exec that would run 60s, and requests every half second.
bg_exec life "$life_sb" 'echo started; sleep 25; echo life-done'
life_curl=$BGPID
sleep 4.5
expect_alive "$life_pid" "4.5s after a 5s-old spare was claimed (lifetime 8s counts from the claim)"
poke_life() {
	al_api GET "/v1/sandboxes/$life_sb/files"
	sleep 0.5
	[ "$CODE" = 404 ]
}
wait_for 30 "max_lifetime ends a sandbox in use" poke_life
expect_destroyed "$life_sb" "$life_pid" "$life_cg" "older than max_lifetime"
wait "$life_curl" || true
al_assert_not_contains "$(cat "$dir/life.out")" 'life-done' "the exec cut by max_lifetime"
al_assert_not_contains "$(cat "$dir/life.out")" '"exit_code":0' "the exec cut by max_lifetime"
stop_server life

# ---------------------------------------------------------------- warm pool

config pool "  idle_ttl: 1h
  max_lifetime: 1h
  pool:
    untrusted-code-read: 2
    untrusted-code-write: 0"
start_server pool
wait_for 30 "the pool fills to 2 (metrics)" pooled_is 2
wait_for 10 "2 sandbox inits for the 2 spares" ninits_is 2
spares=$(inits | sort)
for i in 1 2 3; do
	create
	pid=$(init_of "$SB")
	if [ "$i" = 1 ]; then
		printf '%s\n' "$spares" | grep -qx "$pid" || al_fail "the first create ($SB, init $pid) did not use a spare ($spares)"
		al_pass "the first create used a warm spare (init $pid)"
	fi
	exec_ok "$SB" 'print("hello from the pool")' "hello from the pool"
	wait_for 30 "the pool is back to 2 after create $i" pooled_is 2
	wait_for 10 "$((i + 2)) inits: $i claimed, 2 spares" ninits_is $((i + 2))
	al_assert_eq "$(metric airlock_sandboxes_live)" "$i" "live sandboxes after create $i"
done
stop_server pool

# ---------------------------------------------------------------- max_sandboxes, max_execs

config limits "  max_sandboxes: 3
  max_execs: 1
  idle_ttl: 1h
  max_lifetime: 1h
$nopool"
start_server limits
create
a=$SB
create
b=$SB
create
c=$SB
al_api POST /v1/sandboxes -H 'Content-Type: application/json' -d '{}'
al_assert_eq "$CODE" 429 "a 4th sandbox over max_sandboxes 3: $BODY"
al_assert_contains "$BODY" "max_sandboxes" "the refusal names the limit"
wait_for 5 "no 4th init was left behind by the refusal" ninits_is 3
al_api GET /v1/health
al_assert_eq "$CODE" 200 "health after the refusal"
exec_ok "$a" 'print("still serving")' "still serving"
al_api DELETE "/v1/sandboxes/$c"
al_assert_eq "$CODE" 200 "delete one: $BODY"
create
al_pass "a create after a delete is accepted again"
# max_execs 1: b's exec, sent while a's runs, starts only after a's ended (host clock, ns).
bg_exec ea "$a" 'date +%s%N > a.start; sleep 3; date +%s%N > a.end'
ea=$BGPID
wait_for 30 "a's exec started" has_file "$a" a.start
bg_exec eb "$b" 'date +%s%N > b.start'
eb=$BGPID
wait "$ea" || true
wait "$eb" || true
al_assert_contains "$(cat "$dir/ea.out")" '"exit_code":0' "a's exec"
al_assert_contains "$(cat "$dir/eb.out")" '"exit_code":0' "b's exec (queued, then run)"
al_api GET "/v1/sandboxes/$a/files/a.end"
a_end=$(printf '%s' "$BODY" | tr -dc 0-9)
al_api GET "/v1/sandboxes/$b/files/b.start"
b_start=$(printf '%s' "$BODY" | tr -dc 0-9)
if [ -z "$a_end" ] || [ -z "$b_start" ] || [ "$b_start" -lt "$a_end" ]; then
	al_fail "with max_execs 1, b's exec started ($b_start) before a's ended ($a_end)"
fi
al_pass "with max_execs 1 the second exec waited for the first ($((b_start - a_end)) ns after)"
# A queued exec gives up at its own timeout, with an error, and never runs afterwards: b's exec
# (timeout 1 s) waits behind a's 4 s one; its file never appears, even once a's slot is free.
bg_exec ea "$a" 'touch a2.start; sleep 4'
ea=$BGPID
wait_for 30 "a's long exec started" has_file "$a" a2.start
al_api POST "/v1/sandboxes/$b/exec" -H 'Content-Type: application/json' \
	-d '{"language":"shell","code":"echo late > b.late","timeout":1}'
al_assert_contains "$BODY" "timed out after" "the queued exec gave up at its timeout: $BODY"
al_assert_contains "$BODY" "never ran" "the error says the code never ran"
al_assert_contains "$BODY" "max_execs" "the error names the limit"
kill -0 "$ea" 2>/dev/null || al_fail "b's exec gave up only after a's ended: not at its own timeout"
wait "$ea" || true
al_assert_contains "$(cat "$dir/ea.out")" '"exit_code":0' "a's long exec"
sleep 1 # the slot is free: a queued exec that had not given up would run now
al_api GET "/v1/sandboxes/$b/files/b.late"
al_assert_eq "$CODE" 404 "the timed-out queued exec never ran (b.late: $BODY)"
al_pass "a queued exec past its timeout gave up with an error and never ran"
stop_server limits

# ---------------------------------------------------------------- SIGKILL, then restart

config crash "  idle_ttl: 1h
  max_lifetime: 1h
  pool:
    untrusted-code-read: 2
    untrusted-code-write: 0"
start_server crash
dead_spid=$SPID
wait_for 30 "the crashing server's pool fills" pooled_is 2
create
c1=$SB
create # a second, idle one
m=$(al_marker)
bg_exec crash "$c1" "exec -a $m sleep 300"
crash_curl=$BGPID
marker_runs() { [ -n "$(al_marker_pids "$m")" ]; }
wait_for 30 "the payload (marker $m) runs" marker_runs
wait_for 30 "4 inits (2 claimed, 2 spares)" ninits_is 4
# Everything of the server: every descendant (pid:start time), each init's mount namespace (its
# workspace tmpfs lives there), every job cgroup.
procs=$(
	walk() {
		local p
		for p in $(pgrep -P "$1"); do
			echo "$p:$(awk '{print $22}' "/proc/$p/stat" 2>/dev/null)"
			walk "$p"
		done
	}
	walk "$SPID"
)
mntns=$(for p in $(inits); do readlink "/proc/$p/ns/mnt"; done | sort -u)
cgs=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "airlock-$SPID-*" 2>/dev/null || true)
al_log "server $SPID: $(echo "$procs" | wc -w) processes, mount namespaces $(printf '%s' "$mntns" | tr '\n' ' '), $(printf '%s\n' "$cgs" | grep -c . || true) cgroup dirs"
if $cgroups; then
	[ "$(printf '%s\n' "$cgs" | xargs -r -n1 basename | sort -u | wc -l)" -ge 4 ] ||
		al_fail "fewer job cgroups than sandboxes: $cgs"
fi
kill -KILL "$SPID"
wait "$SPID" 2>/dev/null || true
all_dead() {
	local e
	for e in $procs; do
		local p=${e%%:*} st=${e#*:}
		[ "$(awk '{print $22}' "/proc/$p/stat" 2>/dev/null)" = "$st" ] && ! dead "$p" && return 1
	done
	return 0
}
wait_for 30 "every process of the killed server ends" all_dead
wait_for 10 "the payload (marker $m) is gone" al_wait_marker_gone "$m" 1
ns_left() {
	local p
	for p in /proc/[0-9]*; do
		readlink "$p/ns/mnt" 2>/dev/null
	done | sort -u | comm -12 - <(printf '%s\n' "$mntns")
}
ns_gone() { [ -z "$(ns_left)" ]; }
wait_for 10 "no process holds a sandbox's mount namespace (workspaces gone)" ns_gone
wait "$crash_curl" || true
if $cgroups; then
	# The dead server could not remove its cgroups: they are left, empty, for the next one. Those
	# in the test's guard (pids, memory) stay until our next server starts; those beside it (a
	# hierarchy the guard does not cover, e.g. cpu at its root) may be cleaned meanwhile by any
	# other airlock on the machine, which is right, so only the guard's must still be there.
	kept=0
	for d in $cgs; do
		if [ -d "$d" ]; then
			al_assert_eq "$(cat "$d/cgroup.procs" 2>/dev/null)" "" "processes in $d"
			kept=$((kept + 1))
		else
			case "$d" in */airlock-test.*) al_fail "cgroup $d in the guard vanished before our next server started" ;; esac
			al_log "$d (outside the guard) was already removed by another airlock"
		fi
	done
	[ "$kept" -gt 0 ] || al_fail "no cgroup of the killed server is left: the cleanup check would prove nothing"
fi
config crash2 "  idle_ttl: 1h
  max_lifetime: 1h
$nopool"
start_server crash2
stale_gone() { [ -z "$(find /sys/fs/cgroup -maxdepth 8 -type d -name "airlock-$dead_spid-*" 2>/dev/null)" ]; }
wait_for 30 "the new server removed the dead server's cgroups" stale_gone
al_assert_eq "$(ls -A "$dir/crash.tmp")" "" "what the killed server left in its TMPDIR"
al_assert_eq "$(ls -d /tmp/airlock-*."$dead_spid".* 2>/dev/null || true)" "" "private dirs of the killed server in /tmp"
create
exec_ok "$SB" 'print("after the crash")' "after the crash"
stop_server crash2
al_pass "sandbox lifecycle: idle TTL, max lifetime, pool refill, limits, restart after SIGKILL"
