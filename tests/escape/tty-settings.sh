#!/bin/bash
# tty-settings.sh — attack: under a real terminal (script(1) gives airlock a pty as its stdin), switch the
# terminal's echo and line editing off with tcsetattr on stdin, leaving the operator's terminal changed after the
# job (typing blind; with ISIG cleared, Ctrl-C no longer interrupts).
# Defence expected: the terminal is an asset (docs/threat-model.md); airlock puts back the settings it found when
# the job ends (or hands the job a terminal of its own).
# Judged from outside: `stty -g` on the same terminal before and after `airlock run` must match, and the job must
# have changed them (tcsetattr succeeded), or the check proves nothing.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-tty

# The settings are read from the terminal (stty's stdin) and written to files, and the job's output goes to a
# file: only airlock's stdin is the terminal, which is what the attack uses; nothing is judged from the
# terminal's output.
d=$AL_TEST_ROOT/tty-settings
mkdir -p "$d"
out="$d/pty.out"
esc_in_pty "$out" "stty -g >$d/before; $(esc_pty_airlock) $ESC/esc-tty termios >$d/job 2>&1; echo \$? >$d/rc; stty -g >$d/after"
al_log "job: $(tr '\n' ' ' <"$d/job") (airlock exit $(cat "$d/rc" 2>/dev/null))"
if esc_gvisor; then
	# runsc never hands the job airlock's terminal (as in tty.sh): there is nothing to change.
	grep -qx 'tcgetattr=ENOTTY' "$d/job" || al_fail "gvisor: the job's stdin should not be a terminal: $(cat "$d/job")"
	al_pass "gvisor: the job's stdin is not the operator's terminal"
else
	grep -qx 'tcsetattr-noecho=OK' "$d/job" || al_fail "the job did not change the terminal's settings (so the check proves nothing): $(cat "$d/job")"
fi
before=$(cat "$d/before" 2>/dev/null) after=$(cat "$d/after" 2>/dev/null)
[ -n "$before" ] && [ -n "$after" ] || al_fail "could not read the terminal settings around the job: before '$before', after '$after'; terminal: $(tr -d '\r' <"$out")"
if [ "$before" != "$after" ]; then
	ESC_OUT=$(cat "$d/job") ESC_ERRDATA=""
	esc_escaped "the job changed the settings of the terminal airlock was started from, and they stayed after it ended (stty -g before: $before, after: $after)"
fi
al_pass "the terminal's settings are the same after the job"

# Control: a host command that does the same (stty -echo) is seen by the judge.
esc_in_pty "$out" "stty -g >$d/before; stty -echo -icanon; stty -g >$d/after"
[ -s "$d/before" ] && [ -s "$d/after" ] && ! cmp -s "$d/before" "$d/after" || al_fail "control: stty -echo was not seen by the judge"
al_pass "control: a settings change shows, so the judge can fail"
