#!/bin/bash
# audit.sh — `airlock audit tail|grep` on a log this test writes line by line: last N records,
# field filters, torn and invalid lines skipped and counted, output that cannot drive a terminal,
# --follow through a record still being written and a rotation, the configured default file.
. "$(dirname "$0")/../lib.sh"

dir=$(al_tmpdir)
log="$dir/audit.jsonl"

# rec SANDBOX TOOL LEVEL TRANSPORT STATUS [EXCERPT]: one record as the server writes it.
rec() {
	printf '{"time":"2025-01-31T12:00:0%s.000Z","client":{"transport":"%s","peer":null},"sandbox":"%s","tool":"%s",' \
		"${1#sb}" "$4" "$1" "$2"
	printf '"params":{"language":"python","code":{"sha256":"00","bytes":3,"excerpt":"%s","truncated":false}},' "${6:-x=1}"
	printf '"risk":{"level":"%s","rule":"r","needs_approval":true,"undecided":false},' "$3"
	printf '"approval":{"decision":"approved","by":"auto"},"result":{"status":"%s","duration_ms":1%s},' "$5" "${1#sb}"
	printf '"resources":null,"proxy":[]}\n'
}

{
	rec sb1 code_execute HIGH stdio ok
	rec sb2 code_read_file MEDIUM http ok
	echo 'not a record {{{'
	# An escape sequence, a C1 CSI and a bidi override, as JSON escapes: printed escaped again.
	rec sb3 code_execute CRITICAL http denied '\u001b[2J\u009b31m\u202eevil é'
	rec sb4 code_destroy_sandbox LOW stdio ok
	rec sb5 code_execute CRITICAL http ok
	# A crash mid-write: the last record has no end.
	printf '{"time":"2025-01-31T12:00:09.000Z","client":{"trans'
} >"$log"
chmod 0644 "$log"

sandboxes() { printf '%s\n' "$1" | sed -n 's/.*"sandbox":"\([^"]*\)".*/\1/p' | paste -sd, -; }

# ---- tail
al_run audit tail -n 2 "$log"
al_assert_rc 0
al_assert_eq "$(sandboxes "$AL_OUT")" "sb4,sb5" "tail -n 2: the last two whole records, in order"
al_assert_eq "$(printf '%s\n' "$AL_OUT" | wc -l)" 2 "tail -n 2 lines"
al_assert_contains "$AL_ERR" "skipped 2 torn or invalid lines" "tail reports what it skipped"
printf '%s\n' "$AL_OUT" | "$AL_PY" -c 'import json,sys; [json.loads(l) for l in sys.stdin]' ||
	al_fail "tail printed something that is not JSON lines"

al_run audit tail "$log"
al_assert_rc 0
al_assert_eq "$(sandboxes "$AL_OUT")" "sb1,sb2,sb3,sb4,sb5" "tail: default 10 (all five)"
# Nothing a request held reaches the terminal raw: ASCII only, no control bytes.
if LC_ALL=C grep -q '[^ -~]' "$AL_OUT_FILE"; then
	al_fail "tail printed a control or non-ASCII byte: $(LC_ALL=C grep -n '[^ -~]' "$AL_OUT_FILE" | od -c | head -5)"
fi
al_assert_contains "$AL_OUT" '\u001B[2J\u009B31m\u202Eevil \u00E9' "escapes stay escapes"

al_run audit tail -n 0 "$log"
al_assert_eq "$AL_RC/$AL_OUT" "0/" "tail -n 0"
al_run audit tail -n 3 - <"$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb3,sb4,sb5" "tail of standard input"

