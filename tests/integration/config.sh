#!/bin/bash
# config.sh — the configuration file: check and dump round-trip, errors name file:line:column and
# the key, the lookup order, its limits reach `airlock run` under the flags, and as root a file
# anyone but root could change is refused. Never touches the real /etc or the caller's home.
. "$(dirname "$0")/../lib.sh"

base=$(al_tmpdir)
# Every lookup location points into this test's own directories.
export AIRLOCK_SYSCONFDIR="$base/etc" XDG_CONFIG_HOME="$base/xdg" HOME="$base/home"
(umask 022 && mkdir -p "$base/etc/airlock" "$base/xdg/airlock" "$base/home/.config/airlock")
sys="$base/etc/airlock/config.yaml"
usr="$base/xdg/airlock/config.yaml"

# cfg NAME TEXT: a config file owned by the test (root when the harness is root), mode 0644.
cfg() {
	printf '%s' "$2" >"$base/$1"
	chmod 0644 "$base/$1"
	printf '%s\n' "$base/$1"
}

# kept [AIRLOCK-ARGS...]: how many bytes of a 17-byte stdout (16 and a newline) the verdict kept.
kept() {
	al_run "$@" run --json -- /bin/echo 0123456789abcdef
	al_json_get "$AL_OUT" stdout.kept
}

# expect_error TEXT: the last run failed with 125, one error line containing TEXT, nothing on stdout.
expect_error() {
	al_assert_rc 125
	al_assert_contains "$AL_ERR" "$1" "error"
	[ "$(printf '%s\n' "$AL_ERR" | grep -c .)" = 1 ] || al_fail "expected one error line, got: $AL_ERR"
	al_assert_eq "$AL_OUT" "" "stdout of a refused config"
}

# ---- no file anywhere: the embedded defaults, which `airlock run` used before.
al_run config check
al_assert_rc 0
al_assert_eq "$AL_OUT" ok "config check with no file"
al_run config dump
al_assert_rc 0
al_assert_contains "$AL_OUT" $'limits:\n  time: 30s\n  memory: 512M\n  cpus: 0.5\n  disk: 1G\n  output-limit: 1M' "defaults"
al_assert_contains "$AL_OUT" "untrusted-code-write:" "dump"
dump1=$(cfg dump1.yaml "$AL_OUT"$'\n')

# ---- round trip: dump | check - accepts it, and dumping it again changes nothing.
al_run config check - <"$dump1"
al_assert_eq "$AL_RC/$AL_OUT" 0/ok "config dump | config check -"
al_run config check "$dump1"
al_assert_eq "$AL_RC/$AL_OUT" 0/ok "config check FILE of a dump"
al_run config dump --config "$dump1"
al_assert_rc 0
al_assert_eq "$AL_OUT" "$(cat "$dump1")" "dump of the dump"
custom=$(cfg custom.yaml $'version: 1\n# a comment\nlimits: {memory: 1G, pids: 100}\nnetwork:\n  registries:\n    corp: [pkg.corp.example]\nprofiles:\n  corp: {network: [corp], filesystem: checkout-copy, limits: {time: 5m}}\n')
al_run --config "$custom" config dump
al_assert_rc 0
al_assert_contains "$AL_OUT" $'  time: 30s\n  memory: 1G\n  cpus: 0.5\n  pids: 100' "merged limits (the file's keys only)"
al_assert_contains "$AL_OUT" "    pypi: [pypi.org, files.pythonhosted.org]" "default registries kept"
dump2=$(cfg dump2.yaml "$AL_OUT"$'\n')
al_run config dump --config "$dump2"
al_assert_eq "$AL_OUT" "$(cat "$dump2")" "round trip of a merged config"
al_pass "config dump round-trips"

# ---- errors: file:line:column: key: problem; exit 125; the same from standard input.
bad=$(cfg bad.yaml $'version: 1\nlimits:\n  time: 30s\n  memory: 12X\n')
al_run config check "$bad"
expect_error "$bad:4:11: limits.memory: invalid size '12X'"
al_run config check - <"$bad"
expect_error "<stdin>:4:11: limits.memory"
al_run run --config "$bad" -- /bin/true
expect_error "$bad:4:11: limits.memory"
dup=$(cfg dup.yaml $'version: 1\nlimits:\n  time: 1s\n  time: 2s\n')
al_run config check "$dup"
expect_error "$dup:4:3: limits.time: duplicate key"
unknown=$(cfg unknown.yaml $'version: 1\nprofiles:\n  p: {network: none, netwrok: host}\n')
al_run config check "$unknown"
expect_error "$unknown:3:22: profiles.p.netwrok: unknown key"
range=$(cfg range.yaml $'version: 1\nlimits: {open-files: 5}\n')
al_run config check "$range"
expect_error "$range:2:22: limits.open-files: must be between 16 and 1048576"
tiny=$(cfg tiny.yaml $'version: 1\nlimits: {address-space: 1}\n')
al_run config check "$tiny"
expect_error "$tiny:2:25: limits.address-space: must be at least 16M"
al_run config check "$base/missing.yaml"
expect_error "missing.yaml: No such file"
al_run run --config "$base/missing.yaml" -- /bin/true
expect_error "missing.yaml: No such file"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' '#' >"$base/big.yaml"
al_run config check "$base/big.yaml"
expect_error "larger than 1048576 bytes"
al_run run --config "$custom" --config "$custom" -- /bin/true
expect_error "--config given twice"
al_pass "config errors name file:line:column and the key"

