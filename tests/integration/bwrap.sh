#!/bin/bash
# bwrap.sh — `--backend bwrap`: the same policy and supervisor under /usr/bin/bwrap. What bwrap claims
# is judged from outside like the native tests do; what it cannot enforce is refused with 125.
# The checks oci.sh shares are tests/nonnative.sh's; what is bwrap's alone is here.
. "$(dirname "$0")/../lib.sh"

[ -x /usr/bin/bwrap ] || al_skip "/usr/bin/bwrap is not installed (Debian package bubblewrap)"
NN=(--backend bwrap)
. "$(dirname "$0")/../nonnative.sh"

# ---- hello world, exit codes, signals, the verdict names the backend
nn_hello 9 15
nn_verdict enforced.bwrap /usr/bin/bwrap user pid mount net ipc uts
nn_missing_program

# ---- identity: no capability, no_new_privs, uid 1000 inside, never host root outside
al_identity_inside "${NN[@]}"
m=$(al_marker)
al_payload_start "$m" "${NN[@]}"
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
nn_hidden_files "$m"
for d in /root /var /srv; do
	[ -e "$d" ] || continue
	al_probe "${NN[@]}" -- ls "$d"
	al_assert_eq "$(al_kv ls)" ENOENT "host $d inside"
done
# /home is the sandbox's own: one link, user -> the workspace (E2B's home), none of the host's homes.
al_run run "${NN[@]}" -- sh -c 'ls -A /home; readlink /home/user'
al_assert_eq "$AL_OUT" "user
/workspace" "/home inside holds only the link to the workspace"
nn_not_writable /usr/bin/env /usr /usr/bin / /etc
nn_binds "$m"
al_probe "${NN[@]}" --ro "$NN_RO:/data" -- read /data/canary
al_assert_eq "$AL_OUT" "canary-$m" "read through --ro"
nn_workdir_refused "$m"

# ---- the network: a host listener hears nothing; only lo exists inside. The namespace alone:
# bwrap raises lo in it, so 127.0.0.1 is the sandbox's own, and refuses.
nn_network --seccomp off
nn_proxy

# ---- the pid namespace: host processes are invisible and out of reach
al_probe "${NN[@]}" -- pids
al_assert_rc 0
n=$(printf '%s\n' "$AL_OUT" | grep -c .)
[ "$n" -le 3 ] || al_fail "expected at most 3 pids in the sandbox's /proc, got $n"
al_assert_not_contains " $(printf '%s\n' "$AL_OUT" | tr '\n' ' ') " " $$ " "pids inside"
al_bg sleep 60
victim=$AL_BG_PID
al_probe "${NN[@]}" -- kill "$victim" 9
al_assert_eq "$(al_kv kill)" ESRCH "kill of a host sleeper from inside"
kill -0 "$victim" 2>/dev/null || al_fail "the host sleeper died"

# ---- seccomp: airlock's filter, passed to bwrap by descriptor
nn_seccomp
al_box "${NN[@]}" --seccomp strict --json -- "$T" mount
al_assert_rc 159
al_assert_eq "$(j seccomp_killed)" true "strict: seccomp_killed"
al_assert_eq "$(j enforced.seccomp)" strict "strict: enforced.seccomp"

# ---- the wall clock kills the whole tree; a daemon outliving its payload is killed too
nn_timeout
nn_daemon_outlived
al_pass "nothing outlives a bwrap job"

# ---- limits: output cap, memory through the job's cgroup, scrubbed environment
nn_flood
nn_cgroup_limits
nn_env "$m"
names=$(printf '%s\n' "$AL_OUT" | sed -n 's/=.*//p' | sort | tr '\n' ' ')
# bwrap always sets PWD (to the working directory); nothing else is added.
al_assert_eq "$names" "HOME LANG LOGNAME PATH PWD TMPDIR USER " "variable names inside"

# airlock exec: the code arrives as a file of the sandbox user's in the workspace.
al_run exec --lang python "${NN[@]}" --json -c 'import os; open("main.py", "a").write("#"); print(os.getuid(), sorted(os.listdir(".")))'
al_assert_eq "$(j backend)" bwrap "exec: backend"
al_assert_eq "$(j stdout.data)" "1000 ['main.py']" "exec: the code file, writable by the sandbox user"

# ---- refusals: 125, naming what bwrap cannot enforce; the payload never runs
nn_refusals
# The floor's other layers are bwrap's to give: accepted.
al_probe "${NN[@]}" --require userns,pidns,netns,seccomp,no_new_privs -- exit 0
al_assert_rc 0
nn_runtime_missing /usr/bin/bwrap "Debian package bubblewrap"

# ---- airlock check lists bwrap and what it can enforce
nn_check
al_assert_eq "$(j backend_layers.bwrap.checkout_copy)" false "check: bwrap cannot copy a checkout"
al_run check
al_assert_contains "$AL_OUT" "bwrap can enforce" "check table row"
