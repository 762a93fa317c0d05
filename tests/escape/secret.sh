#!/bin/bash
# secret.sh — attack: read a host secret that was not given to the sandbox (plain path, /proc/*/root, "..", symlinks,
# hard links, links the host left in a bound dir, inherited descriptors, open_by_handle_at, airlock's environment).
# Defence: mount namespace + pivot_root, fresh pid namespace and procfs, closed descriptors, scrubbed environment,
# seccomp (handles). Judged by the secret's random marker appearing anywhere in what the job printed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
esc_need esc-secret

m=$(al_marker)
top=$(al_tmpdir 0755)
mkdir -m 0755 "$top/secret" "$top/pub"
# World-readable: only the sandbox's view of the file system stands between the job and it.
printf 'secret-file-%s\n' "$m" >"$top/secret/secret.txt"
chmod 0644 "$top/secret/secret.txt"
# Links the host left in the dir it does bind: they must resolve inside the sandbox's view.
ln -s ../secret/secret.txt "$top/pub/rel-link"
ln -s "$top/secret/secret.txt" "$top/pub/abs-link"
echo public >"$top/pub/readme"

# A descriptor airlock itself holds open, and a variable in its environment.
exec 7<"$top/secret/secret.txt" 8<"$top/secret"
export ESC_HOST_TOKEN="secret-env-$m"
esc_run --ro "$top/pub:/pub" -- "$ESC/esc-secret" "$top/secret/secret.txt" /pub secret/secret.txt
exec 7<&- 8<&-
unset ESC_HOST_TOKEN
esc_ran
esc_no_leak "$m" "the host secret (file, descriptor or environment)"
esc_denied direct proc-1-root proc-self-root dotdot symlink-read symlink-proc-read hardlink \
	bound-rel-link bound-abs-link bound-dotdot bound-dotdot-abs name_to_handle_at open_by_handle_at
al_assert_eq "$(esc_kv proc-scan-found)" 0 "files found through /proc/N/root and /proc/N/cwd"
al_assert_eq "$(esc_kv inherited-fds)" 0 "descriptors inherited from airlock"
# The job did see what it was given: the bound dir is readable, so the refusals are real.
al_assert_contains "$ESC_OUT" "bound-rel-link=ENOENT" "the host's relative link resolves inside the sandbox's view"

# Control: the same program and judge, with the secret's dir bound (at /ctl: gVisor cannot make a mount
# point below its own /tmp tmpfs, where the host path lies), do see the secret. This proves the judge
# notices a leak (harmless: the file is this test's own).
esc_run --ro "$top/secret:/ctl" -- "$ESC/esc-secret" /ctl/secret.txt
esc_ran
al_assert_contains "$ESC_OUT" "secret-file-$m" "control: the program reads the secret when it is bound"
al_assert_eq "$(esc_kv direct)" OK "control: direct read of a bound secret"
al_pass "the control run leaks as expected, so the judge can fail"
