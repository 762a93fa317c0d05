#!/bin/bash
# subids.sh — as an ordinary user, --subids maps the caller's subordinate ids around the sandbox
# user through newuidmap/newgidmap; where there are none (or as root) it is refused, never faked.
. "$(dirname "$0")/../lib.sh"

if [ "$AL_TEST_MODE" = root ]; then
	al_run run --subids -- /bin/true
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "for ordinary users" "--subids as root"
	exit 0
fi

me=$("${AL_SETPRIV[@]}" id -u)
has_subids() { grep -qE "^($("${AL_SETPRIV[@]}" id -un)|$me):" /etc/subuid /etc/subgid 2>/dev/null; }
# Only inside the throwaway test VM (whose root filesystem is a discarded overlay) may the test
# give its user subordinate ids; on a real host it never touches /etc.
if ! has_subids && [ -n "${AL_IN_VM:-}" ] && [ "$(id -u)" = 0 ]; then
	name=$("${AL_SETPRIV[@]}" id -un)
	echo "$name:300000:65536" >>/etc/subuid
	echo "$name:300000:65536" >>/etc/subgid
fi

if ! has_subids; then
	al_run run --subids -- /bin/true
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "no subordinate ids" "--subids without /etc/subuid entries"
	al_pass "refused without subordinate ids (positive case runs in the VM label)"
	exit 0
fi

al_run run --subids --json -- /bin/sh -c 'cat /proc/self/uid_map; id -u'
al_assert_rc 0
al_assert_eq "$(al_json_get "$AL_OUT" enforced.id_map.mode)" subids "enforced.id_map.mode"
map=$(al_json_get "$AL_OUT" stdout.data)
al_assert_eq "$(printf '%s\n' "$map" | awk 'NF == 3 && $1 == 1000 { print $2, $3 }')" "$me 1" "sandbox uid 1000 is the caller"
al_assert_eq "$(printf '%s\n' "$map" | awk 'NF == 3' | wc -l)" 3 "uid_map lines (subordinate ids around the caller)"
al_assert_eq "$(printf '%s\n' "$map" | tail -n 1)" 1000 "payload uid inside"
al_pass "subordinate ids mapped: $(printf '%s' "$map" | tr '\n' ' ')"
