#!/usr/bin/env bash
# processes.sh — execs that live like the ones agents know (issue 31), over airlock serve's JSON API
# with curl: several execs of one sandbox at once (each waits for the others' files, so they end only
# if they ran together), env/cwd/stdin, background processes that outlive their call (a real
# `python3 -m http.server` fetched from another exec over the sandbox's loopback), their output kept
# and followed, stdin sent and closed, signals and kill (the process gone from the host), the
# per-sandbox limit (429), nothing left once the sandbox goes, and bad input refused with 4xx.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
cat >"$confdir/p.yaml" <<'EOF'
version: 1
rules:
- name: all
  tools: ["*"]
  risk: LOW
  require_approval: false
audit:
  fsync: false
server:
  max_sandboxes: 8
  max_execs: 8
  max_execs_per_sandbox: 4
  idle_ttl: 10m
  max_lifetime: 1h
  pool: {}
EOF
chmod 0644 "$confdir/p.yaml"
al_serve_start "$dir" --config "$confdir/p.yaml" --audit "$dir/audit.jsonl"
api=$AL_SERVE_URL/v1

mk() { curl -sS -XPOST "$api/sandboxes" -d '{}' | "$AL_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])'; }
# start SANDBOX COMMAND [EXTRA_JSON]: a background process; prints its pid.
start() {
	local r
	r=$(al_exec_last "$1" "{\"command\":$(printf '%s' "$2" | "$AL_PY" -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),\"background\":true${3:-}}")
	[ "$(al_json_get "$r" result.status)" = started ] || al_fail "background start of '$2': $r"
	al_json_get "$r" result.process.pid
}
code() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
# refused SANDBOX BODY: "STATUS ERROR" of an exec refused before it ran (the HTTP status, or the
# stream's error line when the refusal came once the stream had begun).
refused() {
	local c
	c=$(curl -sS -o "$dir/refused" -w '%{http_code}' -XPOST "$api/sandboxes/$1/exec" -d "$2")
	if [ "$c" = 200 ]; then
		tail -n1 "$dir/refused" | "$AL_PY" -c 'import json,sys; d=json.load(sys.stdin); print(d.get("status"), d.get("error"))'
	else
		"$AL_PY" -c 'import json,sys; print(sys.argv[1], json.load(open(sys.argv[2]))["error"])' "$c" "$dir/refused"
	fi
}
m=$(al_marker)
sb=$(mk)

# Several execs at once: each writes its file and waits for the other two, so all three end only if
# they ran side by side (one at a time, the first would wait for its 20 s limit).
side=()
for n in a b c; do
	al_exec_last "$sb" "{\"command\":\"touch $n; for i in \$(seq 200); do [ -e a ] && [ -e b ] && [ -e c ] && break; sleep 0.1; done; [ -e a ] && [ -e b ] && [ -e c ] && echo met-$n\",\"fresh\":true,\"timeout\":20}" >"$dir/side.$n" &
	side+=($!)
done
wait "${side[@]}" # not the server's
for n in a b c; do
	al_assert_eq "$(al_json_get "$(cat "$dir/side.$n")" result.stdout)" "met-$n" "exec $n ran beside the other two"
done
al_pass "three execs of one sandbox run at once"

# env, cwd and stdin of one exec.
al_exec_last "$sb" '{"command":"mkdir -p sub/dir","fresh":true}' >/dev/null
r=$(al_exec_last "$sb" '{"command":"echo $GREETING; pwd; cat","fresh":true,"env":{"GREETING":"hello there"},"cwd":"sub/dir","stdin":"from stdin\n"}')
al_assert_eq "$(al_json_get "$r" result.stdout)" "hello there
/workspace/sub/dir
from stdin" "env, cwd and stdin reach the program"
r=$(al_exec_last "$sb" '{"command":"pwd","fresh":true,"cwd":"/tmp"}')
al_assert_eq "$(al_json_get "$r" result.stdout)" /tmp "an absolute cwd outside the workspace"
al_pass "env, cwd and stdin"

# A background server outlives its call and is reached from another exec over the sandbox's loopback.
al_exec_last "$sb" "{\"command\":\"echo $m > page.txt\",\"fresh\":true}" >/dev/null
web=$(start "$sb" "exec python3 -m http.server 8000 --bind 127.0.0.1")
[ "$web" -gt 0 ] 2>/dev/null || al_fail "the process has no pid: '$web'"
r=$(al_exec_last "$sb" '{"command":"for i in $(seq 100); do curl -s http://127.0.0.1:8000/page.txt && exit 0; python3 -c \"import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(\\\"http://127.0.0.1:8000/page.txt\\\").read().decode())\" 2>/dev/null && exit 0; sleep 0.1; done; exit 1","fresh":true,"timeout":20}')
al_assert_eq "$(al_json_get "$r" result.stdout)" "$m" "another exec fetches the background server's page"
l=$(curl -sS "$api/sandboxes/$sb/processes")
al_assert_eq "$(al_json_get "$l" processes.0.pid)/$(al_json_get "$l" processes.0.running)" "$web/true" "the list shows it running"
al_assert_contains "$(al_json_get "$l" processes.0.command)" "http.server" "... with its command"
o=$(curl -sS "$api/sandboxes/$sb/processes/$web/output?follow=false" | tail -n1)
al_assert_contains "$(al_json_get "$o" result.output)" "GET /page.txt" "its output so far holds the request's log line"
al_pass "a background server outlives its call and serves another exec"

# stdin kept open: lines sent one call at a time, then closed; its output followed to its end.
cat_pid=$(start "$sb" 'while read -r l; do echo "got:$l"; done; echo eof' ',"keep_stdin":true')
curl -sS -XPOST --data-binary $'one\n' "$api/sandboxes/$sb/processes/$cat_pid/stdin" >/dev/null
curl -sS -XPOST --data-binary $'two\n' "$api/sandboxes/$sb/processes/$cat_pid/stdin" >/dev/null
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb/processes/$cat_pid/stdin")" 200 "stdin closed"
curl -sS "$api/sandboxes/$sb/processes/$cat_pid/output" >"$dir/follow" # follows to the end
al_assert_contains "$(cat "$dir/follow")" '"data":"got:one' "the follow streams its output"
f=$(tail -n1 "$dir/follow")
al_assert_eq "$(al_json_get "$f" result.running)/$(al_json_get "$f" result.exit_code)" "false/0" "... and ends with its exit"
al_assert_eq "$(al_json_get "$f" result.verdict.stdout.bytes)" 20 "... whose verdict counted its output"
al_assert_eq "$(code -XPOST --data-binary x "$api/sandboxes/$sb/processes/$cat_pid/stdin")" 409 "stdin of an ended process is refused"
al_pass "stdin sent and closed, output followed to the exit"

# Signals and kill, judged on the host: the marked process is gone.
sleeper=$(start "$sb" "exec -a $m sleep 300")
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$sleeper/signal" -d '{"signal":"TERM"}')" 200 "SIGTERM sent"
for _ in $(seq 50); do
	g=$(curl -sS "$api/sandboxes/$sb/processes/$sleeper")
	[ "$(al_json_get "$g" running)" = false ] && break
	sleep 0.1
done
al_assert_eq "$(al_json_get "$g" status)/$(al_json_get "$g" signal)" signaled/15 "SIGTERM ended it"
sleeper=$(start "$sb" "exec -a $m sleep 301")
[ -n "$(al_marker_pids "$m" | awk '$2 == "sleep"')" ] || al_fail "the background sleep is not on the host"
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb/processes/$sleeper")" 200 "kill"
for _ in $(seq 50); do
	[ -z "$(al_marker_pids "$m" | awk '$2 == "sleep"')" ] && break
	sleep 0.1
done
[ -z "$(al_marker_pids "$m" | awk '$2 == "sleep"')" ] || al_fail "a killed process still runs on the host"
g=$(curl -sS "$api/sandboxes/$sb/processes/$sleeper")
al_assert_eq "$(al_json_get "$g" status)" killed "the kill is its verdict"
al_pass "signal and kill"

# The per-sandbox limit (4 here: the server and three more), then nothing left once the sandbox goes.
start "$sb" "exec -a $m sleep 302" >/dev/null
start "$sb" "exec -a $m sleep 303" >/dev/null
start "$sb" "exec -a $m sleep 304" >/dev/null
r=$(refused "$sb" '{"command":"sleep 1","background":true}')
al_assert_eq "${r%% *}" 429 "a fifth process past max_execs_per_sandbox"
al_assert_contains "$r" max_execs_per_sandbox "... named"
r=$(refused "$sb" '{"command":"echo no","fresh":true}')
al_assert_eq "${r%% *}" 429 "... and a foreground exec too"
al_assert_eq "$(code -XDELETE "$api/sandboxes/$sb")" 200 "the sandbox destroyed"
for _ in $(seq 50); do
	[ -z "$(al_marker_pids "$m" | awk '$2 == "sleep" || $2 ~ /python/')" ] && break
	sleep 0.1
done
[ -z "$(al_marker_pids "$m" | awk '$2 == "sleep"')" ] || al_fail "a background process outlived its sandbox"
al_assert_eq "$(code "$api/sandboxes/$sb/processes")" 404 "its processes are gone with it"
al_pass "the per-sandbox limit; nothing outlives the sandbox"

# Bad input: 4xx naming the problem, and nothing run.
sb=$(mk)
al_assert_eq "$(code "$api/sandboxes/$sb/processes/77777")" 404 "an unknown process"
al_assert_eq "$(code "$api/sandboxes/$sb/processes/abc")" 400 "a process id that is not a number"
al_assert_eq "$(code "$api/sandboxes/$sb/processes/-3")" 400 "a negative process id"
p=$(start "$sb" "exec -a $m sleep 305")
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$p/signal" -d '{"signal":99}')" 400 "signal 99"
al_assert_eq "$(code -XPOST "$api/sandboxes/$sb/processes/$p/signal" -d '{"signal":"NOPE"}')" 400 "signal NOPE"
al_assert_eq "$(code "$api/sandboxes/$sb/processes/$p/output?offset=-1")" 400 "a negative offset"
r=$(refused "$sb" '{"command":"touch ran1","fresh":true,"env":{"BAD-NAME":"x"}}')
al_assert_eq "${r%% *}" 400 "an env name with '-'"
al_assert_contains "$r" "BAD-NAME" "... named"
big=$(head -c 20000 /dev/zero | tr '\0' x)
r=$(refused "$sb" "{\"command\":\"touch ran2\",\"fresh\":true,\"env\":{\"A\":\"$big\",\"B\":\"$big\"}}")
al_assert_eq "${r%% *}" 413 "a huge env"
r=$(refused "$sb" '{"command":"touch ran3","fresh":true,"cwd":"../../etc"}')
al_assert_eq "${r%% *}" 400 "a cwd that leaves the workspace"
r=$(refused "$sb" '{"command":"touch ran4","fresh":true,"cwd":"no/such/dir"}')
al_assert_eq "${r%% *}" 400 "a cwd that does not exist"
al_assert_contains "$r" "no/such/dir" "... named"
r=$(refused "$sb" '{"command":"touch ran5","keep_stdin":true}')
al_assert_eq "${r%% *}" 400 "keep_stdin without background"
l=$(curl -sS "$api/sandboxes/$sb/files")
al_assert_not_contains "$l" '"ran' "none of the refused execs ran"
al_pass "bad input refused with 4xx, nothing run"

# The same through the official MCP SDK (tests/mcp/sdk/processes.mjs), in a session's own sandbox.
al_mcp_sdk processes.mjs "background processes"
al_pass "background processes through the official MCP SDK"
