#!/bin/bash
# env.sh — the caller's environment is never inherited; --env passes or sets named variables.
. "$(dirname "$0")/../lib.sh"

m=$(al_marker)
export AL_LEAK_CANARY="leak-$m"
export AL_PASS_ME="passed-$m"
unset AL_SET_ME

al_probe -- env
al_assert_rc 0
al_assert_not_contains "$AL_OUT" "$m" "environment inside"
al_assert_not_contains "$AL_OUT" AL_LEAK_CANARY "environment inside"
names=$(printf '%s\n' "$AL_OUT" | sed -n 's/=.*//p' | sort | tr '\n' ' ')
if al_backend_is bwrap; then
	# bwrap always sets PWD, to the working directory (docs/backends.md); nothing else is added.
	al_assert_eq "$names" "HOME LANG LOGNAME PATH PWD TMPDIR USER " "variable names inside (bwrap adds PWD, nothing else)"
	al_assert_eq "$(al_kv PWD)" /workspace "PWD (bwrap)"
else
	al_assert_eq "$names" "HOME LANG LOGNAME PATH TMPDIR USER " "variable names inside (SPEC: nothing else)"
fi
al_assert_eq "$(al_kv HOME)" /workspace "HOME"
al_assert_eq "$(al_kv PATH)" /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "PATH"
al_assert_eq "$(al_kv LANG)" C.UTF-8 "LANG"
al_assert_eq "$(al_kv USER)" user "USER"
al_assert_eq "$(al_kv LOGNAME)" user "LOGNAME"
al_assert_eq "$(al_kv TMPDIR)" /tmp "TMPDIR"

# --env NAME passes NAME through from airlock's own environment.
al_probe --env AL_PASS_ME -- getenv AL_PASS_ME
al_assert_rc 0
al_assert_eq "$AL_OUT" "passed-$m" "--env NAME"
al_probe -e AL_PASS_ME -- getenv AL_LEAK_CANARY
al_assert_rc 1
al_assert_eq "$AL_OUT" "getenv=UNSET" "a variable not named by --env"

# --env NAME=VALUE sets it (the value may itself contain '=').
al_probe --env "AL_SET_ME=a=b $m" -- getenv AL_SET_ME
al_assert_rc 0
al_assert_eq "$AL_OUT" "a=b $m" "--env NAME=VALUE"

# --env may override a default such as HOME only if the caller says so; the defaults
# stay otherwise, checked above. Several --env options combine.
al_probe --env AL_PASS_ME --env "AL_SET_ME=x" -- env
al_assert_contains "$AL_OUT" "AL_PASS_ME=passed-$m" "environment with two --env"
al_assert_contains "$AL_OUT" "AL_SET_ME=x" "environment with two --env"
al_assert_not_contains "$AL_OUT" AL_LEAK_CANARY "environment with two --env"
