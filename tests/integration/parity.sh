#!/bin/bash
# parity.sh — what each language loads bare loads inside, on the default posture: CPython's standard
# library and installed distributions, PHP's extensions, Perl's core and Debian modules, Ruby's
# standard library and gems, Node's builtins (tests/parity/loads.sh lists them), except the limits
# tests/parity/limits names with their reasons.
. "$(dirname "$0")/../lib.sh"

dir=$(al_tmpdir 0755)
install -m 0644 "$AL_SRC/tests/parity/loads.sh" "$dir/loads.sh"
limits="$AL_SRC/tests/parity/limits"
bare_tmp=$(al_tmpdir 0777)
for lang in python php perl ruby node; do
	case $lang in python) prog=python3 ;; *) prog=$lang ;; esac
	command -v "$prog" >/dev/null || al_fail "$prog is not installed (scripts/deps.sh installs it)"
	# Bare: the same user as airlock's caller, an environment as scrubbed as the sandbox's.
	bare=$(cd "$bare_tmp" && "${AL_SETPRIV[@]}" env -i HOME="$bare_tmp" TMPDIR="$bare_tmp" bash "$dir/loads.sh" "$lang") ||
		al_fail "loads.sh $lang fails bare"
	n=$(printf '%s\n' "$bare" | grep -c .)
	[ "$n" -ge 20 ] || al_fail "only $n names load bare for $lang: the lister is broken"
	# Two CPUs and two minutes: importing a whole installation is slow at the default half CPU.
	al_run run --cpus 2 --time 120s --memory 1G --ro "$dir:/parity" -- bash /parity/loads.sh "$lang"
	al_assert_rc 0
	missing=$(comm -23 <(printf '%s\n' "$bare") <(printf '%s\n' "$AL_OUT"))
	extra=$(comm -13 <(printf '%s\n' "$bare") <(printf '%s\n' "$AL_OUT"))
	unexplained=()
	for m in $missing; do
		grep -q "^$lang $m " "$limits" || unexplained+=("$m")
	done
	for m in $(awk -v l="$lang" '$1 == l { print $2 }' "$limits"); do
		printf '%s\n' "$missing" | grep -qx "$m" || al_log "limit '$lang $m' no longer differs: remove it from tests/parity/limits"
	done
	[ ${#unexplained[@]} = 0 ] || al_fail "$lang: loads bare but not inside (no limit names it): ${unexplained[*]}"
	[ -z "$extra" ] || al_fail "$lang: loads inside but not bare: $extra"
	al_pass "$lang: the $n names that load bare load inside"
done
