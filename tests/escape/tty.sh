#!/bin/bash
# tty.sh — attack: under a real terminal (script(1) gives airlock a pty as its stdin), push keystrokes into it with
# ioctl(0, TIOCSTI) (also after TIOCSCTTY, with garbage in cmd's upper bits, and through /dev/tty), so that the
# operator's shell would run them after the job.
# Defence: setsid in the payload (the terminal is not its controlling tty), seccomp (TIOCSTI: EPERM), no
# CAP_SYS_ADMIN.
# Judged from outside: a terminal echoes what is pushed into it, so the injected text (sent hex-encoded, printed
# by nobody) would show in the terminal's output; it must not. A control pushes the same text from the host side
# of the same kind of terminal and sees it, so the judge can fail.
# gvisor: runsc never hands the job airlock's terminal (its stdin is not a tty inside: asserted), so TIOCSTI has
# no terminal to push into; the attempts are still judged and the text must not show.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-tty

m=$(al_marker)
text="#esc-INJ-$m" # a shell comment without a newline: harmless wherever it lands
hex=$(printf '%s' "$text" | od -An -tx1 | tr -d ' \n')

out="$AL_TEST_ROOT/tty-inject.out"
esc_in_pty "$out" "$(esc_pty_airlock) $ESC/esc-tty inject $hex"
ESC_OUT=$(tr -d '\r' <"$out")
ESC_V=$out ESC_ERRDATA=""
if esc_gvisor; then
	al_assert_contains "$ESC_OUT" "stdin-isatty=0" "gvisor: the job's stdin is not the operator's terminal"
else
	al_assert_contains "$ESC_OUT" "stdin-isatty=1" "the job's stdin is the terminal"
fi
esc_denied tiocsti tiocsctty tiocsctty-steal tiocsti-after-sctty tiocsti-hi
al_assert_eq "$(esc_kv tiocsti-bytes)" 0 "bytes pushed by TIOCSTI"
esc_gvisor || esc_expect tiocsti EPERM
esc_no_leak "esc-INJ-$m" "text pushed into the terminal"

# Control: the same text pushed by a host process into its own controlling terminal shows up.
if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1)" = 1 ]; then
	out="$AL_TEST_ROOT/tty-control.out"
	esc_in_pty "$out" "$AL_PY -c 'import fcntl, sys, termios; [fcntl.ioctl(0, termios.TIOCSTI, bytes([c])) for c in sys.argv[1].encode()]' '$text'"
	grep -qF "esc-INJ-$m" "$out" || al_fail "control: text pushed from the host side did not show, so the check proves nothing"
	al_pass "control: injection from the host side shows in the terminal's output, so the judge can fail"
fi
