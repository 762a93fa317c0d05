#!/bin/bash
# verdict.sh — the verdict JSON: one line, every key of the schema with its type; --result-file/--result-fd.
. "$(dirname "$0")/../lib.sh"

# check_schema FILE: every key of the SPEC's verdict with the right type; prints problems.
check_schema() {
	"$AL_PY" - "$1" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
bad = []
if text.count("\n") != 1 or not text.endswith("\n"):
    bad.append("not exactly one line")
try:
    v = json.loads(text)
except ValueError as e:
    sys.exit(print("not JSON (%s): %r" % (e, text[:200])))
num = (int, float)
def isnum(x): return isinstance(x, num) and not isinstance(x, bool)
def isint(x): return isinstance(x, int) and not isinstance(x, bool)
def check(obj, path, spec):
    for key, want in spec.items():
        if not isinstance(obj, dict) or key not in obj:
            bad.append("missing %s%s" % (path, key)); continue
        x = obj[key]
        if isinstance(want, dict):
            check(x, path + key + ".", want)
        elif not want(x):
            bad.append("bad type/value %s%s = %r" % (path, key, x))
intnull = lambda x: x is None or isint(x)
stream = {"bytes": isint, "kept": isint, "truncated": lambda x: isinstance(x, bool)}
boolean = lambda x: isinstance(x, bool)
check(v, "", {
    "version": lambda x: x == 1,
    "status": lambda x: x in ("exited", "signaled", "timeout", "output-limit", "killed", "oom", "setup-error"),
    "exit_code": intnull, "signal": intnull,
    "wall_time_s": isnum, "cpu_user_s": isnum, "cpu_system_s": isnum,
    "peak_rss_kib": isint,
    "stdout": stream, "stderr": stream,
    "backend": lambda x: isinstance(x, str),
    "enforced": {
        "namespaces": {k: boolean for k in ("user", "pid", "mount", "net", "ipc", "uts", "cgroup")},
        "pivot_root": boolean, "readonly_root": boolean,
        "id_map": {"mode": lambda x: x in ("range", "single", "pair", "subids"), "host_base": isint, "count": isint},
        "setgroups": lambda x: x in ("deny", "cleared"),
        "payload_uid": isint, "payload_host_uid": isint, "payload_gid": isint, "payload_host_gid": isint,
        "no_new_privs": boolean, "capabilities": lambda x: isinstance(x, str),
        "environment": lambda x: isinstance(x, str), "network": lambda x: isinstance(x, str),
        "rlimits": {k: intnull for k in ("cpu_s", "fsize", "nofile", "core", "as")},
        # Issue 2 has these false; later layers report what they applied (docs/verdict.md).
        "seccomp": lambda x: x is False or x in ("default", "strict"),
        "landlock": lambda x: x is False or (isinstance(x, dict) and isint(x.get("abi"))
                                             and all(isinstance(x.get(k), bool) for k in ("fs", "net", "scoped"))),
        "cgroup": lambda x: x is False or (isinstance(x, dict) and x.get("version") in ("v1", "v2")
                                           and all(isinstance(x.get(k), bool) for k in ("memory", "pids", "cpu"))),
    },
})
if v.get("status") != "setup-error" and "error" in v:
    bad.append("error key present without setup-error")
for s in ("stdout", "stderr"):
    st = v.get(s, {})
    if isinstance(st, dict) and "data" in st and not isinstance(st["data"], str):
        bad.append("%s.data is not a string" % s)
print("\n".join(bad))
PY
}

# ---- --json in capture mode
al_box --json -- /bin/sh -c 'echo hello; echo oops >&2; exit 3'
al_assert_rc 3
printf '%s\n' "$AL_OUT" >"$AL_TEST_ROOT/v1.json"
problems=$(check_schema "$AL_TEST_ROOT/v1.json")
[ -z "$problems" ] || al_fail "verdict schema: $problems"
al_pass "verdict has every key with the right type"
j="$AL_TEST_ROOT/v1.json"
al_assert_eq "$(al_json_get "$j" status)" exited "status"
al_assert_eq "$(al_json_get "$j" exit_code)" 3 "exit_code"
al_assert_eq "$(al_json_get "$j" signal)" null "signal"
al_assert_eq "$(al_json_get "$j" backend)" "$AL_BACKEND" "backend"
al_assert_eq "$(al_json_get "$j" stdout.data)" hello "stdout.data"
al_assert_eq "$(al_json_get "$j" stdout.bytes)" 6 "stdout.bytes"
al_assert_eq "$(al_json_get "$j" stdout.kept)" 6 "stdout.kept"
al_assert_eq "$(al_json_get "$j" stdout.truncated)" false "stdout.truncated"
al_assert_eq "$(al_json_get "$j" stderr.data)" oops "stderr.data"
al_assert_eq "$(al_json_get "$j" stderr.bytes)" 5 "stderr.bytes"
al_assert_eq "$AL_ERR" "" "airlock's stderr in capture mode"
# What the verdict says was enforced matches the SPEC and this run mode.
for ns in user pid mount net ipc uts cgroup; do
	want=true
	# gVisor's kernel emulates its own cgroupfs: no kernel cgroup namespace (backend_layers.cgroupns)
	[ "$ns" != cgroup ] || al_backend_is native || al_backend_enforces cgroupns || want=false
	al_assert_eq "$(al_json_get "$j" "enforced.namespaces.$ns")" "$want" "enforced.namespaces.$ns"
