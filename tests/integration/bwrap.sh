#!/bin/bash
# bwrap.sh — `--backend bwrap`: the same policy and supervisor under /usr/bin/bwrap. What bwrap claims
# is judged from outside like the native tests do; what it cannot enforce is refused with 125.
. "$(dirname "$0")/../lib.sh"

[ -x /usr/bin/bwrap ] || al_skip "/usr/bin/bwrap is not installed (Debian package bubblewrap)"
BW=(--backend bwrap)
j() { al_json_get "$AL_OUT" "$1"; }
# ans CASE: what al-try-syscall reported for CASE in the last run ("EPERM", "EBADF", "ret").
ans() { printf '%s\n' "$AL_OUT" | awk -v c="$1" '$1 == c { sub(/^(errno|ret)=/, "", $2); print $2; exit }'; }

# ---- hello world, exit codes, signals, the verdict names the backend
al_box "${BW[@]}" -- /bin/sh -c 'echo hello; echo oops >&2'
al_assert_rc 0
al_assert_eq "$AL_OUT" hello "stdout"
al_assert_eq "$AL_ERR" oops "stderr (relayed by the monitor)"
for n in 0 3 42 255; do
	al_probe "${BW[@]}" -- exit "$n"
	al_assert_rc "$n"
done
for sig in 9 15; do
	al_probe "${BW[@]}" --json -- raise "$sig"
	al_assert_rc $((128 + sig))
	al_assert_eq "$(j status)" signaled "status (signal $sig)"
	al_assert_eq "$(j signal)" "$sig" "signal"
done
al_probe "${BW[@]}" --json -- exit 0
al_assert_eq "$(j backend)" bwrap "verdict backend"
al_assert_eq "$(j enforced.bwrap)" /usr/bin/bwrap "enforced.bwrap"
# airlock-init, bwrap's command, applies the native backend's ruleset (layers.sh proves it holds).
al_assert_eq "$(j enforced.landlock.fs)" true "enforced.landlock.fs (applied by airlock-init)"
al_assert_eq "$(j enforced.landlock.fs_rights)" writes "enforced.landlock.fs_rights"
al_assert_eq "$(j enforced.seccomp)" default "enforced.seccomp"
al_assert_eq "$(j enforced.no_new_privs)" true "enforced.no_new_privs"
for ns in user pid mount net ipc uts; do
	al_assert_eq "$(j "enforced.namespaces.$ns")" true "enforced.namespaces.$ns"
done
al_assert_eq "$(j enforced.payload_host_uid)" "$AL_PAYLOAD_HOST_UID" "enforced.payload_host_uid"

# A program that is not there: a setup error naming it, like the native backend.
al_run run "${BW[@]}" --json -- /nonexistent/prog
al_assert_rc 125
al_assert_eq "$(j status)" setup-error "status for a missing program"
al_assert_contains "$(j error.message)" /nonexistent/prog "error.message"

# ---- identity: no capability, no_new_privs, uid 1000 inside, never host root outside
al_identity_inside "${BW[@]}"
m=$(al_marker)
al_payload_start "$m" "${BW[@]}"
al_payload_host_ids "$AL_PAYLOAD_PID"
# bwrap and its pid 1 are not host root either.
bwraps=$(pgrep -f "^/usr/bin/bwrap .*$m" || true)
[ -n "$bwraps" ] || al_fail "no bwrap process carries the marker: the check below proves nothing"
for p in $bwraps; do
	[ "$(al_host_uid "$p")" != 0 ] || al_fail "bwrap (pid $p) runs as host root"
done
al_pass "bwrap's processes ($(printf '%s' "$bwraps" | tr '\n' ' ')) run as uid $(al_host_uid "${bwraps%%[!0-9]*}")"
al_payload_wait

# ---- the filesystem: the host's files are not there, /usr is read-only, --ro holds, --rw writes
sec=$(al_tmpdir 0755)
printf 'secret-%s\n' "$m" >"$sec/secret"
al_probe "${BW[@]}" -- read "$sec/secret"
al_assert_rc 1
al_assert_eq "$(al_kv read)" ENOENT "an unbound host file inside"
for d in /root /home /var /srv; do
	[ -e "$d" ] || continue
	al_probe "${BW[@]}" -- ls "$d"
	al_assert_eq "$(al_kv ls)" ENOENT "host $d inside"
done
al_probe "${BW[@]}" -- read /etc/shadow
al_assert_eq "$(al_kv read)" ENOENT "/etc/shadow inside"
for target in /usr/bin/env /usr /usr/bin / /etc; do
	al_probe "${BW[@]}" -- writable "$target"
	al_assert_rc 1
	case "$(al_kv writable)" in
	EROFS | EACCES) al_pass "$target is not writable inside ($(al_kv writable))" ;;
	*) al_fail "writability of $target inside: expected EROFS or EACCES, got '$(al_kv writable)'" ;;
	esac
