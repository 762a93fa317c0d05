#!/bin/bash
# langconf.sh — the configuration languages read at start is shown read-only, and secrets never:
# matplotlib saves a PNG with no Fontconfig error, PHP loads the extensions it loads bare, Java
# starts; /etc/shadow, /etc/ssh and the host's resolver are not there, and /etc/php is read-only.
. "$(dirname "$0")/../lib.sh"

for f in /etc/matplotlibrc /etc/fonts/fonts.conf /etc/php; do
	[ -e "$f" ] || al_fail "$f is missing on the host (scripts/deps.sh installs python3-matplotlib, php-cli)"
done

# matplotlib, from `airlock run` with no help from airlock's kernel: its rc file and fontconfig's.
al_run run -- python3 -c 'import matplotlib.pyplot as p, os
p.plot([1, 3, 2]); p.savefig("/tmp/x.png")
print("png", open("/tmp/x.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n", os.path.getsize("/tmp/x.png") > 1000)'
al_assert_rc 0
al_assert_eq "$AL_OUT" "png True True" "matplotlib's PNG inside"
al_assert_not_contains "$AL_ERR" "Fontconfig" "stderr of the plot"
al_assert_not_contains "$AL_ERR" "matplotlibrc" "stderr of the plot"

# PHP: the same extensions (conf.d is read through /etc/php).
bare=$(php -m)
al_run run -- php -m
al_assert_rc 0
al_assert_eq "$AL_OUT" "$bare" "php -m inside"
al_assert_contains "$AL_OUT" PDO "php -m inside"

if command -v java >/dev/null; then
	al_run run -- java -XshowSettings:properties -version
	al_assert_rc 0
	al_assert_contains "$AL_ERR" "java.home" "java's settings inside"
fi

# Read-only, and nothing of the reviewed-out places: each listed, none there.
al_run run -- sh -c 'touch /etc/php/x 2>/dev/null && echo wrote; for f in /etc/shadow /etc/gshadow /etc/ssh /etc/ssl/private /etc/sudoers /etc/pip.conf /etc/npmrc /etc/machine-id /etc/network /etc/apt; do [ -e "$f" ] && echo "shown $f"; done; grep -c . /etc/resolv.conf 2>/dev/null; echo end'
al_assert_rc 0
al_assert_eq "$AL_OUT" "end" "writes to /etc/php and secrets shown"

# A configuration that names a place of secrets is refused at load, naming it.
printf 'version: 1\nlanguages:\n  shell: {command: [bash], file: main.sh, etc: [/etc/ssh]}\n' >"$AL_TEST_ROOT/bad.yaml"
chmod 0644 "$AL_TEST_ROOT/bad.yaml"
al_run --config "$AL_TEST_ROOT/bad.yaml" run -- true
[ "$AL_RC" != 0 ] || al_fail "a configuration naming /etc/ssh was accepted"
al_assert_contains "$AL_ERR" "/etc/ssh" "the refusal"
al_assert_contains "$AL_ERR" "secrets" "the refusal"
al_pass "languages' configuration shown, secrets not"
