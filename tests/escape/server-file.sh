#!/bin/bash
# server-file.sh — attack: plant symlinks in a sandbox's workspace aimed at a host path (a secret, its directory,
# "../..", /proc/1/root, /proc/self/root, a victim directory) and ask the server's file API (airlock mcp:
# code_read_file, code_list_files, code_write_file) to follow them, also with "..", absolute and /workspace/..
# paths. Defence: every client path is resolved beneath the workspace by openat2(RESOLVE_BENEATH |
# RESOLVE_NO_MAGICLINKS), the leaf never followed when writing (src/manager/wsfiles.c). Judged from outside:
# the secret's random marker never appears in an answer, and the victim directory and the secret are unchanged.
. "$(dirname "$0")/../lib.sh"

m=$(al_marker)
top=$(al_tmpdir 0777)
mkdir -m 0755 "$top/secret"
mkdir -m 0777 "$top/victim"
printf 'secret-%s\n' "$m" >"$top/secret/secret.txt"
chmod 0644 "$top/secret/secret.txt"
echo keep >"$top/victim/keep"
cp "$AL_SRC/tests/mcp/client.py" "$AL_SRC/tests/mcp/serverfile.py" "$top/"
chmod 0644 "$top"/*.py
"$AL_PY" "$top/serverfile.py" "$top/secret/secret.txt" "$top/victim" "$top/audit.jsonl" -- \
	"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" || al_fail "the file API followed a planted link out of the workspace"
al_pass "the file API stays beneath the workspace"
