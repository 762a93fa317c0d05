#!/usr/bin/env bash
# install.sh — `cmake --install` into a prefix, judged by using what it installed: the libraries
# export the header's functions alone; docs/library.md's example, built against them with
# pkg-config (shared and static), runs a sandboxed command; airlock serve runs on a socket passed as
# systemd passes it (LISTEN_PID, LISTEN_FDS) and refuses what it cannot serve; the units verify.
. "$(dirname "$0")/../lib.sh"

BUILD=$(dirname "$AIRLOCK")
[ -f "$BUILD/CMakeCache.txt" ] || al_fail "no CMake build directory at $BUILD (beside AIRLOCK)"
for tool in cmake cc pkg-config nm readelf curl; do
	command -v "$tool" >/dev/null || al_fail "$tool is missing (scripts/deps.sh installs it)"
done
T=$(al_tmpdir)
PREFIX=$T/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >"$T/install.log" 2>&1 ||
	al_fail "cmake --install failed: $(tail -n 5 "$T/install.log")"
for f in bin/airlock bin/airlock-serve bin/airlock-runc lib/libairlock.a include/airlock/airlock.h \
	lib/pkgconfig/airlock.pc share/man/man1/airlock.1 share/doc/airlock/examples/config.yaml \
	lib/systemd/system/airlock.service lib/systemd/system/airlock.socket; do
	[ -e "$PREFIX/$f" ] || al_fail "cmake --install did not install $f"
done
al_assert_eq "$(readlink "$PREFIX/bin/airlock-runc")" airlock "bin/airlock-runc links to"
[ ! -e "$PREFIX/bin/al-probe" ] || al_fail "the test probe al-probe was installed"
al_pass "the programs, library, header, pkg-config file, man page, example configuration and units are installed"

# The example configuration is the embedded one, and airlock accepts it as it is.
al_run config check "$PREFIX/share/doc/airlock/examples/config.yaml"
al_assert_rc 0

export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
LIBDIR=$(pkg-config --variable=libdir airlock)
al_assert_eq "$LIBDIR" "$PREFIX/lib" "pkg-config's libdir"
al_assert_eq "$(pkg-config --modversion airlock)" "$(sed -n 's/^project(airlock VERSION \([0-9.]*\).*/\1/p' "$AL_SRC/CMakeLists.txt")" \
	"pkg-config's version"

# ---- exported symbols: the header's functions, nothing else (the sanitizers' runtime hooks aside)
cc -E -P -xc "$PREFIX/include/airlock/airlock.h" | grep -oE '\bal_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u >"$T/header"
[ "$(wc -l <"$T/header")" -ge 50 ] || al_fail "only $(wc -l <"$T/header") functions found in airlock.h"
exported() { if [ -n "${AL_SANITIZED:-}" ]; then grep -vE '^__(asan|ubsan|odr_asan|sancov)'; else cat; fi; }
so=$(readlink -f "$LIBDIR/libairlock.so")
nm -D --defined-only "$so" | awk '{ print $NF }' | exported | sort -u >"$T/so"
diff "$T/header" "$T/so" >"$T/so.diff" || al_fail "libairlock.so exports other than the header's functions (< header, > exported): $(head -n 20 "$T/so.diff")"
al_pass "libairlock.so exports the $(wc -l <"$T/header") functions of airlock.h and nothing else"
nm -g --defined-only "$LIBDIR/libairlock.a" | awk 'NF == 3 { print $3 }' | exported | sort -u >"$T/a"
diff "$T/header" "$T/a" >"$T/a.diff" || al_fail "libairlock.a defines global symbols other than the header's functions: $(head -n 20 "$T/a.diff")"
al_pass "libairlock.a's global symbols are the header's functions"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
case "$soname" in libairlock.so.[0-9]*) al_pass "soname $soname" ;; *) al_fail "libairlock.so has no versioned soname ('$soname')" ;; esac
[ -e "$LIBDIR/$soname" ] || al_fail "the soname's link $LIBDIR/$soname is not installed"