done
for k in pivot_root readonly_root no_new_privs; do
	want=true
	# gVisor: the payload's root is gVisor's own mount tree; no pivot_root on the host's kernel
	[ "$k" != pivot_root ] || ! al_backend_is gvisor || want=false
	al_assert_eq "$(al_json_get "$j" "enforced.$k")" "$want" "enforced.$k"
done
if al_backend_is gvisor; then
	al_assert_eq "$(al_json_get "$j" enforced.kernel)" gvisor "enforced.kernel (gvisor)"
	al_assert_eq "$(al_json_get "$j" enforced.platform)" ptrace "enforced.platform (gvisor)"
fi
al_assert_eq "$(al_json_get "$j" enforced.capabilities)" none "enforced.capabilities"
al_assert_eq "$(al_json_get "$j" enforced.environment)" scrubbed "enforced.environment"
al_assert_eq "$(al_json_get "$j" enforced.network)" none "enforced.network"
al_assert_eq "$(al_json_get "$j" enforced.payload_uid)" 1000 "enforced.payload_uid"
al_assert_eq "$(al_json_get "$j" enforced.payload_host_uid)" "$AL_PAYLOAD_HOST_UID" "enforced.payload_host_uid"
if al_backend_is bwrap; then
	# bwrap runs unprivileged (as id_base+1000 for a root caller) and maps only itself.
	al_assert_eq "$(al_json_get "$j" enforced.id_map.mode)" single "enforced.id_map.mode (bwrap)"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.host_base)" "$AL_PAYLOAD_HOST_UID" "enforced.id_map.host_base (bwrap)"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.count)" 1 "enforced.id_map.count (bwrap)"
	al_assert_eq "$(al_json_get "$j" enforced.setgroups)" deny "enforced.setgroups (bwrap)"
	al_assert_eq "$(al_json_get "$j" enforced.bwrap)" /usr/bin/bwrap "enforced.bwrap"
elif al_backend_is oci gvisor && [ "$AL_CALLER_UID" = 0 ]; then
	# The container maps two ids only: its root to id_base, the sandbox user to id_base+1000.
	al_assert_eq "$(al_json_get "$j" enforced.id_map.mode)" pair "enforced.id_map.mode ($AL_BACKEND)"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.host_base)" "$AL_ID_BASE" "enforced.id_map.host_base ($AL_BACKEND)"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.count)" 2 "enforced.id_map.count ($AL_BACKEND)"
	al_assert_eq "$(al_json_get "$j" enforced.setgroups)" deny "enforced.setgroups ($AL_BACKEND)"
elif [ "$AL_CALLER_UID" = 0 ]; then
	al_assert_eq "$(al_json_get "$j" enforced.id_map.mode)" range "enforced.id_map.mode"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.host_base)" "$AL_ID_BASE" "enforced.id_map.host_base"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.count)" 65536 "enforced.id_map.count"
else
	al_assert_eq "$(al_json_get "$j" enforced.id_map.mode)" single "enforced.id_map.mode"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.host_base)" "$AL_CALLER_UID" "enforced.id_map.host_base"
	al_assert_eq "$(al_json_get "$j" enforced.id_map.count)" 1 "enforced.id_map.count"
	al_assert_eq "$(al_json_get "$j" enforced.setgroups)" deny "enforced.setgroups"
fi
# Another backend says what it cannot enforce (backend_layers of airlock check) as not enforced.
if ! al_backend_is native; then
	al_backend_enforces landlock ||
		al_assert_eq "$(al_json_get "$j" enforced.landlock)" false "enforced.landlock ($AL_BACKEND cannot enforce it)"
	al_backend_enforces seccomp ||
		al_assert_eq "$(al_json_get "$j" enforced.seccomp)" false "enforced.seccomp ($AL_BACKEND cannot enforce it)"
	al_backend_enforces cgroup_limits ||
		al_assert_eq "$(al_json_get "$j" enforced.cgroup)" false "enforced.cgroup ($AL_BACKEND cannot enforce it)"
