#!/usr/bin/env bash
# ptys.sh — terminal sessions of airlock serve (issue 31) over the JSON API with curl: an interactive
# `bash -i` on a terminal of the sandbox's own devpts, typed into through the process's stdin, its
# size as programs see it (stty size, tput, top's screen) at start and after a resize, its tty a
# /dev/pts/N, job control (a background job listed by `jobs`), bytes that are not UTF-8 read back
# whole as base64, kill, a session gone with its sandbox; bad input (a size out of 1..1000, resize of
# a process without a terminal, ...) refused with 400 and nothing started.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v bash >/dev/null || al_skip "bash is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
al_serve_config "$confdir/p.yaml" 'server: {max_sandboxes: 4, max_execs_per_sandbox: 4, idle_ttl: 10m, pool: {}}\n'
al_serve_start "$dir" --config "$confdir/p.yaml" --audit "$dir/audit.jsonl"
api=$AL_SERVE_URL/v1

mk() { curl -sS -XPOST "$api/sandboxes" -d '{}' | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])'; }
code() { curl -sS -o "$dir/body" -w '%{http_code}' "$@"; }
# The terminal's output so far, its bytes decoded from the base64 output events (without carriage
# returns and CSI escape sequences).
screen() {
	curl -sS "$api/sandboxes/$sb/processes/$1/output?follow=false&encoding=base64" >"$dir/out.ndjson"
	"$AL_PY" - "$dir/out.ndjson" <<'EOF'
import base64, json, re, sys
out = b""
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "data" in d:
        assert d.get("encoding") == "base64", d
        out += base64.b64decode(d["data"])
out = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", out)  # bash's bracketed-paste switches, not text
sys.stdout.write(out.replace(b"\r", b"").decode("utf-8", "backslashreplace"))
EOF
}
# type PID TEXT: TEXT sent to the terminal, as typed.
type_in() {
	local c
	c=$(curl -sS -o "$dir/typed" -w '%{http_code}' -XPOST --data-binary "$2" "$api/sandboxes/$sb/processes/$1/stdin")
	[ "$c" = 200 ] || al_fail "stdin to the terminal answered $c: $(cat "$dir/typed")"
}
# wait_for PID REGEX WHAT: the terminal shows a line matching REGEX within 10 s.
wait_for() {
	for _ in $(seq 100); do
		screen "$1" >"$dir/screen"
		grep -Eq "$2" "$dir/screen" && return 0
		sleep 0.1
	done
	cat -A "$dir/screen" >&2
	al_fail "$3: the terminal never showed /$2/"
}
m=$(al_marker)
sb=$(mk)

# A session with no command: the sandbox's interactive shell, on a terminal of the size asked.
c=$(code -XPOST "$api/sandboxes/$sb/exec" -d '{"pty":{"cols":80,"rows":24}}')
al_assert_eq "$c" 200 "a terminal session starts"
r=$(tail -n1 "$dir/body")
al_assert_eq "$(al_json_get "$r" result.status)" started "... as a background process"
al_assert_eq "$(al_json_get "$r" result.process.pty.cols)x$(al_json_get "$r" result.process.pty.rows)" 80x24 "... with its terminal's size"
al_assert_eq "$(al_json_get "$r" result.process.command)" "exec bash -i" "... running the interactive shell"
sh=$(al_json_get "$r" result.process.pid)
[ "$sh" -gt 0 ] 2>/dev/null || al_fail "the session has no pid: $r"
type_in "$sh" $'stty size; tty; echo "term=$TERM"\n'
wait_for "$sh" '^24 80$' "stty size at the start"
wait_for "$sh" '^/dev/pts/[0-9]+$' "tty names a pty of the sandbox"
wait_for "$sh" '^term=xterm-256color$' "TERM says what the terminal is"
l=$(curl -sS "$api/sandboxes/$sb/processes")
al_assert_eq "$(al_json_get "$l" processes.0.pty.cols)/$(al_json_get "$l" processes.0.stdin_open)" 80/true "the list shows the terminal"
al_pass "an interactive bash on a terminal of the size given"

# Resize: the shell's next stty sees the new size (SIGWINCH and TIOCGWINSZ).
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$sh/resize" -d '{"cols":100,"rows":30}')" 200 "resize"
al_assert_eq "$(al_json_get "$(cat "$dir/body")" pty.cols)x$(al_json_get "$(cat "$dir/body")" pty.rows)" 100x30 "... answered with the new size"
type_in "$sh" $'stty size\n'
wait_for "$sh" '^30 100$' "stty size after the resize"
g=$(curl -sS "$api/sandboxes/$sb/processes/$sh")
al_assert_eq "$(al_json_get "$g" pty.cols)x$(al_json_get "$g" pty.rows)" 100x30 "get shows the new size"
# A full-screen program draws on it: top's one screen, sized to the terminal (tput reads the same).
type_in "$sh" $'top -n1; echo; echo "size=$(tput cols)x$(tput lines)"\n'
wait_for "$sh" 'load average' "top drew its screen"
wait_for "$sh" '^size=100x30$' "tput sees the new size"
al_pass "a resize reaches the program"

