# shellcheck shell=bash
# nonnative.sh — the checks integration/bwrap.sh and integration/oci.sh share: one policy judged from outside under a backend that is not native.
#
# Sourced after tests/lib.sh by a test that sets NN=(--backend NAME), the options every run passes. Both backends run airlock-init under another program (bwrap, crun), so
# the same policy must hold the same way; what differs (the runtime's own verdict keys, the
# namespaces it makes, the refusals only one has) stays in the test, and the arguments below
# carry the rest. Each nn_ function asserts one section, in the order the test calls them.

[ "${NN[0]:-}" = --backend ] || al_fail "nonnative.sh: set NN=(--backend NAME) before sourcing it"
NN_NAME=${NN[1]}

j() { al_json_get "$AL_OUT" "$1"; }
# ans CASE: what al-try-syscall reported for CASE in the last run ("EPERM", "EBADF", "ret").
ans() { printf '%s\n' "$AL_OUT" | awk -v c="$1" '$1 == c { sub(/^(errno|ret)=/, "", $2); print $2; exit }'; }

# nn_hello SIGNAL...: output, exit codes and the signals named.
nn_hello() {
	local n sig
	al_box "${NN[@]}" -- /bin/sh -c 'echo hello; echo oops >&2'
	al_assert_rc 0
	al_assert_eq "$AL_OUT" hello "stdout"
	al_assert_eq "$AL_ERR" oops "stderr"
	for n in 0 3 42 255; do
		al_probe "${NN[@]}" -- exit "$n"
		al_assert_rc "$n"
	done
	for sig in "$@"; do
		al_probe "${NN[@]}" --json -- raise "$sig"
		al_assert_rc $((128 + sig))
		al_assert_eq "$(j status)" signaled "status (signal $sig)"
		al_assert_eq "$(j signal)" "$sig" "signal"
	done
}

# nn_verdict KEY VALUE NAMESPACE...: the verdict names the backend, its KEY (the runtime's
# path) and the layers airlock-init applied, and the namespaces listed are enforced.
nn_verdict() {
	local key=$1 value=$2 ns
	shift 2
	al_probe "${NN[@]}" --json -- exit 0
	al_assert_eq "$(j backend)" "$NN_NAME" "verdict backend"
	al_assert_eq "$(j "$key")" "$value" "$key"
	# airlock-init applies the native backend's ruleset (layers.sh proves it holds).
	al_assert_eq "$(j enforced.landlock.fs)" true "enforced.landlock.fs (applied by airlock-init)"
	al_assert_eq "$(j enforced.landlock.fs_rights)" writes "enforced.landlock.fs_rights"
	al_assert_eq "$(j enforced.seccomp)" default "enforced.seccomp"
	al_assert_eq "$(j enforced.no_new_privs)" true "enforced.no_new_privs"
	for ns in "$@"; do
		al_assert_eq "$(j "enforced.namespaces.$ns")" true "enforced.namespaces.$ns"
	done
	al_assert_eq "$(j enforced.payload_host_uid)" "$AL_PAYLOAD_HOST_UID" "enforced.payload_host_uid"
}

# nn_missing_program: a program that is not there is a setup error naming it, as under native.
nn_missing_program() {
	al_run run "${NN[@]}" --json -- /nonexistent/prog
	al_assert_rc 125
	al_assert_eq "$(j status)" setup-error "status for a missing program"
	al_assert_contains "$(j error.message)" /nonexistent/prog "error.message"
}

# nn_hidden_files MARKER: an unbound host file and /etc/shadow are not there inside.
nn_hidden_files() {
	local sec
	sec=$(al_tmpdir 0755)
	printf 'secret-%s\n' "$1" >"$sec/secret"
	al_probe "${NN[@]}" -- read "$sec/secret"
	al_assert_rc 1
	al_assert_eq "$(al_kv read)" ENOENT "an unbound host file inside"
	al_probe "${NN[@]}" -- read /etc/shadow
	al_assert_eq "$(al_kv read)" ENOENT "/etc/shadow inside"
}

# nn_not_writable PATH...: each is read-only (or not the payload's) inside.
nn_not_writable() {
	local target
	for target in "$@"; do
		al_probe "${NN[@]}" -- writable "$target"
		al_assert_rc 1
		case "$(al_kv writable)" in
		EROFS | EACCES) al_pass "$target is not writable inside ($(al_kv writable))" ;;
		*) al_fail "writability of $target inside: expected EROFS or EACCES, got '$(al_kv writable)'" ;;
		esac
	done
}