# ---- grep
al_run audit grep tool=code_read_file "$log"
al_assert_rc 0
al_assert_eq "$(sandboxes "$AL_OUT")" "sb2" "grep tool="
al_run audit grep risk.level=CRITICAL client.transport=http "$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb3,sb5" "grep: every FIELD=VALUE must hold"
al_run audit grep risk.level=CRITICAL result.status=ok "$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb5" "grep: nested fields"
al_run audit grep result.duration_ms=14 "$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb4" "grep: a number by its JSON text"
al_run audit grep risk.needs_approval=true params.code.bytes=3 "$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb1,sb2,sb3,sb4,sb5" "grep: true and nested numbers"
al_run audit grep resources=null sandbox=sb2 "$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb2" "grep: null"
al_assert_contains "$AL_ERR" "skipped 2 torn or invalid lines" "grep reports what it skipped"
al_run audit grep tool=code_write_file "$log"
al_assert_eq "$AL_RC/$AL_OUT" "1/" "grep without a match exits 1"
al_run audit grep tool=code_execute - <"$log"
al_assert_eq "$(sandboxes "$AL_OUT")" "sb1,sb3,sb5" "grep standard input"

# ---- bad use: 125 and a reason
al_run audit grep "$log"
al_assert_rc 125
al_assert_contains "$AL_ERR" "at least one FIELD=VALUE"
al_run audit grep tool=x "$log" "$dir/other"
al_assert_rc 125
al_run audit tail -n lots "$log"
al_assert_rc 125
al_assert_contains "$AL_ERR" "invalid number 'lots'"
al_run audit tail "$dir/missing.jsonl"
al_assert_rc 125
al_assert_contains "$AL_ERR" "missing.jsonl: No such file or directory"
al_run audit frob
al_assert_rc 125
al_assert_contains "$AL_ERR" "unknown subcommand 'frob'"

# ---- the default file: the configuration's audit.path
cfg="$dir/config.yaml"
printf 'version: 1\naudit: {path: %s}\n' "$log" >"$cfg"
chmod 0644 "$cfg"
al_run --config "$cfg" audit tail -n 1
al_assert_eq "$AL_RC/$(sandboxes "$AL_OUT")" "0/sb5" "tail of the configured log"
al_run audit grep --config "$cfg" sandbox=sb1
al_assert_eq "$AL_RC/$(sandboxes "$AL_OUT")" "0/sb1" "grep of the configured log"

# ---- --follow: new records as they come, a record written in two parts, a rotation
flog="$dir/follow.jsonl"
rec sb1 code_execute HIGH stdio ok >"$flog"
chmod 0644 "$flog"
fout="$dir/follow.out"
ferr="$dir/follow.err"
# Started directly (not through a shell function), so $! is airlock itself.
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" audit tail -n 1 --follow "$flog" >"$fout" 2>"$ferr" &
follower=$!
AL_BG_PIDS+=("$follower")

# wait_for N: until the follower printed N lines (or 10 s).
wait_for() {
	for _ in $(seq 100); do
		[ "$(wc -l <"$fout")" -ge "$1" ] && return 0
		sleep 0.1
	done
	al_fail "the follower printed $(wc -l <"$fout") lines, not $1: $(cat "$fout" "$ferr")"
}
wait_for 1
rec sb2 code_execute HIGH stdio ok >>"$flog"
wait_for 2
# Half a record, then (after the follower has certainly polled) the rest: one record, no skip.
line=$(rec sb3 code_execute HIGH stdio ok)
printf '%s' "${line:0:40}" >>"$flog"
sleep 0.6
printf '%s\n' "${line:40}" >>"$flog"
wait_for 3
# Rotated by a writer: the follower drains the old file and goes on with the new one.
mv "$flog" "$flog.1"
rec sb4 code_execute HIGH stdio ok >>"$flog.1"
rec sb5 code_execute HIGH stdio ok >"$flog"
chmod 0644 "$flog"
wait_for 5
kill -TERM "$follower" 2>/dev/null || true
wait "$follower" 2>/dev/null || true
al_assert_eq "$(sandboxes "$(cat "$fout")")" "sb1,sb2,sb3,sb4,sb5" "follow: every record once, in order"
al_assert_not_contains "$(cat "$ferr")" "skipped" "follow: a record being written is not torn"