# Job control: a background job of the shell, listed by `jobs` (only a shell with a controlling
# terminal has it: without one, bash -i says "no job control in this shell").
type_in "$sh" $'sleep 30 &\n'
type_in "$sh" "jobs; echo \"jobs-\$?-$m\""$'\n'
wait_for "$sh" "jobs-0-$m" "jobs ran"
wait_for "$sh" '^\[1\]\+ +Running +sleep 30 &' "jobs lists the background job"
if grep -q "no job control" "$dir/screen"; then al_fail "bash -i has no job control: $(cat "$dir/screen")"; fi
al_pass "job control works"

# Bytes that are not UTF-8 come back whole in base64 (and replaced, not lost, as text).
type_in "$sh" $'printf "raw:\\377\\376:end\\n"\n'
wait_for "$sh" '^raw:\\xff\\xfe:end$' "non-UTF-8 bytes"
curl -sS "$api/sandboxes/$sb/processes/$sh/output?follow=false" >"$dir/text.ndjson"
al_assert_contains "$(cat "$dir/text.ndjson")" $'raw:\xef\xbf\xbd\xef\xbf\xbd:end' "as text, each bad byte is U+FFFD"
al_pass "a terminal's bytes in base64"

# Bad input: refused with 400, naming the problem, nothing started.
before=$(curl -sS "$api/sandboxes/$sb/processes" | "$AL_PY" -c 'import json,sys; print(len(json.load(sys.stdin)["processes"]))')
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/exec" -d '{"pty":{"cols":0,"rows":24}}')" 400 "cols 0"
al_assert_contains "$(cat "$dir/body")" "cols" "... names cols"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/exec" -d '{"pty":{"cols":80,"rows":5000}}')" 400 "rows 5000"
al_assert_contains "$(cat "$dir/body")" "rows" "... names rows"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/exec" -d '{"pty":{"cols":80,"rows":24,"x":1}}')" 400 "an unknown pty field"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/exec" -d '{"pty":{},"background":false}')" 400 "pty with background false"
al_assert_contains "$(cat "$dir/body")" "background" "... names background"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/exec" -d '{"pty":{},"stdin":"x"}')" 400 "pty with the exec's stdin"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$sh/resize" -d '{"cols":0,"rows":30}')" 400 "resize to 0 columns"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$sh/resize" -d '{"cols":80,"rows":1001}')" 400 "resize to 1001 rows"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$sh/resize" -d '{"cols":80}')" 400 "resize without rows"
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb/processes/$sh/stdin")" 400 "closing a terminal's stdin"
al_assert_eq "$(code "$api/sandboxes/$sb/processes/$sh/output?encoding=latin1")" 400 "an unknown encoding"
r=$(curl -sS -XPOST "$api/sandboxes/$sb/exec" -d '{"command":"exec sleep 60","background":true}' | tail -n1)
plain=$(al_json_get "$r" result.process.pid)
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$plain/resize" -d '{"cols":100,"rows":30}')" 400 "resize of a process without a terminal"
al_assert_contains "$(cat "$dir/body")" "no terminal" "... says it has none"
al_assert_eq "$(al_json_get "$(curl -sS "$api/sandboxes/$sb/processes/$plain")" pty)" "" "a process without a terminal lists no pty"
after=$(curl -sS "$api/sandboxes/$sb/processes" | "$AL_PY" -c 'import json,sys; print(len(json.load(sys.stdin)["processes"]))')
al_assert_eq "$after" "$((before + 1))" "no refused session started a process"
g=$(curl -sS "$api/sandboxes/$sb/processes/$sh")
al_assert_eq "$(al_json_get "$g" pty.cols)x$(al_json_get "$g" running)" 100xtrue "the refused resizes changed nothing"
al_pass "bad input is refused with 400"

# Kill: the session ends, and its terminal takes no more input.
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb/processes/$sh")" 200 "kill"
for _ in $(seq 50); do
	g=$(curl -sS "$api/sandboxes/$sb/processes/$sh")
	[ "$(al_json_get "$g" running)" = false ] && break
	sleep 0.1
done
al_assert_eq "$(al_json_get "$g" running)/$(al_json_get "$g" stdin_open)" false/false "the killed session ended"
al_assert_eq "$(code -XPOST --data-binary x "$api/sandboxes/$sb/processes/$sh/stdin")" 409 "stdin of an ended session"
al_pass "a killed session ends"

# A session ends with its sandbox: nothing of it is left on the host.
c=$(code -XPOST "$api/sandboxes/$sb/exec" -d "{\"command\":\"exec -a sh-$m bash -i\",\"pty\":{\"cols\":40,\"rows\":10}}")
al_assert_eq "$c/$(al_json_get "$(tail -n1 "$dir/body")" result.status)" 200/started "a second session starts"
for _ in $(seq 50); do [ -n "$(al_marker_pids "sh-$m")" ] && break; sleep 0.1; done
[ -n "$(al_marker_pids "sh-$m")" ] || al_fail "the second session's shell is not on the host"
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb")" 200 "the sandbox goes"
for _ in $(seq 50); do [ -z "$(al_marker_pids "sh-$m")" ] && break; sleep 0.1; done
al_assert_eq "$(al_marker_pids "sh-$m")" "" "its terminal session went with it"
al_pass "terminal sessions"