done
ro=$(al_tmpdir 0777)
printf 'canary-%s\n' "$m" >"$ro/canary"
chmod 0666 "$ro/canary"
al_probe "${BW[@]}" --ro "$ro:/data" -- write /data/canary clobbered
al_assert_eq "$(al_kv write)" EROFS "write into a --ro bind"
al_assert_eq "$(cat "$ro/canary")" "canary-$m" "host canary behind --ro"
al_probe "${BW[@]}" --ro "$ro:/data" -- read /data/canary
al_assert_eq "$AL_OUT" "canary-$m" "read through --ro"
rw=$(al_tmpdir 0777)
al_probe "${BW[@]}" --rw "$rw:/out" -- write /out/new "made-$m"
al_assert_rc 0
al_assert_eq "$(cat "$rw/new")" "made-$m" "a file written through --rw"
al_assert_eq "$(stat -c %u "$rw/new")" "$AL_PAYLOAD_HOST_UID" "owner of a file written through --rw"
for dir in /workspace /tmp /dev/shm; do
	al_box "${BW[@]}" --disk 8M -- /bin/sh -c "head -c 12582912 /dev/zero > $dir/fill; echo rc=\$?"
	al_assert_contains "$AL_ERR" "No space left on device" "filling $dir under --disk 8M"
done

# --workdir is refused: bwrap 0.8 has no overlay, so the host directory could only be bound
# read-write and the job's set-id files, FIFOs and modes would land on the host as it left them.
wd=$(al_tmpdir 0777)
printf 'seed-%s\n' "$m" >"$wd/seed"
AL_BACKEND=bwrap al_expect_workdir_refused "$wd" # (this test runs as a native one: the helper then passes --backend)
al_assert_eq "$(cat "$wd/seed")" "seed-$m" "the --workdir seed after the refusal"
if [ -e "$wd/new" ] || [ -e "$wd/fifo" ]; then al_fail "the refused job left files in the --workdir"; fi

