#!/bin/bash
# tty.sh — `airlock run -t`: a real terminal (a pty of this test, driven as a person would) gets an
# interactive sandboxed shell with job control, on a pty of the sandbox's own devpts (never ours),
# window-size changes forwarded, vi and top working, TIOCSTI refused, and our terminal's modes
# restored however the job ends (its exit, --time, our SIGTERM). Without a terminal -t is refused.
. "$(dirname "$0")/../lib.sh"

# The driver: runs CMD on a new pty of ours (30 rows x 100 columns) and plays STEPS on it, one a
# line: "expect TEXT" (within 20 s), "send TEXT" (backslash escapes: \r, \x03...), "resize ROWS COLS",
# "kill SIGNAL" (to the pid the transcript names as APID=N), "sleep SECONDS". It prints the whole
# transcript and exits with CMD's status (99 when an expectation is not met, the transcript on stderr).
drive=$AL_TEST_ROOT/drive.py
cat >"$drive" <<'EOF'
import fcntl, os, pty, re, select, signal, struct, sys, termios, time
steps, cmd = sys.argv[1], sys.argv[3:]
def size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
pid, m = pty.fork()
if pid == 0:
    size(0, 30, 100)
    os.execvp(cmd[0], cmd)
buf, seen = b"", 0  # an expectation looks only past what the last one matched
def more(timeout):
    global buf
    r, _, _ = select.select([m], [], [], timeout)
    if not r:
        return True
    try:
        d = os.read(m, 65536)
    except OSError:
        d = b""
    buf += d
    return bool(d)
def expect(text):
    global seen
    end = time.time() + 20
    while buf.find(text.encode(), seen) < 0:
        if time.time() > end or not more(max(0.0, end - time.time())):
            sys.stderr.write("expected %r; transcript:\n%s\n" % (text, buf.decode(errors="replace")))
            os.kill(pid, signal.SIGKILL)
            sys.exit(99)
    seen = buf.find(text.encode(), seen) + len(text)
for line in open(steps).read().splitlines():
    op, _, arg = line.partition(" ")
    arg = arg.encode().decode("unicode_escape")
    if op == "expect":
        expect(arg)
    elif op == "send":
        os.write(m, arg.encode())
    elif op == "resize":
        rows, cols = arg.split()
        size(m, int(rows), int(cols))
    elif op == "kill":
        os.kill(int(re.search(rb"APID=(\d+)", buf).group(1)), getattr(signal, arg))
    elif op == "sleep":
        time.sleep(float(arg))
end = time.time() + 60
while time.time() < end and more(end - time.time()):
    pass
_, st = os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
EOF

A=("${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN")
# tty_run NAME STEPS -- CMD...: CMD on the driver's pty; AL_RC, AL_OUT (the transcript), AL_CMD.
tty_run() {
	local name=$1 steps=$AL_TEST_ROOT/$1.steps
	printf '%s\n' "$2" >"$steps"
	shift 3
	AL_CMD="$name: $*"
	AL_RC=0
	AL_OUT=$("$AL_PY" "$drive" "$steps" -- "$@" 2>"$AL_TEST_ROOT/$name.err") || AL_RC=$?
	al_log "$AL_CMD -> rc $AL_RC"
	[ "$AL_RC" != 99 ] || al_fail "$name: $(cat "$AL_TEST_ROOT/$name.err")"
}