# nn_binds MARKER: --ro holds (the host canary is judged from outside), --rw writes as the
# payload's host uid, and --disk caps every writable tmpfs. Sets NN_RO (the --ro directory).
nn_binds() {
	local m=$1 rw dir
	NN_RO=$(al_tmpdir 0777)
	printf 'canary-%s\n' "$m" >"$NN_RO/canary"
	chmod 0666 "$NN_RO/canary"
	al_probe "${NN[@]}" --ro "$NN_RO:/data" -- write /data/canary clobbered
	al_assert_eq "$(al_kv write)" EROFS "write into a --ro bind"
	al_assert_eq "$(cat "$NN_RO/canary")" "canary-$m" "host canary behind --ro (judged from outside)"
	rw=$(al_tmpdir 0777)
	al_probe "${NN[@]}" --rw "$rw:/out" -- write /out/new "made-$m"
	al_assert_rc 0
	al_assert_eq "$(cat "$rw/new")" "made-$m" "a file written through --rw"
	al_assert_eq "$(stat -c %u "$rw/new")" "$AL_PAYLOAD_HOST_UID" "owner of a file written through --rw"
	for dir in /workspace /tmp /dev/shm; do
		al_box "${NN[@]}" --disk 8M -- /bin/sh -c "head -c 12582912 /dev/zero > $dir/fill; echo rc=\$?"
		al_assert_contains "$AL_ERR" "No space left on device" "filling $dir under --disk 8M"
	done
}

# nn_workdir_refused MARKER: --workdir is refused (neither bwrap 0.8 nor the OCI bundle has an
# overlay, so the host directory could only be bound read-write and the job's set-id files, FIFOs
# and modes would land on the host as it left them); the directory is as it was. Sets NN_WD.
nn_workdir_refused() {
	local m=$1 wd
	wd=$(al_tmpdir 0777)
	NN_WD=$wd
	printf 'seed-%s\n' "$m" >"$wd/seed"
	# (this test runs as a native one: the helper passes --backend when AL_BACKEND names it)
	AL_BACKEND=$NN_NAME al_expect_workdir_refused "$wd"
	al_assert_eq "$(cat "$wd/seed")" "seed-$m" "the --workdir seed after the refusal"
	if [ -e "$wd/new" ] || [ -e "$wd/fifo" ]; then al_fail "the refused job left files in the --workdir"; fi
}