# ---- docs/library.md's example, built with pkg-config, shared and static
awk '/^```c$/ { f = 1; next } /^```$/ { if (f) exit } f' "$AL_SRC/docs/library.md" >"$T/run.c"
grep -q al_job_spawn "$T/run.c" || al_fail "no C example in docs/library.md"
# Internal names of the library, defined again by the program: neither link may clash over them,
# and the library's own must stay the ones it calls (its hidden symbols cannot be interposed).
cat >"$T/clash.c" <<'EOF'
#include <stdlib.h>
int al_err(void);
int al_err(void) { abort(); }
void cg_attach(void);
void cg_attach(void) { abort(); }
EOF
SAN=()
[ -z "${AL_SANITIZED:-}" ] || SAN=("-fsanitize=address,undefined")
# shellcheck disable=SC2046 # pkg-config's flags are words
cc "${SAN[@]}" -Wall -Wextra -Werror -o "$T/run-shared" "$T/run.c" "$T/clash.c" $(pkg-config --cflags --libs airlock) \
	-Wl,-rpath,"$LIBDIR" 2>"$T/cc-shared.err" || al_fail "building against libairlock.so failed: $(head -c 2000 "$T/cc-shared.err")"
readelf -d "$T/run-shared" | grep -q "NEEDED.*\[$soname\]" || al_fail "run-shared does not load $soname"
static=$(pkg-config --static --libs airlock)
if [ -n "${AL_SANITIZED:-}" ]; then
	# ASan has no static runtime: libairlock.a statically, the C library and the sanitizers not.
	al_log "sanitized build: libairlock.a linked into a dynamic executable"
	static=${static/-lairlock/-l:libairlock.a}
else
	static="-static $static"
fi
# shellcheck disable=SC2046,SC2086 # pkg-config's flags are words
cc "${SAN[@]}" -Wall -Wextra -Werror -o "$T/run-static" "$T/run.c" "$T/clash.c" $(pkg-config --cflags airlock) $static \
	2>"$T/cc-static.err" || al_fail "building against libairlock.a failed: $(grep -v 'statically linked applications' "$T/cc-static.err" | head -c 2000)"
if [ -z "${AL_SANITIZED:-}" ]; then
	readelf -d "$T/run-static" 2>/dev/null | grep -q NEEDED && al_fail "run-static is dynamically linked"
fi
readelf -d "$T/run-static" 2>/dev/null | grep -q 'NEEDED.*libairlock' && al_fail "run-static loads libairlock.so"
al_pass "the example builds against libairlock.so ($soname) and libairlock.a, each beside a program that defines al_err and cg_attach"

# A host file the sandbox can neither read nor replace: judged from outside.
canary=$T/canary
echo "host secret" >"$canary"
chmod 0644 "$canary"
for kind in shared static; do
	rc=0
	# shellcheck disable=SC2016 # expanded by the sandbox's shell
	"${AL_SETPRIV[@]}" "$T/run-$kind" /bin/sh -c 'echo "inside as $(id -u)"; cat "$1" || echo "no $1"; echo replaced >"$1"; exit 7' \
		sh "$canary" >"$T/$kind.out" 2>"$T/$kind.err" || rc=$?
	al_assert_eq "$rc" 7 "run-$kind's exit status (the payload's)"
	al_assert_eq "$(cat "$T/$kind.out")" "inside as 1000
no $canary" "run-$kind's output (the payload's stdout)"
	verdict=$(tail -n 1 "$T/$kind.err")
	al_assert_eq "$(al_json_get "$verdict" status)" exited "run-$kind's verdict status"
	al_assert_eq "$(al_json_get "$verdict" exit_code)" 7 "run-$kind's verdict exit_code"
	al_assert_eq "$(al_json_get "$verdict" enforced.namespaces.user)" true "run-$kind's user namespace"
	al_assert_eq "$(al_json_get "$verdict" enforced.no_new_privs)" true "run-$kind's no_new_privs"
	al_assert_eq "$(al_json_get "$verdict" enforced.payload_host_uid)" "$AL_PAYLOAD_HOST_UID" "run-$kind's payload uid on the host"
	al_assert_eq "$(cat "$canary")" "host secret" "the host canary after run-$kind"
done

# ---- airlock serve on a socket passed as systemd passes it
conf=$(al_tmpdir)
al_serve_config "$conf/c.yaml"
S=$(al_tmpdir 0700)
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$S"
SERVE=("$PREFIX/bin/airlock" serve --config "$conf/c.yaml" --state-dir none --audit "$S/audit.jsonl")