# ---- an interactive shell with job control, in a terminal of the sandbox's own devpts. ----------
# The shell's terminal (fd 0, by its inode, /proc/self/fd/0 followed) lies on the sandbox's devpts
# mount: ours, handed in, would lie on the host's.
# shellcheck disable=SC2016
steps='expect $ 
send tty; stty size; ls /dev/pts | tr "\\n" " "; echo\r
expect 30 100
send [ "$(stat -L -c %d /proc/self/fd/0)" = "$(stat -c %d /dev/pts)" ] && echo "own-""devpts"\r
expect own-devpts
send sleep 30 &\r
expect $ 
send jobs\r
expect Running
send fg\r
expect \rsleep 30\r\n
sleep 0.5
send \x03
expect $ 
send jobs; echo "jobs""-done"\r
expect jobs-done
resize 40 120
sleep 0.5
send stty size; tput cols; echo "size""-done"\r
expect size-done
send exit 7\r'
tty_run shell "$steps" -- "${A[@]}" run -t -- bash --norc -i
al_assert_rc 7
al_assert_not_contains "$AL_OUT" "no job control" "bash -i's start"
al_assert_not_contains "$AL_OUT" "cannot set terminal process group" "bash -i's start"
al_assert_contains "$AL_OUT" "/dev/pts/0" "the shell's terminal"
al_assert_contains "$AL_OUT" "0 ptmx" "the sandbox's devpts (only its own pty)"
al_assert_contains "$AL_OUT" "own-devpts" "the terminal is of the sandbox's devpts"
al_assert_contains "$AL_OUT" "[1]+  Running" "jobs"
# ^C reached the foreground job (sleep), not the shell: jobs lists nothing afterwards.
after=${AL_OUT##*'echo "jobs""-done"'}
al_assert_not_contains "${after%%jobs-done*}" "sleep 30" "jobs after ^C to the foreground job"
al_assert_contains "$AL_OUT" $'40 120\r\n120\r\nsize-done' "stty size and tput cols after the resize"
al_pass "bash -i: job control, the sandbox's own pty, size and resize, exit status"

# ---- vi edits a file, top draws a screen (the terminal's type and size are the sandbox's). -------
# vi is reached through /etc/alternatives on the host, which the sandbox's /etc does not have.
vi=$(readlink -f /usr/bin/vi 2>/dev/null || true)
if [ -n "$vi" ] && [ -x "$vi" ] && [ "${vi#/usr/}" != "$vi" ]; then
	steps='expect ~
send ihello from vi
sleep 0.3
send \x1b
sleep 0.5
send :wq\r
expect vi-done'
	tty_run vi "$steps" -- "${A[@]}" run -t -- sh -c "$vi -n /tmp/f && cat /tmp/f && echo vi-done"
	al_assert_rc 0
	al_assert_contains "$AL_OUT" $'hello from vi\r\nvi-done' "the file vi wrote"
	al_pass "vi in the sandbox's terminal"
fi
if [ -x /usr/bin/top ]; then
	tty_run top 'expect load average' -- "${A[@]}" run -t -- top -n 1
	al_assert_rc 0
	al_assert_contains "$AL_OUT" "Tasks:" "top's screen"
	al_pass "top -n 1 in the sandbox's terminal"
fi

# ---- TIOCSTI: refused (EPERM by seccomp). The bytes it would push would be the next line the
# shell reads: it reads what we type instead. Without the filter (the control) the same call
# succeeds where the kernel allows it, so the check can fail.
# shellcheck disable=SC2016
sti='import fcntl, termios
try:
    for c in b"echo INJECTED\n":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print("sti=ok")
except OSError as e:
    print("sti=%d" % e.errno)'
steps='expect sti=
send typed\r
expect line='
for mode in default off; do
	tty_run "sti-$mode" "$steps" -- "${A[@]}" run -t --seccomp "$mode" -- sh -c "$AL_PY -c '$sti'; read -r l; echo \"line=\$l\""
	al_assert_rc 0
	line=$(grep -ao 'line=[a-zA-Z ]*' <<<"$AL_OUT" | tail -1)
	if [ "$mode" = default ]; then
		grep -Eq 'sti=(1|5)' <<<"$AL_OUT" || al_fail "TIOCSTI was not refused (EPERM/EIO): $AL_OUT"
		al_assert_eq "$line" "line=typed" "the line read after a refused TIOCSTI"
	elif grep -q 'sti=ok' <<<"$AL_OUT"; then
		al_assert_eq "$line" "line=echo INJECTED" "the control: TIOCSTI without the filter"
	else
		al_log "the control: this kernel refuses TIOCSTI itself (dev.tty.legacy_tiocsti=0)"
	fi
done
al_pass "TIOCSTI is refused in the sandbox's terminal; nothing typed for it appears"

# ---- our terminal's modes come back whatever ends the job: its exit, --time, a SIGTERM to airlock.
# The modes are read with stty -g on the same terminal before and after airlock (raw mode while it
# runs would otherwise stay).
# shellcheck disable=SC2016
outer='stty -g >"$0.before"; "$@" </dev/tty & echo "APID=$!"; wait $!; echo "rc=$?"; stty -g >"$0.after"; echo outer-done'
for how in exit time term; do
	f=$AL_TEST_ROOT/modes-$how
	case $how in
	exit) args=(-- sh -c 'echo in-sandbox; exit 3') steps='expect outer-done' want=3 ;;
	time) args=(--time 2s -- bash --norc -i) steps='expect outer-done' want=124 ;;
	term) args=(-- bash --norc -i) steps=$'expect $ \nsend echo ready\\r\nexpect ready\nkill SIGTERM\nexpect outer-done' want=143 ;;
	esac
	tty_run "modes-$how" "$steps" -- sh -c "$outer" "$f" "${A[@]}" run -t "${args[@]}"
	al_assert_contains "$AL_OUT" "rc=$want" "airlock's exit status ($how)"
	[ -s "$f.before" ] || al_fail "no stty -g before ($how)"
	al_assert_eq "$(cat "$f.after")" "$(cat "$f.before")" "the terminal's modes after the job ($how)"
done
al_assert_contains "$AL_OUT" "stopped by SIGTERM" "the verdict after a SIGTERM"
al_pass "the terminal's modes are restored after an exit, --time and SIGTERM"

# ---- refusals: no terminal on stdin, -t meant as the old --time, a backend without ptys, capture.
al_run run -t -- true </dev/null
al_assert_rc 125
al_assert_contains "$AL_ERR" "standard input is not a terminal" "-t without a terminal"
al_run run -t 5s -- true
al_assert_rc 125
al_assert_contains "$AL_ERR" "say --time 5s" "-t followed by a duration"
tty_run bwrap 'expect airlock:' -- "${A[@]}" run -t --backend bwrap -- true
al_assert_rc 125
al_assert_contains "$AL_OUT" "has no terminal of the sandbox's own" "-t with --backend bwrap"
tty_run capture 'expect airlock:' -- "${A[@]}" run -t --stream capture -- true
al_assert_rc 125
al_assert_contains "$AL_OUT" "not with --stream capture" "-t with --stream capture"
al_pass "-t is refused without a terminal, after a duration, on bwrap and with --stream capture"
