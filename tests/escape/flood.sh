#!/bin/bash
# flood.sh — attack: drown the supervisor in output: 100 MiB on stdout and 10 MiB on stderr at the same time, and
# raw binary bytes (every value 0..255) that a naive JSON encoder would choke on.
# Defence: the supervisor drains and counts everything but keeps only --output-limit per stream; its own memory
# stays small; the verdict says truncated, with the exact byte counts, and stays valid JSON.
# Judged from outside: airlock's peak RSS (GNU time's %M: the wait4 high-water mark of airlock and everything it
# reaped, so an upper bound of its own) stays far below the flood; the verdict's counts are exact.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-flood
[ -x /usr/bin/time ] || al_skip "GNU time (/usr/bin/time) is needed to measure airlock's peak RSS"

limit_kib=$((32 << 10))
[ -n "${AL_SANITIZED:-}" ] && limit_kib=$((128 << 10)) # shadow memory and quarantine: a sanity ceiling only
total=$((100 << 20))
errtotal=$((10 << 20))
cap=$((1 << 20))
rss="$AL_TEST_ROOT/rss"
out="$AL_TEST_ROOT/flood.json"

# ---- capture mode: the verdict holds the first MiB of each stream
t0=$(date +%s%N)
AL_RC=0
/usr/bin/time -f %M -o "$rss" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${ESC_BACKEND_ARGS[@]}" --ro "$ESC_DIR:$ESC" --json \
	--time 60 -- "$ESC/esc-flood" text "$total" "$errtotal" >"$out" 2>"$out.err" || AL_RC=$?
t1=$(date +%s%N)
AL_CMD="airlock run --json -- esc-flood text $total $errtotal" AL_OUT_FILE=$out AL_ERR_FILE=$out.err AL_RUN_N=1
esc_parse_verdict "$out"
kib=$(tail -n 1 "$rss")
al_log "flood: $(((t1 - t0) / 1000000)) ms, airlock peak RSS $kib KiB"
al_assert_eq "$ESC_STATUS" output-limit "verdict status"
al_assert_eq "$ESC_EXIT" 0 "the flooding program's own exit status"
al_assert_eq "$(esc_v stdout.bytes)" "$total" "stdout.bytes (exact)"
al_assert_eq "$(esc_v stdout.kept)" "$cap" "stdout.kept"
al_assert_eq "$(esc_v stdout.truncated)" true "stdout.truncated"
al_assert_eq "$(esc_v stderr.bytes)" "$errtotal" "stderr.bytes (exact)"
al_assert_eq "$(esc_v stderr.kept)" "$cap" "stderr.kept"
al_assert_eq "$(esc_v stderr.truncated)" true "stderr.truncated"
[ "$kib" -lt "$limit_kib" ] || esc_escaped "airlock's peak RSS was $kib KiB while the job printed $(((total + errtotal) >> 20)) MiB"
al_pass "110 MiB drained, airlock peak RSS $kib KiB"

# ---- live mode: streamed through to our stdout, memory still bounded
AL_RC=0
/usr/bin/time -f %M -o "$rss" "${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" run "${ESC_BACKEND_ARGS[@]}" --ro "$ESC_DIR:$ESC" \
	--time 60 -- "$ESC/esc-flood" text "$total" "$errtotal" >/dev/null 2>&1 || AL_RC=$?
kib=$(tail -n 1 "$rss")
al_assert_eq "$AL_RC" 0 "exit status of the live flood"
[ "$kib" -lt "$limit_kib" ] || esc_escaped "airlock's peak RSS was $kib KiB while streaming a flood"
al_pass "live: airlock peak RSS $kib KiB"

# ---- binary: every byte value, past the cap; the verdict must stay valid JSON with exact counts
esc_run --output-limit 64K -- "$ESC/esc-flood" binary $((2 << 20))
al_assert_eq "$(esc_v stdout.bytes)" $((2 << 20)) "stdout.bytes of the binary flood"
al_assert_eq "$(esc_v stdout.kept)" 65536 "stdout.kept of the binary flood"
al_assert_eq "$(esc_v stdout.truncated)" true "stdout.truncated of the binary flood"
al_pass "a binary flood leaves a valid verdict"
