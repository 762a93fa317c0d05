#!/bin/bash
# exitcodes.sh — airlock exits with the payload's status, 128+N for signals, 125 for its own failures.
. "$(dirname "$0")/../lib.sh"

for n in 0 3 42 255; do
	al_probe -- exit "$n"
	al_assert_rc "$n"
done

for sig in 9 15; do
	al_probe -- raise "$sig"
	al_assert_rc $((128 + sig))
	al_probe --json -- raise "$sig"
	al_assert_rc $((128 + sig))
	al_assert_eq "$(al_json_get "$AL_OUT" status)" signaled "verdict status (signal $sig)"
	al_assert_eq "$(al_json_get "$AL_OUT" signal)" "$sig" "verdict signal"
	al_assert_eq "$(al_json_get "$AL_OUT" exit_code)" null "verdict exit_code (signal $sig)"
done

# ---- bad input: exit 125, one line "airlock: ..." naming the problem, stdout empty,
# and no side effect: the payload (which would write a file) never runs, nothing is
# created in the (world-writable) cwd.
witness=$(al_tmpdir 0777)
cwd=$(al_tmpdir 0777)
cd "$cwd" || al_fail "cd $cwd"
before=$(ls -A "$cwd")
ran="$P write /out/ran yes"

# bad_input TOKEN AIRLOCK-ARGS...: TOKEN must appear in the error line (a regex, -i).
bad_input() {
	local token=$1
	shift
	local errline
	al_run "$@"
	al_assert_rc 125
	errline=$AL_ERR
	# bwrap's own messages ("bwrap: execvp ...") and runsc's fatal one ("running container:
	# ... failed to load X: ...") arrive on the job's stderr before airlock's line
	# (docs/backends.md, "Errors"): airlock's is still exactly one line, and the last.
	local rt_re=''
	al_backend_is bwrap && rt_re='^bwrap: '
	al_backend_is gvisor && rt_re='^running container: '
	if [ -n "$rt_re" ] && [ "$errline" != "$(printf '%s\n' "$AL_ERR" | grep -v -e "$rt_re")" ]; then
		errline=$(printf '%s\n' "$AL_ERR" | grep -v -e "$rt_re" || true)
		al_assert_eq "$(printf '%s\n' "$AL_ERR" | tail -n 1)" "$errline" "airlock's line after $AL_BACKEND's"
	fi
	[ "$(printf '%s\n' "$errline" | grep -c .)" = 1 ] || al_fail "expected one error line, got: $AL_ERR"
	case "$errline" in
	"airlock: "*) ;;
	*) al_fail "error line does not start with 'airlock: ': $AL_ERR" ;;
	esac
	printf '%s\n' "$errline" | grep -qiE -e "$token" || al_fail "error line does not name '$token': $AL_ERR"
	al_assert_eq "$AL_OUT" "" "stdout of a failed airlock run"
	[ ! -e "$witness/ran" ] || al_fail "the payload ran despite the bad input"
	al_assert_eq "$(ls -A "$cwd")" "$before" "cwd contents after a failed run"
}

probe_ro=(--ro "$AL_PROBE_DIR:/probe" --rw "$witness:/out")
# shellcheck disable=SC2086
{
	bad_input '--no-such-option' run --no-such-option "${probe_ro[@]}" -- $ran
	bad_input 'command|cmd' run
	bad_input 'command|cmd' run --time 5 --
	bad_input '12X' run --disk 12X "${probe_ro[@]}" -- $ran
	bad_input '-5' run --time -5 "${probe_ro[@]}" -- $ran
	bad_input '/nonexistent/prog' run "${probe_ro[@]}" -- /nonexistent/prog
	bad_input 'relative-dir-that-does-not-exist' run --workdir relative-dir-that-does-not-exist "${probe_ro[@]}" -- $ran
	bad_input '/nonexistent' run --ro /nonexistent "${probe_ro[@]}" -- $ran
	# A backend without the --workdir overlay refuses --workdir (here the world-writable cwd, which
	# must stay empty: the host dir would have been bound read-write).
	if al_workdir_refused; then
		bad_input "the $AL_BACKEND backend cannot take --workdir safely" run --workdir "$cwd" "${probe_ro[@]}" -- \
			/bin/sh -c "$ran; echo x >/workspace/new; chmod 06755 /workspace/new"
	fi
}
[ ! -e "$cwd/relative-dir-that-does-not-exist" ] || al_fail "--workdir created its missing dir"

# A payload that cannot be executed is a setup error in the verdict too.
al_run run --json -- /nonexistent/prog
al_assert_rc 125
al_assert_eq "$(al_json_get "$AL_OUT" status)" setup-error "verdict status for a missing program"
al_assert_contains "$(al_json_get "$AL_OUT" error.message)" /nonexistent/prog "verdict error.message"
cd "$AL_TEST_ROOT" || al_fail "cd back"