# nn_network NAMESPACE-ONLY-OPTS...: a host listener hears nothing, with the full policy and with
# the namespace alone (the options that turn the other layers off); only lo exists inside.
nn_network() {
	local log inside
	log="$AL_TEST_ROOT/listen.log"
	al_listen "$log"
	"$AL_HOST_PROBE" connect 127.0.0.1 "$AL_LISTEN_TCP" >/dev/null || al_fail "control: host probe cannot reach the listener"
	for _ in $(seq 40); do grep -q '^tcp-data' "$log" && break; sleep 0.05; done
	grep -q '^tcp-data' "$log" || al_fail "control: the listener did not record the host's bytes"
	: >"$log"
	# --net none: the job's own lo is up and inet sockets are allowed, so 127.0.0.1 is the sandbox's
	# own and refuses the host listener's port; the listener, below, must hear nothing.
	al_probe "${NN[@]}" -- connect 127.0.0.1 "$AL_LISTEN_TCP"
	al_assert_rc 1
	al_assert_eq "$(al_kv connect)" ECONNREFUSED "connect inside (the sandbox's own lo)"
	al_probe "${NN[@]}" "$@" -- connect 127.0.0.1 "$AL_LISTEN_TCP"
	al_assert_rc 1
	al_assert_eq "$(al_kv connect)" ECONNREFUSED "connect inside, namespace only"
	al_probe "${NN[@]}" --seccomp off -- udp-send 127.0.0.1 "$AL_LISTEN_UDP"
	sleep 0.5
	[ ! -s "$log" ] || al_fail "the host listener saw traffic from the sandbox: $(cat "$log")"
	al_pass "the host listener saw nothing from the sandbox"
	al_listen_stop
	al_probe "${NN[@]}" -- read /proc/net/dev
	inside=$(printf '%s\n' "$AL_OUT" | awk -F: 'NF > 1 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' ')
	al_assert_eq "$inside" "lo " "interfaces inside"
}

# nn_proxy: the allowlist posture. The egress proxy's namespace is airlock's and the runtime runs
# inside it; a host HTTP server on loopback is named allowed.test and denied.test by a hosts file.
nn_proxy() {
	local srv port px
	srv=$(al_tmpdir)
	al_http_host "$srv"
	port=$AL_HTTP_PORT
	printf '127.0.0.1 allowed.test denied.test\n' >"$srv/hosts"
	chmod 0644 "$srv/hosts"
	px=(--proxy-hosts "$srv/hosts" --net "allow=allowed.test:$port" --allow-private 127.0.0.1/32 --proxy-http)
	al_box "${NN[@]}" "${px[@]}" --json -- /bin/sh -c \
		"curl -sS http://allowed.test:$port/ok; curl -sS -o /dev/null -w '%{http_code}\n' http://denied.test:$port/no;
		 curl -sS --noproxy '*' -o /dev/null http://127.0.0.1:$port/direct 2>/dev/null; echo direct=\$?"
	al_assert_eq "$(j enforced.network)" allow "enforced.network"
	al_assert_eq "$(j enforced.network_namespace)" airlock "enforced.network_namespace"
	al_assert_eq "$(j proxy.served)" true "the proxy got its socket from the sandbox's namespace"
	al_assert_contains "$(j stdout.data)" "hello /ok" "an allowed name through the proxy"
	al_assert_contains "$(j stdout.data)" "403" "a name off the allowlist"
	# 127.0.0.1:$port inside is the sandbox's own loopback, where airlock's capture listens on the
	# allowlist's ports: an address that no allowed name resolved to is reset, and the host's server
	# never sees the request (its log below holds /ok alone).
	[ "$(al_kv direct "$(j stdout.data)")" != 0 ] || al_fail "a direct request to 127.0.0.1:$port succeeded"
	al_assert_eq "$(j proxy.allowed)/$(j proxy.denied)" 1/2 "proxy decisions (denied: denied.test, and the direct request)"
	al_assert_eq "$(cat "$srv/access.log")" /ok "what the host server saw"
}

# nn_seccomp: airlock's filter answers EPERM to the calls it denies and leaves a control call
# alone; without it the same calls reach the kernel. Sets T (al-try-syscall inside).
nn_seccomp() {
	local c
	[ -x "$AL_PROBE_DIR/al-try-syscall" ] || al_fail "al-try-syscall was not built"
	T=/probe/al-try-syscall
	al_box "${NN[@]}" -- "$T" keyctl bpf ptrace unshare close
	al_assert_rc 0
	for c in keyctl bpf ptrace unshare; do
		al_assert_eq "$(ans "$c")" EPERM "$c under the default profile"
	done
	al_assert_eq "$(ans close)" EBADF "a control call keeps the kernel's answer"
	al_box "${NN[@]}" --seccomp off -- "$T" keyctl bpf
	for c in keyctl bpf; do
		case "$(ans "$c")" in
		"" | EPERM) al_fail "$c answers '$(ans "$c")' with --seccomp off: the check proves nothing" ;;
		esac
		al_pass "$c without the filter: $(ans "$c")"
	done
}

# nn_timeout: the wall clock kills the whole tree, a daemon included (3 s: the runtime's start, slow
# on a loaded host, counts against the deadline, and the daemon must report before it).
nn_timeout() {
	local m
	m=$(al_marker)
	al_probe "${NN[@]}" --time 3 --json -- daemon "$m" 30 30
	al_assert_rc 124
	al_assert_eq "$(j status)" timeout "status at the deadline"
	al_assert_contains "$(j stdout.data)" "daemon=" "the daemon started"
	al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) survived the timeout"
}

# nn_daemon_outlived: a daemon outliving its payload is killed, and airlock does not wait for it.
nn_daemon_outlived() {
	local m t0
	m=$(al_marker)
	t0=$(date +%s%N)
	al_probe "${NN[@]}" --time 20 -- daemon "$m" 30 0
	al_assert_rc 0
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 5000 ] || al_fail "airlock waited for a daemon after its payload exited"
	al_wait_marker_gone "$m" 2 || al_fail "the daemon ($m) outlived its job"
}

# nn_flood: the output cap holds on stdout and on stderr (which passes through the monitor).
nn_flood() {
	al_probe "${NN[@]}" --output-limit 4K --json -- flood 1048576
	al_assert_eq "$(j status)" output-limit "status of a flood"
	al_assert_eq "$(j stdout.kept)" 4096 "bytes kept"
	al_assert_eq "$(j stdout.bytes)" 1048576 "bytes counted"
	al_probe "${NN[@]}" --output-limit 4K --json -- flood 1048576 2
	al_assert_eq "$(j status)" output-limit "status of a stderr flood"
	al_assert_eq "$(j stderr.kept)" 4096 "stderr bytes kept"
	al_assert_eq "$(j stderr.bytes)" 1048576 "stderr bytes counted"
}

