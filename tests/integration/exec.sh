#!/bin/bash
# exec.sh — `airlock exec`: every shipped language runs a hello world and a stdin reader with the
# same output as a bare run; profiles fix the posture (widening flags refused, resource flags
# honoured); bad input is refused with 125 and nothing left behind.
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }

# lang | hello | stdin reader | bare interpreter command
langs=(
	'python|print("hello from python")|import sys; print(sys.stdin.read().upper(), end="")|python3 -c'
	'javascript|console.log("hello from javascript")|let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(s.toUpperCase()))|node -e'
	'shell|echo hello from shell|tr a-z A-Z|bash -c'
	'ruby|puts "hello from ruby"|print STDIN.read.upcase|ruby -e'
	'php|<?php echo "hello from php\n";|<?php echo strtoupper(stream_get_contents(STDIN));|php -r'
	'perl|print "hello from perl\n";|print uc while <STDIN>;|perl -e'
)
input=$'some input\nover two lines\n'
for row in "${langs[@]}"; do
	IFS='|' read -r lang hello reader bare <<<"$row"
	if ! command -v "${bare%% *}" >/dev/null; then
		al_log "$lang: ${bare%% *} is not installed here; exec --list must say so"
		al_run exec --list
		al_assert_contains "$AL_OUT" "$lang" "exec --list names $lang"
		continue
	fi
	al_run exec --json --lang "$lang" -c "$hello"
	al_assert_rc 0
	al_assert_eq "$(j stdout.data)" "hello from $lang" "$lang hello world"
	# php -r takes code without the opening tag
	code=$reader
	[ "$lang" = php ] && code=${reader#<?php }
	expected=$(printf '%s' "$input" | ${bare} "$code")
	got=$(printf '%s' "$input" | al_airlock exec --lang "$lang" -c "$reader")
	al_assert_eq "$got" "$expected" "$lang stdin reader, same as a bare run"
done
al_pass "every shipped language: hello world and stdin, as bare"

# ---- python with numpy, code from a file and from standard input
code="$(al_tmpdir)/prog.py"
printf 'import numpy, sys\nprint(int(numpy.arange(10).sum()), sys.argv[1:])\n' >"$code"
chmod 0644 "$code"
al_run exec --json --lang python "$code" one two
al_assert_eq "$(j stdout.data)" "45 ['one', 'two']" "python with numpy from a file, with arguments"
got=$(printf 'print(6*7)\n' | al_airlock exec --lang python -)
al_assert_eq "$got" 42 "code from standard input"
if command -v gcc >/dev/null; then
	al_run exec --json --lang c -c $'#include <stdio.h>\nint main(void){puts("compiled");return 3;}'
	al_assert_rc 3
	al_assert_eq "$(j stdout.data)" compiled "c: compiled, run, exit code kept"
	al_run exec --json --lang c -c 'int main(void){ syntax error }'
	al_assert_eq "$(j exit_code)" 1 "a compile error is the job's failure"
fi
al_pass "numpy, files, stdin, arguments, compiled code"

# ---- the default profile is the strictest: no network, read-only checkout
src=$(al_tmpdir)
printf 'data\n' >"$src/f.txt"
chmod -R a+rX "$src"
al_run exec --json --lang shell --checkout "$src" -c 'cat /workspace/src/f.txt; (echo x >/workspace/src/f.txt) 2>/dev/null || echo ro'
al_assert_eq "$(j stdout.data)" "$(printf 'data\nro')" "default profile: read-only checkout"
al_assert_eq "$(j enforced.network)" none "default profile: no network"
al_assert_eq "$(cat "$src/f.txt")" data "the checkout after the read-only profile"
al_run exec --json --profile untrusted-code-write --lang shell --checkout "$src" -c 'echo x >/workspace/src/f.txt && cat /workspace/src/f.txt; echo "$HTTPS_PROXY"'
al_assert_eq "$(j stdout.data)" "$(printf 'x\nhttp://127.0.0.1:3128')" "write profile: a writable copy and the registries' proxy"
al_assert_eq "$(j enforced.network)" allow "write profile: the allowlist posture"
al_assert_eq "$(cat "$src/f.txt")" data "the checkout after the write profile"
al_pass "profiles: read-only checkout and no network; a throwaway copy with the registry allowlist"

# ---- widening overrides are refused, resource overrides honoured
for bad in "--net host" "--net loopback" "--rw /tmp" "--ro /etc" "--seccomp off" "--landlock off" "--workdir $src" \
	"--allow-private 10.0.0.0/8" "--fallback" "--checkout-mode copy"; do
	# shellcheck disable=SC2086
	al_run exec --lang shell -c 'echo ran' $bad
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "profile untrusted-code-read does not allow ${bad%% *}" "refusal of $bad"
	al_assert_eq "$AL_OUT" "" "nothing ran with $bad"
done
al_run exec --json --lang shell -c 'sleep 10' --time 1s
al_assert_eq "$(j status)" timeout "--time under a profile"
al_run exec --json --lang shell -c 'echo ok' --seccomp strict --output-limit 1
al_assert_eq "$(j stdout.bytes)/$(j stdout.kept)/$(j enforced.seccomp)" "3/1/strict" "stricter seccomp and --output-limit under a profile"
al_pass "widening overrides refused, resource overrides honoured"

# ---- profile none: loudly no isolation
al_run exec --json --profile none --lang shell -c 'echo none'
al_assert_rc 0
al_assert_contains "$AL_ERR" "NO ISOLATION" "profile none warns"
al_assert_eq "$(j enforced.isolation)/$(j backend)" "none/none" "profile none in the verdict"
al_pass "profile none runs, reported as no isolation"

# ---- bad input: 125, nothing run, nothing left behind
# Other tests' temporary directories come and go in /tmp while find reads it: a vanished entry is
# no error of ours (find would exit 1, and pipefail end the script).
workspaces() { { find /tmp -maxdepth 1 -name 'airlock-ws-*' 2>/dev/null || true; } | wc -l; }
before=$(workspaces)
al_run exec -c 'print(1)'
al_assert_rc 125
al_assert_contains "$AL_ERR" "--lang" "missing language"
al_run exec --lang cobol -c x
al_assert_rc 125
al_assert_contains "$AL_ERR" "unknown language 'cobol'" "unknown language"
al_run exec --lang python
al_assert_rc 125
al_assert_contains "$AL_ERR" "no code given" "missing code"
al_run exec --lang python "$src/missing.py"
al_assert_rc 125
al_assert_contains "$AL_ERR" "cannot read" "unreadable file"
al_run exec --lang python -c 'print(1)' "$code"
al_assert_rc 125
al_assert_contains "$AL_ERR" "not both" "-c and a file"
al_run exec --profile bogus --lang python -c 'print(1)'
al_assert_rc 125
al_assert_contains "$AL_ERR" "unknown profile 'bogus'" "unknown profile"
al_run exec --lang python -c 'print(1)' --backend bogus
al_assert_rc 125
bad=$(al_tmpdir)/bad.yaml
printf 'version: 1\nlimits:\n  memory: lots\n' >"$bad"
al_run exec --config "$bad" --lang python -c 'print(1)'
al_assert_rc 125
al_assert_contains "$AL_ERR" "bad.yaml:3:11" "a malformed config names line and column"
al_assert_eq "$(workspaces)" "$before" "workspaces left behind"
al_pass "bad exec input is refused with 125"
