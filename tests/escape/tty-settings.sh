#!/bin/bash
# tty-settings.sh — attack: under a real terminal (script(1) gives airlock a pty as its stdin), switch the
# terminal's echo and line editing off with tcsetattr on stdin, leaving the operator's terminal changed after the
# job (typing blind; with ISIG cleared, Ctrl-C no longer interrupts).
# Defence expected: the terminal is an asset (docs/threat-model.md); airlock puts back the settings it found when
# the job ends (or hands the job a terminal of its own).
# Judged from outside: `stty -g` on the same terminal before and after `airlock run` must match.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-tty

out="$AL_TEST_ROOT/tty-termios.out"
esc_in_pty "$out" "stty -g; $(esc_pty_airlock) $ESC/esc-tty termios; stty -g"
settings=$(tr -d '\r' <"$out" | grep -E '^[0-9a-f]+(:[0-9a-f]+)+$' || true)
al_log "job: $(tr -d '\r' <"$out" | grep -E '^tc' | tr '\n' ' ')"
[ "$(printf '%s\n' "$settings" | grep -c .)" = 2 ] || al_fail "could not read the terminal settings around the job: $(cat "$out")"
before=$(printf '%s\n' "$settings" | head -n 1)
after=$(printf '%s\n' "$settings" | tail -n 1)
if [ "$before" != "$after" ]; then
	ESC_OUT=$(tr -d '\r' <"$out") ESC_ERRDATA=""
	esc_escaped "the job changed the settings of the terminal airlock was started from, and they stayed after it ended (stty -g before: $before, after: $after)"
fi
al_pass "the terminal's settings are the same after the job"

# Control: a host command that does the same (stty -echo) is seen by the judge.
esc_in_pty "$out" "stty -g; stty -echo -icanon; stty -g"
settings=$(tr -d '\r' <"$out" | grep -E '^[0-9a-f]+(:[0-9a-f]+)+$' || true)
[ "$(printf '%s\n' "$settings" | sort -u | grep -c .)" = 2 ] || al_fail "control: stty -echo was not seen by the judge"
al_pass "control: a settings change shows, so the judge can fail"
