# skips.sh — the one way a shell test skips (sourced by tests/lib.sh and the standalone tests).
# al_skip_or_fail ID REASON: exit 77 (a skip) with REASON; with CI=true exit 1 instead, unless ID
# (the CTest name, AL_CTEST) is listed in tests/skips.allow.
# shellcheck shell=bash

al_skip_listed() {
	local list
	list="$(dirname "${BASH_SOURCE[0]}")/skips.allow"
	[ -f "$list" ] && awk -v id="$1" '$1 == id { found = 1 } END { exit !found }' "$list"
}

al_skip_or_fail() {
	local id=${1:-unnamed} reason=$2
	if [ "${CI:-}" = true ] && ! al_skip_listed "$id"; then
		echo "FAIL: $id: would skip, but CI=true makes a skip an error unless tests/skips.allow lists it: $reason" >&2
		exit 1
	fi
	echo "SKIP: $id: $reason" >&2
	exit 77
}
