#!/bin/bash
# image_build.sh — `airlock image build`: a Debian environment from a recipe, made by mmdebstrap
# from the Debian archive, runs `import pandas` from the image (where the host has no pandas,
# also not without it); a rebuild has the same digest (SOURCE_DATE_EPOCH); bad recipes are
# refused before mmdebstrap runs; what each language loads bare in a built image's tree loads inside
# (python on the pandas image, php, perl, ruby and node on a second). Takes a few minutes (two
# builds of python3-pandas, one of the other languages).
AL_GUARD_TIMEOUT=${AL_GUARD_TIMEOUT:-840}
. "$(dirname "$0")/../lib.sh"

j() { al_json_get "$AL_OUT" "$1"; }
work=$(al_tmpdir 0777)
export AIRLOCK_IMAGES=$work/store

# Refused up front: names that could read as options, an empty list, a bad mirror.
al_run image build bad --packages 'python3,--hook-dir=/tmp'
al_assert_rc 125
al_assert_contains "$AL_ERR" "not a Debian package name" "an option disguised as a package"
al_run image build bad --packages python3 --mirror 'ftp://example.org'
al_assert_rc 125
al_assert_contains "$AL_ERR" "mirror" "a mirror that is not http(s) or file"
al_pass "bad build requests are refused before mmdebstrap runs"

if [ "$AL_TEST_MODE" = user ]; then
	# mmdebstrap's unshare mode needs subordinate ids, which the test user has none of: the
	# build must fail with mmdebstrap's reason and leave nothing in the store.
	al_run image build pd --packages python3-minimal
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "mmdebstrap" "the failing step is named"
	[ -z "$(ls -A "$AIRLOCK_IMAGES/tmp")" ] || al_fail "a failed build left $(ls "$AIRLOCK_IMAGES/tmp")"
	al_pass "an unprivileged build without subordinate ids fails cleanly"
	exit 0
fi

host_has=no
"$AL_PY" -c 'import pandas' 2>/dev/null && host_has=yes
cat >"$work/recipe.yaml" <<'EOF'
name: pd
suite: bookworm
packages: [python3-pandas]
EOF
chmod a+r "$work/recipe.yaml"
al_run image build --recipe "$work/recipe.yaml"
al_assert_rc 0
al_assert_contains "$AL_OUT" "pd sha256:" "the build names its digest"
# Progress a person can follow: phases, and apt's packages counted (stderr is no terminal here:
# a line per phase and per tenth of the packages set up).
al_assert_contains "$AL_ERR" "installing remaining packages" "the build's phases are shown"
al_assert_contains "$AL_ERR" "fetched of" "the packages and bytes to fetch are counted"
[ "$(printf '%s\n' "$AL_ERR" | wc -l)" -lt 200 ] || al_fail "the progress is $(printf '%s\n' "$AL_ERR" | wc -l) lines"
digest=$(printf '%s' "$AL_OUT" | awk '{print $2}')
al_run run --json --memory 1G --image pd -- python3 -c 'import os, pandas; print(pandas.DataFrame({"a": [1, 2]}).a.sum(), os.stat(pandas.__file__).st_ino)'
al_assert_rc 0
ino=$(stat -c %i "$AIRLOCK_IMAGES/sha256/${digest#sha256:}/rootfs/usr/lib/python3/dist-packages/pandas/__init__.py")
al_assert_eq "$(j stdout.data)" "3 $ino" "pandas from the image (the store's own file)"
if [ "$host_has" = no ]; then
	al_run run --json -- python3 -c 'import pandas'
	al_assert_rc 1
	al_assert_contains "$(j stderr.data)" "No module named 'pandas'" "without the image: the host has no pandas"
fi
al_assert_eq "$(j image.digest)" "$digest" "the verdict names the image"
al_run image inspect pd
al_assert_eq "$(j packages.0)" python3-pandas "inspect records the packages"
al_assert_eq "$(j source_date_epoch)" 1704067200 "and the SOURCE_DATE_EPOCH of the build"
al_assert_eq "$(j recommends)" false "and that Recommends were left out (the default)"
# python3-pandas recommends python3-bs4 (and more): not installed without --recommends.
[ ! -e "$AIRLOCK_IMAGES/sha256/${digest#sha256:}/rootfs/usr/lib/python3/dist-packages/bs4" ] ||
	al_fail "a package pandas only recommends is in the image"
