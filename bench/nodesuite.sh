#!/usr/bin/env bash
# nodesuite.sh — node's own tests (test/parallel of Debian's nodejs source), bare and inside
# `airlock run` (issue 14, part 2), group by group (test-net-*, test-fs-*, ...).
#
# Not a test and not part of CI: a measurement of "the default posture runs what runs bare", like
# pysuite.sh and perlsuite.sh. Debian ships no binary package of node's tests, so this takes the
# source package from the Debian archive this host uses (apt-get source with a deb-src list of its
# own: no change to the host's apt configuration) and keeps only test/. The node on PATH runs them,
# which need not be the source's version (this VM's node is nodesource's 20.x, Debian 12's source
# is 18.x): tests of a changed internal fail bare already and are not counted; what counts is a test
# that passes bare and fails inside. Each test file runs as node's own runner runs it (the flags of
# its "// Flags:" line, the test directory as cwd), with a per-test timeout, in one sandbox per
# group (the default posture, no flags but a longer --time, the tree as a throwaway copy) and bare
# as an ordinary user in a copy of the tree.
#
# Usage: bench/nodesuite.sh [GROUP...]   (test/parallel/test-GROUP-*.js; default: the groups below)
# Environment: AIRLOCK (default build/airlock), AIRLOCK_OPTS (extra `airlock run` options), NODE_SRC
# (an unpacked node source tree to use instead of fetching one), TEST_TIMEOUT (per test file,
# seconds, default 60), BENCH_RESULTS=DIR (keep each run's output there).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
find_airlock
need node
groups=("$@")
[[ ${#groups[@]} -gt 0 ]] || groups=(net dgram child fs os process dns http timers worker cluster)
per_test=${TEST_TIMEOUT:-60}
suite_dirs nodesuite

src=${NODE_SRC:-}
if [[ -z $src ]]; then
	orig=$(debian_source nodejs "$work")
	top=$(tar -tf "$orig" | sed -n 1p) # reads it all: head would end tar with SIGPIPE (pipefail)
	tar -C "$work" -xf "$orig" "${top%/}/test"
	src=$work/${top%/}
fi
[[ -d $src/test/parallel && -d $src/test/common ]] || die "no node source tree at '$src' (test/parallel, test/common)"
tree=$work/tree
mkdir -p "$tree"
cp -a "$src/test" "$tree/"

# The runner, the same on both sides: one line "FILE RC" per test file of the group.
cat >"$tree/run-group.sh" <<'EOF'
#!/bin/sh
# run-group.sh GROUP TIMEOUT — run test/parallel/test-GROUP-*.js one by one, as node's runner does.
cd "$(dirname "$0")" || exit 125
for f in test/parallel/test-"$1"-*.js; do
	flags=$(sed -n 's#^// Flags: ##p' "$f" | head -n 1)
	# shellcheck disable=SC2086 # the flags line holds several options
	timeout -k 2 "$2" node $flags "$f" >/dev/null 2>&1 </dev/null
	echo "$f $?"
done
EOF
chmod 0755 "$tree/run-group.sh"

# Bare runs as the sandbox's payload does (bench/lib.sh bare_user), in a copy of the tree it may write.
bare_user

run_one() { # SIDE GROUP
	local f="$out/$2.$1" t0 t1 n
	n=$(find "$tree/test/parallel" -maxdepth 1 -name "test-$2-*.js" | wc -l)
	t0=$(date +%s.%N)
	if [[ $1 == bare ]]; then
		local copy=$work/bare.$2
		rm -rf "$copy" && cp -a "$tree" "$copy" && chmod -R a+rwX "$copy"
		timeout -k 5 "$((n * per_test + 60))" "${bare_as[@]}" env -i "${bare_env[@]}" \
			"$copy/run-group.sh" "$2" "$per_test" >"$f" 2>&1 || true
		rm -rf "$copy"
	else
		"$airlock" run --time "$((n * per_test + 60))s" "${opts[@]}" --checkout "$tree" --checkout-mode copy \
			-- /workspace/src/run-group.sh "$2" "$per_test" >"$f" 2>&1 || true
	fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", b - a }' >"$f.secs"
}

passed() { awk '$2 == 0 { print $1 }' "$1" | LC_ALL=C sort -u; }

printf '# %s, airlock %s %s, %s, node %s, tests of %s\n' "$(date -u '+%F %H:%M UTC')" "$airlock" "${opts[*]}" \
	"$(id -un)" "$(node --version)" "$(basename "$src")"
printf '%-10s %6s %-14s %-14s %s\n' group files "bare ok" "inside ok" "failed inside only"
for g in "${groups[@]}"; do
	n=$(find "$tree/test/parallel" -maxdepth 1 -name "test-$g-*.js" | wc -l)
	[[ $n -gt 0 ]] || die "no test/parallel/test-$g-*.js in the node source"
	for side in bare inside; do run_one "$side" "$g"; done
	only=$(LC_ALL=C comm -23 <(passed "$out/$g.bare") <(passed "$out/$g.inside") | sed 's#^test/parallel/##' | tr '\n' ' ')
	printf '%-10s %6s %-14s %-14s %s\n' "$g" "$n" "$(passed "$out/$g.bare" | wc -l) ($(cat "$out/$g.bare.secs")s)" \
		"$(passed "$out/$g.inside" | wc -l) ($(cat "$out/$g.inside.secs")s)" "$only"
done
echo "# outputs in $out"
