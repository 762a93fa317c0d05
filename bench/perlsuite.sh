#!/usr/bin/env bash
# perlsuite.sh — perl's own core tests (t/ of Debian's perl source), directory by directory, bare and
# inside `airlock run` (issue 14, part 2).
#
# Not a test and not part of CI: a measurement of "the default posture runs what runs bare", like
# pysuite.sh for CPython. Debian ships no binary package of perl's test suite, so this takes the
# source package of the installed perl (apt-get source, from a deb-src line of the Debian archive this
# host uses: no change to the host's apt configuration) and keeps only t/ and lib/. The installed
# perl runs them; t/test.pl sets @INC to ../lib, so lib/ is made of the installed perl's modules
# (Config.pm, the XS modules and their shared objects) and then the source's. Each directory runs
# under prove once bare (as an ordinary user, like the payload, in a copy of the tree) and once
# inside airlock with the default posture (no flags but a longer --time, the tree as a throwaway
# copy: --checkout-mode copy), and the script prints one line per directory: files passed bare,
# passed inside, and the files that fail inside only.
#
# Usage: bench/perlsuite.sh [DIR...]     (directories of t/, default: the core ones below)
# Environment: AIRLOCK (default build/airlock), AIRLOCK_OPTS (extra `airlock run` options), PERL_SRC
# (an unpacked perl source tree to use instead of fetching one), TIMEOUT (per directory and side,
# seconds, default 900), BENCH_RESULTS=DIR (keep each run's output there).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
find_airlock
need prove
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=(base comp cmd opbasic io op re uni mro run lib)
timeout=${TIMEOUT:-900}
suite_dirs perlsuite

# The source of the installed perl, t/ and lib/ only.
version=$(perl -e 'printf "%vd", $^V')
src=${PERL_SRC:-}
if [[ -z $src ]]; then
	# Any Debian revision will do: the tests are upstream's, and the upstream version must match.
	orig=$(debian_source perl "$work")
	[[ $orig == */perl_$version.orig.tar.* ]] || die "the archive's perl source is not perl $version ($orig)"
	tar -C "$work" -xf "$orig" "perl-$version/t" "perl-$version/lib"
	src=$work/perl-$version
fi
[[ -f $src/t/test.pl && -d $src/lib ]] || die "no perl source tree at '$src' (t/test.pl, lib/)"
tree=$work/tree
mkdir -p "$tree"
cp -a "$src/t" "$tree/"
# lib/: the installed perl's modules first (a tree of links; the first @INC entry wins), then what
# only the source has (test data, modules Debian does not install).
mkdir -p "$tree/lib"
while read -r inc; do
	[[ $inc == /usr/* && -d $inc ]] || continue
	cp -rsn "$inc/." "$tree/lib/"
done < <(perl -e 'print "$_\n" for @INC')
cp -rn "$src/lib/." "$tree/lib/"

# Bare runs as the sandbox's payload does (bench/lib.sh bare_user), in a copy of the tree it may write.
bare_user

# passed FILE: the test files prove reported as passed (or skipped as a whole), from its per-file
# lines "op/array.t ....... ok"; a file that failed, crashed or never ran is not listed.
passed() {
	{ grep -aE '^[a-z_]+/[^ ]+\.t \.+ (ok$|skipped:)' "$1" || true; } | awk '{ print $1 }' | LC_ALL=C sort -u
}

run_one() { # SIDE DIR
	local f="$out/$2.$1" t0 t1
	t0=$(date +%s.%N)
	if [[ $1 == bare ]]; then
		local copy=$work/bare.$2
		rm -rf "$copy" && cp -a "$tree" "$copy" && chmod -R a+rwX "$copy"
		(cd "$copy/t" && timeout -k 5 "$timeout" "${bare_as[@]}" env -i "${bare_env[@]}" prove "$2/") \
			>"$f" 2>&1 && echo 0 >"$f.rc" || echo $? >"$f.rc"
		rm -rf "$copy"
	else
		timeout -k 5 "$((timeout + 30))" "$airlock" run --time "${timeout}s" "${opts[@]}" \
			--checkout "$tree" --checkout-mode copy --cwd /workspace/src/t -- prove "$2/" \
			>"$f" 2>&1 && echo 0 >"$f.rc" || echo $? >"$f.rc"
	fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", b - a }' >"$f.secs"
}

printf '# %s, airlock %s %s, %s, perl %s\n' "$(date -u '+%F %H:%M UTC')" "$airlock" "${opts[*]}" "$(id -un)" "$version"
printf '%-10s %7s %-16s %-16s %s\n' dir files "bare ok" "inside ok" "not ok inside only"
for d in "${dirs[@]}"; do
	[[ -d $tree/t/$d ]] || die "no directory t/$d in the perl source"
	for side in bare inside; do run_one "$side" "$d"; done
	n=$(find "$tree/t/$d" -maxdepth 1 -name '*.t' | wc -l)
	only=$(LC_ALL=C comm -23 <(passed "$out/$d.bare") <(passed "$out/$d.inside") | tr '\n' ' ')
	printf '%-10s %7s %-16s %-16s %s\n' "$d" "$n" "$(passed "$out/$d.bare" | wc -l) ($(cat "$out/$d.bare.secs")s)" \
		"$(passed "$out/$d.inside" | wc -l) ($(cat "$out/$d.inside.secs")s)" "$only"
done
echo "# outputs in $out"