# ---- the config's limits are run's defaults; flags win; --config anywhere among the options.
small=$(cfg small.yaml $'version: 1\nlimits: {output-limit: 10, time: 1s}\n')
al_assert_eq "$(kept)" 17 "stdout kept without a config"
al_assert_eq "$(kept --config "$small")" 10 "output-limit from airlock --config FILE run"
al_run run --json --config="$small" -- /bin/echo 0123456789abcdef
al_assert_eq "$(al_json_get "$AL_OUT" stdout.kept)" 10 "output-limit from run --config=FILE"
al_run run --config "$small" --output-limit 12 --json -- /bin/echo 0123456789abcdef
al_assert_eq "$(al_json_get "$AL_OUT" stdout.kept)" 12 "a flag overrides the config"
al_run run --output-limit 12 --config "$small" --json -- /bin/echo 0123456789abcdef
al_assert_eq "$(al_json_get "$AL_OUT" stdout.kept)" 12 "a flag before --config overrides it too"
al_run run --config "$small" -- /bin/sleep 5
al_assert_rc 124
al_run run --config "$small" --time 20 -- /bin/sleep 2
al_assert_rc 0
# After "--" (and after the command) --config belongs to the command.
al_run run -- /bin/echo --config "$small"
al_assert_eq "$AL_RC/$AL_OUT" "0/--config $small" "--config after --"
# A config limit is a default, not a demand: where this caller has no cgroup, a memory limit
# from the config is reported as not enforced and the job still runs (a --memory flag would be
# refused, see limits.sh).
mem=$(cfg mem.yaml $'version: 1\nlimits: {memory: 64M, pids: 64, cpus: 0.25}\n')
al_run run --config "$mem" --json -- /bin/true
al_assert_rc 0
al_pass "the config's limits apply under the flags"

# ---- lookup: /etc (here $AIRLOCK_SYSCONFDIR), else the user's file (never as root).
printf 'version: 1\nlimits: {output-limit: 7}\n' >"$usr"
chmod 0644 "$usr"
if [ "$AL_CALLER_UID" = 0 ]; then
	al_assert_eq "$(kept)" 17 "root ignores \$XDG_CONFIG_HOME/airlock/config.yaml"
else
	al_assert_eq "$(kept)" 7 "\$XDG_CONFIG_HOME/airlock/config.yaml"
	mv "$usr" "$base/home/.config/airlock/config.yaml"
	al_assert_eq "$(XDG_CONFIG_HOME='' kept)" 7 "\$HOME/.config/airlock/config.yaml"
	mv "$base/home/.config/airlock/config.yaml" "$usr"
fi
printf 'version: 1\nlimits: {output-limit: 5}\n' >"$sys"
chmod 0644 "$sys"
al_assert_eq "$(kept)" 5 "the system file wins"
al_run config check
al_assert_eq "$AL_RC/$AL_OUT" 0/ok "config check of the looked-up file"
al_assert_eq "$(kept --config "$small")" 10 "--config replaces the lookup"
printf 'version: 1\nlimits: {output-limit: five}\n' >"$sys"
al_run run -- /bin/true
expect_error "$sys:2:24: limits.output-limit"
al_pass "lookup order"

# ---- as root, only a file that only root can change.
printf 'version: 1\nlimits: {output-limit: 5}\n' >"$sys"
if [ "$AL_CALLER_UID" = 0 ]; then
	chmod 0664 "$sys"
	al_run run -- /bin/true
	expect_error "writable by group or others"
	chmod 0644 "$sys"
	chown "$AL_NOBODY_UID" "$sys"
	al_run config check
	expect_error "belongs to uid $AL_NOBODY_UID"
	chown 0 "$sys"
	chmod 0777 "$base/etc/airlock"
	al_run run -- /bin/true
	expect_error "directory $base/etc/airlock is writable by group or others"
	chmod 0755 "$base/etc/airlock"
	chmod 0666 "$small"
	al_run run --config "$small" -- /bin/true
	expect_error "$small: the file is writable by group or others"
	ln -s "$small" "$base/etc/airlock/link.yaml"
	al_run config check "$base/etc/airlock/link.yaml"
	expect_error "link.yaml: the file is writable"
	chmod 0644 "$small"
	al_run config check "$base/etc/airlock/link.yaml"
	al_assert_eq "$AL_RC/$AL_OUT" 0/ok "a symlink to a root-only file"
	al_assert_eq "$(kept)" 5 "the root-only system file is read"
	al_pass "as root, configs that others could change are refused"
else
	# Not root: the caller's own trust, whoever may write the file.
	chmod 0666 "$small"
	al_assert_eq "$(kept --config "$small")" 10 "a world-writable --config as an unprivileged user"
	chmod 0644 "$small"
fi

# ---- docs/config.md shows the embedded defaults as they are (never hand-edited drift)
doc="$AL_SRC/docs/config.md"
if [ -f "$doc" ]; then
	want=$(awk '/^```yaml$/ { on = 1; next } on && /^```$/ { exit } on' "$doc")
	got=$(AIRLOCK_SYSCONFDIR=/nonexistent XDG_CONFIG_HOME=/nonexistent al_airlock config dump)
	al_assert_eq "$got" "$want" "docs/config.md's defaults vs airlock config dump"
	al_pass "docs/config.md matches the embedded defaults"
fi