# nn_cgroup_limits: memory and pids through the job's cgroup (airlock's, not the runtime's), or
# an explicit --memory refused where there is no usable cgroup.
nn_cgroup_limits() {
	al_probe "${NN[@]}" --json -- exit 0
	if [ "$(al_json_type "$AL_OUT" enforced.cgroup)" = object ]; then
		al_run run "${NN[@]}" --memory 64M --time 30 --json -- /usr/bin/python3 -c '
a = []
while True:
    a.append(bytearray(1 << 20))'
		al_assert_rc 137
		al_assert_eq "$(j status)" oom "memory bomb status (the cgroup is airlock's)"
		al_probe "${NN[@]}" --pids 32 --time 20 --json -- forkloop 500 1
		al_assert_contains "$(j stdout.data)" "fork=EAGAIN" "fork bomb under --pids 32"
		al_assert_eq "$(j pids_limit_hit)" true "pids_limit_hit"
	else
		al_run run "${NN[@]}" --memory 64M -- /bin/true
		al_assert_rc 125
		al_assert_contains "$AL_ERR" cgroup "an explicit --memory without a usable cgroup"
	fi
}

# nn_env MARKER: a variable of airlock's caller does not reach the payload; AL_OUT keeps `env`'s output.
nn_env() {
	export AL_LEAK_CANARY="leak-$1"
	al_probe "${NN[@]}" -- env
	al_assert_not_contains "$AL_OUT" "$1" "environment inside"
	unset AL_LEAK_CANARY
}

# refused TOKEN AIRLOCK-RUN-ARGS...: 125, a message naming TOKEN, and the payload never ran
# (its witness file, written through --rw, is not there). nn_refusals sets witness and ran.
refused() {
	local token=$1
	shift
	al_run run "${NN[@]}" --ro "$AL_PROBE_DIR:/probe" --rw "$witness:/out" "$@" -- "${ran[@]}"
	al_assert_rc 125
	printf '%s\n' "$AL_ERR" | grep -qiE -e "$token" || al_fail "the refusal does not name '$token': $AL_ERR"
	[ ! -e "$witness/ran" ] || al_fail "the payload ran despite the refusal ($*)"
	al_pass "refused ($token): $AL_ERR"
}

# nn_refusals: what neither runtime can enforce is refused. Landlock is airlock-init's, so a
# floor that requires it holds. Uses NN_WD (nn_workdir_refused's).
nn_refusals() {
	local co
	witness=$(al_tmpdir 0777)
	ran=("$P" write /out/ran yes)
	co=$(al_tmpdir 0755)
	al_probe "${NN[@]}" --require landlock -- exit 0
	al_assert_rc 0
	refused 'checkout-mode copy' --checkout "$co" --checkout-mode copy
	refused 'keep-changes' --checkout "$co" --keep-changes "$AL_TEST_ROOT/kept"
	refused 'subids' --subids
	refused 'fallback' --fallback
	refused 'cannot cap --workdir with --disk' --workdir "$NN_WD" --disk 8M # (this refusal comes before the --workdir one)
}

# nn_runtime_missing PATH PACKAGE: as root, with PATH hidden (a private mount namespace of this
# one command only), the backend is refused naming it; the same command works with it present.
nn_runtime_missing() {
	[ "$AL_TEST_MODE" = root ] || return 0
	al_run run "${NN[@]}" -- /bin/true
	al_assert_rc 0
	AL_RC=0
	# shellcheck disable=SC2016 # "$0" and "$1" are expanded by the inner shell
	AL_ERR=$(unshare --mount --propagation private /bin/sh -c \
		'mount --bind /dev/null "$1" && exec "$0" run --backend "$2" -- /bin/true' "$AL_AIRLOCK_BIN" "$1" "$NN_NAME" 2>&1) || AL_RC=$?
	al_assert_eq "$AL_RC" 125 "exit status without $1"
	al_assert_contains "$AL_ERR" "needs $1 ($2)" "refusal without ${1##*/}"
}

# nn_check: `airlock check --json` lists the backend as available, with airlock-init's Landlock and
# the egress proxy.
nn_check() {
	al_run check --json
	al_assert_rc 0
	al_assert_eq "$(j "backend_layers.$NN_NAME.available")" true "check: $NN_NAME available"
	al_assert_eq "$(j "backend_layers.$NN_NAME.landlock")" true "check: $NN_NAME's airlock-init applies Landlock"
	al_assert_eq "$(j "backend_layers.$NN_NAME.egress_proxy")" true "check: $NN_NAME serves the egress proxy"
}