# activate.py KIND SOCKET CMD...: execs CMD (same pid) with LISTEN_PID and LISTEN_FDS as systemd sets
# them and the sockets from fd 3: "unix" (one listening Unix socket at SOCKET), "two" (two), "tcp"
# (a TCP listener), "otherpid" (one Unix socket, LISTEN_PID naming another process).
cat >"$T/activate.py" <<'PY'
import os, socket, sys
kind, path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
socks = []
def unix(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(p)
    s.listen(16)
    return s
if kind in ("unix", "two", "otherpid"):
    socks.append(unix(path))
if kind == "two":
    socks.append(unix(path + ".2"))
if kind == "tcp":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    socks.append(s)
high = [os.dup(s.fileno()) for s in socks]  # above 3 and 4 before they are overwritten
for i, fd in enumerate(high):
    os.dup2(fd, 3 + i)
    os.set_inheritable(3 + i, True)
env = dict(os.environ, LISTEN_FDS=str(len(socks)), LISTEN_PID=str(os.getpid() + (kind == "otherpid")))
os.execve(argv[0], argv, env)
PY
LAUNCH=()
activate() { "${AL_SETPRIV[@]}" "${LAUNCH[@]}" "$AL_PY" "$T/activate.py" "$@"; }

# Refused, naming what: two sockets, a TCP socket, --socket beside a passed one.
rc=0
activate two "$S/two.sock" "${SERVE[@]}" >/dev/null 2>"$S/two.err" || rc=$?
al_assert_eq "$rc" 125 "serve's exit status with two sockets passed"
al_assert_contains "$(cat "$S/two.err")" "systemd passed 2 sockets (LISTEN_FDS)" "serve's refusal of two sockets"
rc=0
activate tcp x "${SERVE[@]}" >/dev/null 2>"$S/tcp.err" || rc=$?
al_assert_eq "$rc" 125 "serve's exit status with a TCP socket passed"
al_assert_contains "$(cat "$S/tcp.err")" "is not a listening Unix stream socket" "serve's refusal of a TCP socket"
rc=0
activate unix "$S/both.sock" "${SERVE[@]}" --socket "$S/own.sock" >/dev/null 2>"$S/both.err" || rc=$?
al_assert_eq "$rc" 125 "serve's exit status with --socket and a passed socket"
al_assert_contains "$(cat "$S/both.err")" "and a socket passed by systemd" "serve's refusal of --socket beside a passed socket"

lcurl() { "${AL_SETPRIV[@]}" curl -q -s -m 60 --unix-socket "$1" "${@:2}"; }

# LISTEN_PID naming another process: the variables are not ours, and serve makes its own socket.
# (not through the function: in the background it would be a subshell, and $! not serve's pid)
"${AL_SETPRIV[@]}" "$AL_PY" "$T/activate.py" otherpid "$S/other.sock" "${SERVE[@]}" --socket "$S/own.sock" 2>"$S/other.err" &
OPID=$!
AL_BG_PIDS+=("$OPID")
for _ in $(seq 150); do
	[ -S "$S/own.sock" ] && break
	sleep 0.1
done
health=$(lcurl "$S/own.sock" http://airlock/v1/health) || al_fail "serve with another process's LISTEN_PID does not answer on its own socket: $(cat "$S/other.err")"
al_assert_not_contains "$(cat "$S/other.err")" "passed by systemd" "the log of serve with another process's LISTEN_PID"
al_pass "serve with another process's LISTEN_PID ignores it (health: $health)"
kill -TERM "$OPID"
rc=0
wait "$OPID" || rc=$?
[ "$rc" = 0 ] || al_fail "serve with its own socket exited $rc on SIGTERM: $(tail -n 3 "$S/other.err")"

# The unit's hardening that holds outside systemd too: no_new_privs and its capability bounding set.
if [ "$AL_TEST_MODE" = root ]; then
	drop=$(sed -n 's/^CapabilityBoundingSet=~//p' "$PREFIX/lib/systemd/system/airlock.service" | tr ' ' '\n' |
		sed -n 's/^CAP_\(.*\)/-\1/p' | tr '[:upper:]' '[:lower:]' | paste -sd, -)
	[ -n "$drop" ] || al_fail "airlock.service drops no capability from its bounding set"
	LAUNCH=(setpriv --no-new-privs --bounding-set "$drop" --)
	al_log "serve runs as the unit would: ${LAUNCH[*]}"
fi
sock=$S/serve.sock
if command -v systemd-socket-activate >/dev/null; then
	# systemd's own tool: listens, and at the first connection execs serve with the socket.
	"${AL_SETPRIV[@]}" "${LAUNCH[@]}" systemd-socket-activate -l "$sock" "${SERVE[@]}" 2>"$S/serve.err" &
	how="systemd-socket-activate"
else
	"${AL_SETPRIV[@]}" "${LAUNCH[@]}" "$AL_PY" "$T/activate.py" unix "$sock" "${SERVE[@]}" 2>"$S/serve.err" &
	how="a launcher setting LISTEN_FDS=1 and LISTEN_PID"
fi
SPID=$!
AL_BG_PIDS+=("$SPID")
for _ in $(seq 150); do
	[ -S "$sock" ] && break
	sleep 0.1
done
[ -S "$sock" ] || al_fail "no socket at $sock from $how: $(cat "$S/serve.err")"
created=$(lcurl "$sock" -X POST -H 'Content-Type: application/json' -d '{}' http://airlock/v1/sandboxes)
sb=$(al_json_get "$created" sandbox_id) || al_fail "no sandbox from serve started by $how: $created $(cat "$S/serve.err")"
al_assert_contains "$(cat "$S/serve.err")" "listening on $sock (passed by systemd" "serve's log"
# shellcheck disable=SC2016 # expanded by the sandbox's shell
out=$(lcurl "$sock" -X POST -H 'Content-Type: application/json' -d '{"language":"shell","code":"echo from $(id -u) in the sandbox; exit 3"}' \
	"http://airlock/v1/sandboxes/$sb/exec")
result=$(printf '%s\n' "$out" | tail -n 1)
al_assert_eq "$(al_json_get "$result" result.exit_code)" 3 "the exec's exit code over the passed socket"
al_assert_eq "$(al_json_get "$result" result.stdout)" "from 1000 in the sandbox" "the exec's stdout over the passed socket"
al_assert_eq "$(al_json_get "$result" result.verdict.enforced.namespaces.user)" true "the exec's user namespace"
grep -q "\"uid:$AL_CALLER_UID\"" "$S/audit.jsonl" || al_fail "the audit log does not name the socket's peer uid:$AL_CALLER_UID"
al_pass "serve started by $how answers over the passed socket; its peer is uid:$AL_CALLER_UID"
if [ "$AL_TEST_MODE" = root ]; then
	al_assert_eq "$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$SPID/status")" 1 "serve's no_new_privs"
	bnd=$(awk '/^CapBnd:/ { print $2 }' "/proc/$SPID/status")
	(((0x$bnd >> 16) & 1)) && al_fail "serve's bounding set still holds CAP_SYS_MODULE (CapBnd $bnd)"
	al_pass "serve ran with no_new_privs and the unit's bounding set (CapBnd $bnd)"
fi
kill -TERM "$SPID"
rc=0
wait "$SPID" || rc=$?
al_assert_eq "$rc" 0 "serve's exit status on SIGTERM"
[ -S "$sock" ] || al_fail "serve removed the socket systemd made (its maker's to remove)"
al_pass "serve left the passed socket where its maker put it"

# ---- the units, as systemd reads them (their man page is in the prefix, not where man looks)
if command -v systemd-analyze >/dev/null; then
	(cd "$PREFIX/lib/systemd/system" && MANPATH=$PREFIX/share/man systemd-analyze verify ./airlock.socket ./airlock.service) \
		>"$T/verify.out" 2>&1 || al_fail "systemd-analyze verify: $(cat "$T/verify.out")"
	al_pass "systemd-analyze verify accepts airlock.socket and airlock.service"
elif [ "${CI:-}" = true ]; then
	al_fail "systemd-analyze is missing: the units cannot be verified (Debian's systemd package has it)"
else
	al_log "no systemd-analyze: the units are not verified"
fi
al_assert_contains "$(cat "$PREFIX/lib/systemd/system/airlock.service")" "ExecStart=$PREFIX/bin/airlock serve" "the installed unit's command"
al_assert_contains "$(cat "$PREFIX/lib/systemd/system/airlock.socket")" "SocketMode=0600" "the socket unit"