# ---- the network: a host listener hears nothing; only lo exists inside
log="$AL_TEST_ROOT/listen.log"
al_listen "$log"
"$AL_HOST_PROBE" connect 127.0.0.1 "$AL_LISTEN_TCP" >/dev/null || al_fail "control: host probe cannot reach the listener"
for _ in $(seq 40); do grep -q '^tcp-data' "$log" && break; sleep 0.05; done
grep -q '^tcp-data' "$log" || al_fail "control: the listener did not record the host's bytes"
: >"$log"
# --net none: the job's own lo is up and inet sockets are allowed, so 127.0.0.1 is the sandbox's
# own and refuses the host listener's port; the listener, below, must hear nothing.
al_probe "${BW[@]}" -- connect 127.0.0.1 "$AL_LISTEN_TCP"
al_assert_rc 1
al_assert_eq "$(al_kv connect)" ECONNREFUSED "connect inside (the sandbox's own lo)"
# The namespace alone: bwrap raises lo in it, so 127.0.0.1 is the sandbox's own, and refuses.
al_probe "${BW[@]}" --seccomp off -- connect 127.0.0.1 "$AL_LISTEN_TCP"
al_assert_rc 1
al_assert_eq "$(al_kv connect)" ECONNREFUSED "connect inside, namespace only"
al_probe "${BW[@]}" --seccomp off -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
sleep 0.5
[ ! -s "$log" ] || al_fail "the host listener saw traffic from the sandbox: $(cat "$log")"
al_pass "the host listener saw nothing from the sandbox"
al_listen_stop
al_probe "${BW[@]}" -- read /proc/net/dev
inside=$(printf '%s\n' "$AL_OUT" | awk -F: 'NF > 1 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' ')
al_assert_eq "$inside" "lo " "interfaces inside"

# ---- the allowlist posture: the egress proxy's namespace is airlock's, bwrap runs inside it.
# A host HTTP server on loopback, named allowed.test and denied.test by a test hosts file.
srv=$(al_tmpdir)
al_http_host "$srv"
port=$AL_HTTP_PORT
printf '127.0.0.1 allowed.test denied.test\n' >"$srv/hosts"
chmod 0644 "$srv/hosts"
px=(--proxy-hosts "$srv/hosts" --net "allow=allowed.test:$port" --allow-private 127.0.0.1/32 --proxy-http)
al_box "${BW[@]}" "${px[@]}" --json -- /bin/sh -c \
	"curl -sS http://allowed.test:$port/ok; curl -sS -o /dev/null -w '%{http_code}\n' http://denied.test:$port/no; $P connect 127.0.0.1 $port"
al_assert_eq "$(j enforced.network)" allow "enforced.network"
al_assert_eq "$(j enforced.network_namespace)" airlock "enforced.network_namespace"
al_assert_eq "$(j proxy.served)" true "the proxy got its socket from the sandbox's namespace"
al_assert_contains "$(j stdout.data)" "hello /ok" "an allowed name through the proxy"
al_assert_contains "$(j stdout.data)" "403" "a name off the allowlist"
al_assert_eq "$(al_kv connect "$(j stdout.data)")" ECONNREFUSED "a direct connection to the host's loopback"
al_assert_eq "$(j proxy.allowed)/$(j proxy.denied)" 1/1 "proxy decisions"
al_assert_eq "$(cat "$srv/access.log")" /ok "what the host server saw"

# ---- the pid namespace: host processes are invisible and out of reach
al_probe "${BW[@]}" -- pids
al_assert_rc 0
n=$(printf '%s\n' "$AL_OUT" | grep -c .)
[ "$n" -le 3 ] || al_fail "expected at most 3 pids in the sandbox's /proc, got $n"
al_assert_not_contains " $(printf '%s\n' "$AL_OUT" | tr '\n' ' ') " " $$ " "pids inside"
al_bg sleep 60
victim=$AL_BG_PID
al_probe "${BW[@]}" -- kill "$victim" 9
al_assert_eq "$(al_kv kill)" ESRCH "kill of a host sleeper from inside"
kill -0 "$victim" 2>/dev/null || al_fail "the host sleeper died"

# ---- seccomp: airlock's filter, passed to bwrap by descriptor
[ -x "$AL_PROBE_DIR/al-try-syscall" ] || al_fail "al-try-syscall was not built"
T=/probe/al-try-syscall
al_box "${BW[@]}" -- "$T" keyctl bpf ptrace unshare close
al_assert_rc 0
for c in keyctl bpf ptrace unshare; do
	al_assert_eq "$(ans "$c")" EPERM "$c under the default profile"
done
al_assert_eq "$(ans close)" EBADF "a control call keeps the kernel's answer"
al_box "${BW[@]}" --seccomp off -- "$T" keyctl bpf
for c in keyctl bpf; do
	case "$(ans "$c")" in
	"" | EPERM) al_fail "$c answers '$(ans "$c")' with --seccomp off: the check proves nothing" ;;
	esac
	al_pass "$c without the filter: $(ans "$c")"
done
al_box "${BW[@]}" --seccomp strict --json -- "$T" mount
al_assert_rc 159
al_assert_eq "$(j seccomp_killed)" true "strict: seccomp_killed"
al_assert_eq "$(j enforced.seccomp)" strict "strict: enforced.seccomp"

# ---- the wall clock kills the whole tree; a daemon outliving its payload is killed too
m=$(al_marker)
al_probe "${BW[@]}" --time 1 --json -- daemon "$m" 30 30
al_assert_rc 124
al_assert_eq "$(j status)" timeout "status at the deadline"
al_assert_contains "$(j stdout.data)" "daemon=" "the daemon started"
al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) survived the timeout"
m=$(al_marker)
t0=$(date +%s%N)
al_probe "${BW[@]}" --time 20 -- daemon "$m" 30 0
al_assert_rc 0
[ $((($(date +%s%N) - t0) / 1000000)) -lt 5000 ] || al_fail "airlock waited for a daemon after its payload exited"
al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) outlived its job"
al_pass "nothing outlives a bwrap job"

# ---- limits: output cap, memory through the job's cgroup, scrubbed environment
al_probe "${BW[@]}" --output-limit 4K --json -- flood 1048576
al_assert_eq "$(j status)" output-limit "status of a flood"
al_assert_eq "$(j stdout.kept)" 4096 "bytes kept"
al_assert_eq "$(j stdout.bytes)" 1048576 "bytes counted"
# stderr passes through the monitor (which watches for bwrap's own messages): capped the same.
al_probe "${BW[@]}" --output-limit 4K --json -- flood 1048576 2
al_assert_eq "$(j status)" output-limit "status of a stderr flood"
al_assert_eq "$(j stderr.kept)" 4096 "stderr bytes kept"
al_assert_eq "$(j stderr.bytes)" 1048576 "stderr bytes counted"
al_probe "${BW[@]}" --json -- exit 0
if [ "$(al_json_type "$AL_OUT" enforced.cgroup)" = object ]; then
	al_run run "${BW[@]}" --memory 64M --time 30 --json -- /usr/bin/python3 -c '
