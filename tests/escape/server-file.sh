#!/bin/bash
# server-file.sh — attack: plant a symlink in the workspace aimed at a host path (a secret, a host dir, "../..",
# /proc/1/root) and then ask `airlock serve`'s file API (read_file, list_files, write_file) to follow it.
# Defence expected: every client path resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) beneath the
# workspace (DESIGN.md, "Server-side file operations never follow a path the sandbox controls outside it").
# The hostile program (esc-symlink plant) exists; this driver waits for the server's file API (issue 6): it skips
# (77) until `airlock serve` exists, and fails once it does, so the case is not forgotten.
if [ -n "${AIRLOCK:-}" ] && "$AIRLOCK" serve --help >/dev/null 2>&1; then
	echo "FAIL: escape.server-file: 'airlock serve' exists now: write this case against its file API" >&2
	exit 1
fi
echo "SKIP: escape.server-file: waits for the server's file API (airlock serve, issue 6); the hostile program is tests/escape/esc-symlink.c" >&2
exit 77
