#!/usr/bin/env bash
# state_full.sh — a state directory on a small filesystem (issue 32): a 32 MiB tmpfs mounted in a
# private mount namespace this test makes (unshare -m), the server run inside it. Judged from
# outside, through that namespace: a sandbox is made only if the filesystem has room for its whole
# disk limit beside what the others may still write, and the files a sandbox shares with a
# snapshot's layer count as not yet written (a change of one takes new room); once the filesystem
# is filled, creates, forks and snapshots are refused (507) with a message saying why, and the
# state directory holds exactly what it held before (no sandbox directory, record, temporary or
# layer half-written); a file write it cannot keep is answered 507 saying so, and a pause to disk
# is refused; once space is freed, each of them works again, and the next call keeps that file.
: "${AL_GUARD_TIMEOUT:=200}"
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
command -v unshare >/dev/null && command -v nsenter >/dev/null || al_skip "unshare or nsenter is missing (util-linux)"
[ "$(id -u)" = 0 ] || al_skip "mounting a tmpfs in a private mount namespace needs root"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
# No spares: every create below names its own disk limit.
al_serve_config "$confdir/full.yaml" 'server:\n  max_lifetime: 1h\n  pool: []\n'
al_token_file "$dir/serve.token" alice >/dev/null
chown "$AL_CALLER_UID:$AL_CALLER_GID" "$dir/serve.token"