fi
al_assert_eq "$(al_json_get "$j" enforced.rlimits.nofile)" 1024 "enforced.rlimits.nofile"
al_assert_eq "$(al_json_get "$j" enforced.rlimits.fsize)" 1073741824 "enforced.rlimits.fsize"
al_assert_eq "$(al_json_get "$j" enforced.rlimits.core)" 0 "enforced.rlimits.core"
al_assert_eq "$(al_json_get "$j" enforced.rlimits.cpu_s)" null "enforced.rlimits.cpu_s"
al_assert_eq "$(al_json_get "$j" enforced.rlimits.as)" null "enforced.rlimits.as"
# Options show up in what was enforced. gVisor's kernel never stops a payload at RLIMIT_CPU, so
# --cpu-time is refused there (never claimed in enforced.rlimits.cpu_s).
cpu=(--cpu-time 1500ms)
if al_backend_is gvisor; then
	al_expect_refusal 'the gvisor backend cannot enforce --cpu-time' --cpu-time 1500ms
	cpu=()
fi
# Under oci the container's init is airlock itself (a sanitized build of it needs terabytes of
# address space): it sets the rlimits in the payload only, so --address-space is asked everywhere.
al_probe --json --open-files 64 --file-size 1M "${cpu[@]}" --address-space 1G -- exit 0
al_assert_rc 0
al_assert_eq "$(al_json_get "$AL_OUT" enforced.rlimits.nofile)" 64 "rlimits.nofile with --open-files 64"
al_assert_eq "$(al_json_get "$AL_OUT" enforced.rlimits.fsize)" 1048576 "rlimits.fsize with --file-size 1M"
if [ ${#cpu[@]} -gt 0 ]; then
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.rlimits.cpu_s)" 2 "rlimits.cpu_s with --cpu-time 1500ms (rounded up)"
else
	al_assert_eq "$(al_json_get "$AL_OUT" enforced.rlimits.cpu_s)" null "rlimits.cpu_s without --cpu-time (gvisor)"
fi
al_assert_eq "$(al_json_get "$AL_OUT" enforced.rlimits.as)" 1073741824 "rlimits.as with --address-space 1G"
# ... and what the payload holds, read from inside (the shell's ulimit: gVisor has no
# /proc/self/limits). dash: -f in 512-byte blocks, -v in KiB, -t the soft limit in seconds.
al_box --open-files 64 --file-size 1M "${cpu[@]}" --address-space 1G -- /bin/sh -c \
	'echo nofile=$(ulimit -n) fsize=$(ulimit -f) as=$(ulimit -v) cpu=$(ulimit -t) core=$(ulimit -c)'
al_assert_rc 0
want_cpu=2
[ ${#cpu[@]} -gt 0 ] || want_cpu=unlimited
al_assert_eq "$AL_OUT" "nofile=64 fsize=2048 as=1048576 cpu=$want_cpu core=0" "the payload's rlimits, from inside"
# ... and they hold: an allocation beyond --address-space fails, a write beyond --file-size too.
al_box --address-space 256M --file-size 64K -- /usr/bin/python3 -c '
import os, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try:
    b = bytearray(512 << 20)
    print("alloc=ok")
except MemoryError:
    print("alloc=MemoryError")
try:
    with open("/tmp/big", "wb") as f:
        f.write(b"x" * (128 << 10))
    print("write=ok")
except OSError as e:
    print("write=" + os.strerror(e.errno))'
al_assert_eq "$(al_kv alloc)" MemoryError "512M allocation under --address-space 256M"
al_assert_eq "$(al_kv write)" "File too large" "128K write under --file-size 64K"
# ... and one too small to load a program is refused, naming the floor (--address-space 1 was
# accepted, and the payload died of SIGSEGV).
al_run run --address-space 1 -- /bin/true
al_assert_rc 125
al_assert_contains "$AL_ERR" "--address-space must be at least 16M" "the refusal of --address-space 1"

# ---- --result-file: the verdict goes to the file, the payload's output streams live
rd=$(al_tmpdir 0755)
chown "$AL_CALLER_UID" "$rd"
al_box --result-file "$rd/v.json" -- /bin/sh -c 'echo live-out; echo live-err >&2'
al_assert_rc 0
al_assert_eq "$AL_OUT" live-out "airlock's stdout (live)"
al_assert_contains "$AL_ERR" live-err "airlock's stderr (live)"
[ -s "$rd/v.json" ] || al_fail "--result-file did not write $rd/v.json"
problems=$(check_schema "$rd/v.json")
[ -z "$problems" ] || al_fail "--result-file verdict schema: $problems"
al_assert_eq "$(al_json_get "$rd/v.json" status)" exited "--result-file status"
al_assert_eq "$(al_json_get "$rd/v.json" stdout.bytes)" 9 "--result-file stdout.bytes"
al_assert_eq "$(al_json_type "$rd/v.json" stdout.data)" missing "stdout.data in live mode"

# ---- --result-fd
exec 3>"$rd/fd.json"
al_probe --result-fd 3 -- exit 7
exec 3>&-
al_assert_rc 7
al_assert_eq "$AL_OUT" "" "airlock's stdout with --result-fd"
problems=$(check_schema "$rd/fd.json")
[ -z "$problems" ] || al_fail "--result-fd verdict schema: $problems"
al_assert_eq "$(al_json_get "$rd/fd.json" exit_code)" 7 "--result-fd exit_code"