[ -z "$(find "$AIRLOCK_IMAGES/sha256" -perm /6000 | head -1)" ] || al_fail "a set-id file in the built image"
# The tree's owners, in the sandbox range: root's files the sandbox's mapped 0, group shadow (42)
# kept for /etc/shadow; no file of host root.
rootfs=$AIRLOCK_IMAGES/sha256/${digest#sha256:}/rootfs
al_assert_eq "$(stat -c '%u:%g' "$rootfs/etc/shadow" "$rootfs/usr/bin/python3")" "$AL_ID_BASE:$((AL_ID_BASE + 42))
$AL_ID_BASE:$AL_ID_BASE" "a Debian tree keeps its owners, mapped into the sandbox range"
[ -z "$(find "$rootfs" -uid 0 | head -1)" ] || al_fail "a file of host root in the built image"
al_run run --image pd -- stat -L -c '%u:%g' /usr/bin/python3
al_assert_eq "$AL_OUT" "0:0" "inside, root's files are the sandbox's root's"
al_pass "a Debian environment built with mmdebstrap runs what the host lacks"

# What a language's interpreter loads bare in an image's tree — bubblewrap over the tree with its
# own /etc, a /proc, /dev and /tmp, nothing of airlock's, as the sandbox user 1000 — loads inside a
# sandbox on the image (tests/integration/parity.sh does it on the host's tree).
# parity IMAGE ROOTFS LANG NAME: NAME must be among what loads (the lister works).
parity() {
	local image=$1 tree=$2 lang=$3 must=$4 e bare missing extra n
	# The tarball has no /dev (no device nodes): a tmpfs root with the tree's top entries bound in.
	local bw=(--tmpfs /)
	for e in "$tree"/*; do
		case ${e##*/} in dev | proc | tmp) continue ;; esac
		if [ -L "$e" ]; then bw+=(--symlink "$(readlink "$e")" "/${e##*/}"); else bw+=(--ro-bind "$e" "/${e##*/}"); fi
	done
	bare=$(bwrap "${bw[@]}" --proc /proc --dev /dev --tmpfs /tmp --ro-bind "$work/parity" /tmp/parity --remount-ro / \
		--unshare-all --uid 1000 --gid 1000 --die-with-parent --clearenv --setenv HOME /tmp --setenv TMPDIR /tmp \
		--setenv PATH /usr/bin:/bin bash /tmp/parity/loads.sh "$lang") ||
		al_fail "loads.sh $lang fails bare in the tree of image $image"
	n=$(printf '%s\n' "$bare" | grep -c .)
	printf '%s\n' "$bare" | grep -qx "$must" || al_fail "$must does not load bare for $lang in the tree of $image: the lister is broken"
	al_run run --cpus 2 --time 120s --memory 1G --image "$image" --ro "$work/parity:/parity" -- bash /parity/loads.sh "$lang"
	al_assert_rc 0
	missing=$(comm -23 <(printf '%s\n' "$bare") <(printf '%s\n' "$AL_OUT") | tr '\n' ' ')
	extra=$(comm -13 <(printf '%s\n' "$bare") <(printf '%s\n' "$AL_OUT") | tr '\n' ' ')
	[ -z "${missing// /}" ] || al_fail "on the built image $image, $lang loads bare but not inside: $missing"
	[ -z "${extra// /}" ] || al_fail "on the built image $image, $lang loads inside but not bare: $extra"
	al_pass "on the built image $image, the $n names $lang loads bare load inside"
}
mkdir -p "$work/parity"
install -m 0644 "$AL_SRC/tests/parity/loads.sh" "$work/parity/loads.sh"
parity pd "$rootfs" python pandas

# The other languages' interpreters, as Debian packages them, with a module each from outside
# their core (the lister must see Debian's directories): PHP's extensions in their conf.d
# (php-cli's opcache and readline), Perl's modules, Ruby's standard library, Node's builtins.
al_run image build langs --packages php-cli,perl,libjson-perl,ruby,nodejs
al_assert_rc 0
langs=$AIRLOCK_IMAGES/sha256/$(printf '%s' "$AL_OUT" | awk '{print $2}' | sed 's/^sha256://')/rootfs
[ -d "$langs" ] || al_fail "the image langs has no tree at $langs"
parity langs "$langs" php readline
parity langs "$langs" perl JSON
parity langs "$langs" ruby json
parity langs "$langs" node fs

# Reproducible: the same recipe against the same archive gives the same tarball, so the same digest.
al_run image build --recipe "$work/recipe.yaml"
al_assert_rc 0
al_assert_eq "$(printf '%s' "$AL_OUT" | awk '{print $2}')" "$digest" "a rebuild's digest"
al_pass "rebuilds are reproducible"