# The namespace: held by a process of its own, so that it outlives the servers started in it.
mnt="$dir/fs"
mkdir -m 0755 "$mnt"
unshare -m --propagation private sleep 100000 &
holder=$!
AL_BG_PIDS+=("$holder")
for _ in $(seq 50); do
	[ "$(readlink "/proc/$holder/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && break
	sleep 0.1
done
[ "$(readlink "/proc/$holder/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || al_fail "no private mount namespace"
NS=(nsenter -t "$holder" -m --)
"${NS[@]}" mount -t tmpfs -o "size=32m,mode=0755,uid=$AL_CALLER_UID,gid=$AL_CALLER_GID" airlock-test "$mnt" ||
	al_fail "cannot mount a tmpfs in the test's namespace"
grep -q " $mnt " /proc/self/mountinfo && al_fail "the test's tmpfs is visible outside its namespace"
state="$mnt/state"
in_ns() { "${NS[@]}" "${AL_SETPRIV[@]}" "$@"; } # a command in the namespace, as the server's user

start() {
	rm -f "$dir/serve.port"
	local saved=("${AL_SETPRIV[@]}")
	AL_SETPRIV=("${NS[@]}" "${AL_SETPRIV[@]}")
	al_serve_start "$dir" --config "$confdir/full.yaml" --audit "$dir/audit.jsonl" --state-dir "$state"
	AL_SETPRIV=("${saved[@]}")
}
run() { # ID COMMAND
	local body
	body=$(python3 -c 'import json,sys; print(json.dumps({"language": "shell", "code": sys.argv[1], "fresh": True}))' "$2")
	al_api POST "/v1/sandboxes/$1/exec" -d "$body"
	[ "$CODE" = 200 ] || al_fail "exec in $1: HTTP $CODE: $BODY"
}
create() { # DISK_MB: the new sandbox's id in SB
	al_api POST /v1/sandboxes -d "{\"limits\": {\"disk_mb\": $1}}"
	[ "$CODE" = 201 ] || al_fail "create with disk_mb $1: HTTP $CODE: $BODY"
	SB=$(al_jget 'd["sandbox_id"]')
}
free_mib() { in_ns df -B1M --output=avail "$mnt" | tail -n1 | tr -d ' '; }
# Everything the state directory holds but the filler: each entry's path, type and size. A
# destroyed sandbox's or a refused layer's state is emptied beside (.gone-*) on a thread of its
# own: waited for, so that only what stays is compared.
kept() {
	for _ in $(seq 50); do
		in_ns find "$state" -maxdepth 1 -name '.gone-*' | grep -q . || break
		sleep 0.1
	done
	in_ns find "$state" -mindepth 1 ! -name filler ! -name lock -printf '%P %y %s\n' | LC_ALL=C sort
}

start
al_assert_eq "$(in_ns stat -f -c %T "$state")" tmpfs "the state directory's filesystem"

# ---- the room counted: a disk limit beside the others' promises, a layer's shared files ----------
create 8
a=$SB
run "$a" 'head -c 6000000 /dev/urandom >big'
al_api POST "/v1/sandboxes/$a/snapshots" -d '{"name": "a"}'
al_assert_eq "$CODE" 201 "a snapshot of a"
snap=$(al_jget 'd["snapshot_id"]')
# A call after it syncs a again: its big file, unchanged, is still the layer's too.
run "$a" 'echo small >small'
f=$(free_mib)
al_log "free after a's 6 MB and its snapshot: $f MiB"
# a's 6 MB are the snapshot's layer's too: a may still write its whole 8 MiB anew, so the room
# left for another is the free space less 8 MiB, not less 2.
al_api POST /v1/sandboxes -d "{\"limits\": {\"disk_mb\": $((f - 8 + 2))}}"
al_assert_eq "$CODE" 507 "a create that fits only if a's shared files were counted as written"
al_assert_contains "$BODY" "MiB free" "... says why"
create $((f - 8 - 2))
b=$SB
# And it holds: a rewrites its file (new room) and grows to its limit; b fills its own.
run "$a" 'rm big; head -c 7500000 /dev/urandom >big2; echo done'
run "$b" "head -c $(((f - 8 - 3) * 1048576)) /dev/urandom >fill; echo done"
al_assert_eq "$(grep -c "No space left" "$dir/serve.err" || true)" 0 "syncs that found no room"
al_api DELETE "/v1/sandboxes/$b"
al_pass "the room for a disk limit counts the others' promises and the files they share with a layer"

# ---- filled: creates, forks and snapshots refused, nothing half-written -------------------------
before=$(kept)
in_ns sh -c "head -c 64m /dev/zero >'$state/filler'" 2>/dev/null || true
al_assert_eq "$(free_mib)" 0 "free space once filled"
al_api POST /v1/sandboxes -d '{"limits": {"disk_mb": 1}}'
al_assert_eq "$CODE" 507 "a create on a full state directory"
al_assert_contains "$BODY" "state directory $state has 0 MiB free" "... says why"
al_api POST "/v1/sandboxes/$a/fork" -d '{"count": 1}'
al_assert_eq "$CODE" 507 "a fork on a full state directory"
al_assert_contains "$BODY" "has 0 MiB free, and this fork (its children's disk limits) needs 8 MiB" "... says why"
run "$a" 'echo changed >note'
al_api POST "/v1/sandboxes/$a/snapshots" -d '{"name": "full"}'
al_assert_eq "$CODE" 507 "a snapshot on a full state directory"
al_assert_contains "$BODY" "this snapshot (its record and directories) needs 1 MiB" "... says why"
al_api POST /v1/sandboxes -d "{\"snapshot\": \"$snap\"}"
al_assert_eq "$CODE" 507 "a create from a snapshot on a full state directory"
# A write a full state directory cannot keep is answered so, not as kept; a pause to disk, which
# would release what is not on disk, is refused and a stays as it was.
al_api PUT "/v1/sandboxes/$a/files/unkept.txt" --data-binary "$(head -c 60000 /dev/urandom | base64 -w0)"
al_assert_eq "$CODE" 507 "a file write the full state directory cannot keep"
al_assert_contains "$BODY" "could not be kept in the state directory" "... says so"
# An exec's changes the same: it ran (its output is there), and its result says they are not kept.
run "$a" 'head -c 200000 /dev/urandom >unkept.bin && echo ran'
BODY=$(printf '%s\n' "$BODY" | grep -v '^$' | tail -n1) # the exec's last NDJSON line: its result
al_assert_eq "$(al_jget 'd["result"]["stdout"]')" ran "an exec on a full state directory"
al_assert_contains "$(al_jget 'd["result"].get("not_kept")')" "could not be kept in the state directory" "... its result says its changes are not kept"
al_api POST "/v1/sandboxes/$a/pause?to_disk=true"
al_assert_eq "$CODE" 507 "a pause to disk on a full state directory"
al_assert_contains "$BODY" "was not paused to disk: its files could not be kept" "... says why"
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$(al_jget 'd["state"]')" running "a after the refused pause to disk"
al_api GET /v1/sandboxes
al_assert_eq "$(al_jget '[s["sandbox_id"] for s in d["sandboxes"]]')" "['$a']" "the sandboxes after the refusals"
al_api GET /v1/snapshots
al_assert_eq "$(al_jget '[s["snapshot_id"] for s in d["snapshots"]]')" "['$snap']" "the snapshots after the refusals"
after=$(kept)
# a's note may or may not have found room in its mirror; all else is as it was.
al_assert_eq "$(printf '%s\n' "$after" | grep -v -e '/files/note ' -e '/files/unkept.txt ' -e '/files/unkept.bin ')" "$before" "the state directory after the refusals"
al_assert_eq "$(in_ns find "$state" -name '*.tmp' | wc -l)" 0 "temporary records left"
al_pass "on a full state directory creates, forks and snapshots are refused with 507 saying why, and nothing is half-written"

# ---- freed: each works again --------------------------------------------------------------------
in_ns rm "$state/filler"
run "$a" 'cat note'
in_ns test -s "$state/$a/files/unkept.txt" || al_fail "the write refused as unkept is not on disk after a later call"
create 1
c=$SB
run "$c" 'echo c >c.txt'
al_api POST "/v1/sandboxes/$c/snapshots" -d '{"name": "c"}'
al_assert_eq "$CODE" 201 "a snapshot once space is freed"
al_api POST "/v1/sandboxes/$c/fork" -d '{"count": 1}'
al_assert_eq "$CODE" 200 "a fork once space is freed"
al_api POST /v1/sandboxes -d "{\"snapshot\": \"$snap\", \"limits\": {\"disk_mb\": 8}}"
al_assert_eq "$CODE" 201 "a create from a snapshot once space is freed"
al_pass "once space is freed, creates, snapshots and forks work again"