a = []
while True:
    a.append(bytearray(1 << 20))'
	al_assert_rc 137
	al_assert_eq "$(j status)" oom "memory bomb status"
	al_probe "${BW[@]}" --pids 32 --time 20 --json -- forkloop 500 1
	al_assert_contains "$(j stdout.data)" "fork=EAGAIN" "fork bomb under --pids 32"
	al_assert_eq "$(j pids_limit_hit)" true "pids_limit_hit"
else
	al_run run "${BW[@]}" --memory 64M -- /bin/true
	al_assert_rc 125
	al_assert_contains "$AL_ERR" cgroup "an explicit --memory without a usable cgroup"
fi
export AL_LEAK_CANARY="leak-$m"
al_probe "${BW[@]}" -- env
al_assert_not_contains "$AL_OUT" "$m" "environment inside"
names=$(printf '%s\n' "$AL_OUT" | sed -n 's/=.*//p' | sort | tr '\n' ' ')
# bwrap always sets PWD (to the working directory); nothing else is added.
al_assert_eq "$names" "HOME LANG LOGNAME PATH PWD TMPDIR USER " "variable names inside"
unset AL_LEAK_CANARY

# airlock exec: the code arrives as a file of the sandbox user's in the workspace.
al_run exec --lang python "${BW[@]}" --json -c 'import os; open("main.py", "a").write("#"); print(os.getuid(), sorted(os.listdir(".")))'
al_assert_eq "$(j backend)" bwrap "exec: backend"
al_assert_eq "$(j stdout.data)" "1000 ['main.py']" "exec: the code file, writable by the sandbox user"

# ---- refusals: 125, naming what bwrap cannot enforce; the payload never runs
witness=$(al_tmpdir 0777)
ran=("$P" write /out/ran yes)
refused() { # TOKEN AIRLOCK-RUN-ARGS...
	local token=$1
	shift
	al_run run "${BW[@]}" --ro "$AL_PROBE_DIR:/probe" --rw "$witness:/out" "$@" -- "${ran[@]}"
	al_assert_rc 125
	printf '%s\n' "$AL_ERR" | grep -qiE -e "$token" || al_fail "the refusal does not name '$token': $AL_ERR"
	[ ! -e "$witness/ran" ] || al_fail "the payload ran despite the refusal ($*)"
	al_pass "refused ($token): $AL_ERR"
}
co=$(al_tmpdir 0755)
# Landlock is airlock-init's: a floor that requires it holds.
al_probe "${BW[@]}" --require landlock -- exit 0
al_assert_rc 0
refused 'checkout-mode copy' --checkout "$co" --checkout-mode copy
refused 'keep-changes' --checkout "$co" --keep-changes "$AL_TEST_ROOT/kept"
refused 'subids' --subids
refused 'fallback' --fallback
refused 'cannot cap --workdir with --disk' --workdir "$wd" --disk 8M # (this refusal comes before the --workdir one)
# The floor's other layers are bwrap's to give: accepted.
al_probe "${BW[@]}" --require userns,pidns,netns,seccomp,no_new_privs -- exit 0
al_assert_rc 0
if [ "$AL_TEST_MODE" = root ]; then
	# bwrap missing: hidden in a private mount namespace of this one command only.
	al_run run "${BW[@]}" -- /bin/true # warm: the same command works with bwrap present
	al_assert_rc 0
	AL_RC=0
	# shellcheck disable=SC2016 # "$0" is expanded by the inner shell
	AL_ERR=$(unshare --mount --propagation private /bin/sh -c \
		'mount --bind /dev/null /usr/bin/bwrap && exec "$0" run --backend bwrap -- /bin/true' "$AL_AIRLOCK_BIN" 2>&1) || AL_RC=$?
	al_assert_eq "$AL_RC" 125 "exit status without /usr/bin/bwrap"
	al_assert_contains "$AL_ERR" "needs /usr/bin/bwrap (Debian package bubblewrap)" "refusal without bwrap"
fi

# ---- airlock check lists bwrap and what it can enforce
al_run check --json
al_assert_rc 0
al_assert_eq "$(j backend_layers.bwrap.available)" true "check: bwrap available"
al_assert_eq "$(j backend_layers.bwrap.landlock)" true "check: bwrap's airlock-init applies Landlock"
al_assert_eq "$(j backend_layers.bwrap.egress_proxy)" true "check: bwrap serves the egress proxy"
al_assert_eq "$(j backend_layers.bwrap.checkout_copy)" false "check: bwrap cannot copy a checkout"
al_run check
al_assert_contains "$AL_OUT" "bwrap can enforce" "check table row"
