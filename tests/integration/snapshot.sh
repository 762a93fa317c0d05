#!/usr/bin/env bash
# snapshot.sh — snapshots (issue 32), judged from outside with curl and from inside the sandboxes:
# a snapshot keeps a sandbox's files as they were (written on afterwards, a sandbox made from it
# sees the old state only: a changed file, a new file, a removed one); two sandboxes from one
# snapshot diverge; a snapshot outlives the sandbox it was taken of and a SIGKILL of the server
# right after its answer; another principal gets 404 for every snapshot call; the quotas (count and
# bytes) refuse; deleting the last snapshot and sandbox on a layer leaves the state directory's
# .layers/ and .snapshots/ empty; a server without a state directory refuses, and makes nothing;
# an agent snapshots its MCP session's own sandbox through the official MCP SDK.
: "${AL_GUARD_TIMEOUT:=270}" # three servers, two restarts (CTest allows 300s)
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
state="$dir/state"
al_serve_config "$confdir/snap.yaml" 'server:\n  max_lifetime: 1h\n  quota:\n    snapshots: 3\n    snapshot_bytes: 8M\n'
# E2B's keys are "e2b_" and hex (docs/e2b.md): carol's, for the E2B SDK.
carol=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
al_serve_tokens "$dir/serve.token" "carol $carol"
bob=$AL_BOB
start() {
	rm -f "$dir/serve.port"
	al_serve_start "$dir" --config "$confdir/snap.yaml" --audit "$dir/audit.jsonl" --state-dir "$state"
	url=$AL_SERVE_URL
}
stop() { # SIGNAL
	kill "-$1" "$AL_SERVE_PID"
	for _ in $(seq 100); do
		kill -0 "$AL_SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
}
create() { # BODY: the new sandbox's id in SB
	al_api POST /v1/sandboxes -d "$1"
	[ "$CODE" = 201 ] || al_fail "create $1: HTTP $CODE: $BODY"
	SB=$(al_jget 'd["sandbox_id"]')
}
snapshot() { # ID BODY: the snapshot's id in SNAP
	al_api POST "/v1/sandboxes/$1/snapshots" -d "$2"
	[ "$CODE" = 201 ] || al_fail "snapshot of $1: HTTP $CODE: $BODY"
	SNAP=$(al_jget 'd["snapshot_id"]')
}
# What a sandbox's files are: every path with its type and mode, and each file's digest.
tree='cd /workspace && find . -path ./.airlock -prune -o -printf "%p %y %m %l\n" | LC_ALL=C sort &&
	find . -path ./.airlock -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum'

start
create '{"metadata": {"app": "snap"}, "lifetime": 600}'
a=$SB
al_api_sh "$a" 'mkdir -p src/lib && for i in $(seq 1 50); do echo "line $i" >src/lib/m$i.py; done
	head -c 5000000 /dev/urandom >big && chmod 0640 big && ln -s /etc/hostname outside && echo v1 >version && echo doomed >gone'
al_api_sh "$a" "$tree"
before=$OUT
snapshot "$a" '{"name": "first", "metadata": {"stage": "one"}}'
s1=$SNAP
al_assert_eq "$(al_jget 'd["id"] == d["snapshot_id"], d["snapshot_id"].startswith("snap-"), d["name"], d["sandbox_id"], d["bytes"] >= 5000000, d["metadata"], bool(d["created_at"])')" \
	"(True, True, 'first', '$a', True, {'stage': 'one'}, True)" "the snapshot's answer"
al_api_sh "$a" 'echo v2 >version; echo new >added; rm gone; echo more >>src/lib/m1.py'

create "{\"snapshot\": \"$s1\"}"
b=$SB
create "{\"snapshot\": \"$s1\", \"metadata\": {\"copy\": \"c\"}}"
c=$SB
for k in $b $c; do
	al_api_sh "$k" "$tree"
	al_assert_eq "$OUT" "$before" "the files of $k, made from the snapshot"
done
al_api GET "/v1/sandboxes/$b"
al_assert_eq "$(al_jget 'd["profile"]')" untrusted-code-read "a sandbox from a snapshot has its profile"
al_api_sh "$a" 'cat version added; [ -e gone ] || echo removed'
al_assert_eq "$OUT" "v2
new
removed" "the snapshotted sandbox keeps what it wrote after the snapshot"
al_pass "a sandbox made from a snapshot has the files as they were (tree, modes, a 5 MB file, a link), not what was written since"

al_api_sh "$b" 'echo b >version; echo only-b >mine'
al_api_sh "$c" 'cat version; [ -e mine ] && echo leaked; echo c >version; rm big'
al_assert_eq "$OUT" "v1" "c after b's writes"
al_api_sh "$b" 'cat version; [ -e big ] && echo big'
al_assert_eq "$OUT" "b
big" "b after c's writes"
al_pass "two sandboxes from one snapshot diverge"

al_api GET /v1/snapshots
al_assert_eq "$(al_jget '[(s["snapshot_id"], s["name"]) for s in d["snapshots"]]')" "[('$s1', 'first')]" "alice's snapshots"
al_api GET "/v1/snapshots/$s1"
al_assert_eq "$CODE $(al_jget 'd["snapshot_id"], d["sandbox_id"]')" "200 ('$s1', '$a')" "one snapshot's info"
al_api_as "$bob" GET /v1/snapshots
al_assert_eq "$CODE $(al_jget 'd["snapshots"]')" "200 []" "bob's snapshots"
for call in "GET /v1/snapshots/$s1" "DELETE /v1/snapshots/$s1" "POST /v1/sandboxes/$a/snapshots"; do
	read -r m p <<<"$call"
	if [ "$m" = POST ]; then al_api_as "$bob" "$m" "$p" -d '{}'; else al_api_as "$bob" "$m" "$p"; fi
	al_assert_eq "$CODE" 404 "bob's $call"
done
al_api_as "$bob" POST /v1/sandboxes -d "{\"snapshot\": \"$s1\"}"
al_assert_eq "$CODE" 404 "bob's create from alice's snapshot"
al_assert_contains "$BODY" "no snapshot" "... says why"
al_api GET "/v1/snapshots/snap-0000000000000000"
al_assert_eq "$CODE" 404 "an unknown snapshot"
for bad in '{"name": ""}' '{"name": 7}' '{"colour": 1}' '{"metadata": {"k": 1}}'; do
	al_api POST "/v1/sandboxes/$a/snapshots" -d "$bad"
	al_assert_eq "$CODE" 400 "snapshot $bad"
done
al_pass "snapshots are listed and read by their owner; another principal gets 404; bad input is 400"

# A snapshot outlives its sandbox, and a SIGKILL of the server right after its answer.
al_api DELETE "/v1/sandboxes/$a"
[ "$CODE" = 200 ] || al_fail "destroy a: HTTP $CODE: $BODY"
snapshot "$b" '{"name": "b-state"}'
s2=$SNAP
stop KILL
start
al_api GET /v1/snapshots
al_assert_eq "$(al_jget 'sorted(s["snapshot_id"] for s in d["snapshots"])')" "$(python3 -c "print(sorted(['$s1', '$s2']))")" "alice's snapshots after a SIGKILL"
create "{\"snapshot\": \"$s1\"}"
d1=$SB
al_api_sh "$d1" "$tree"
al_assert_eq "$OUT" "$before" "a sandbox from the snapshot of the destroyed sandbox, after a SIGKILL"
create "{\"snapshot\": \"$s2\"}"
d2=$SB
al_api_sh "$d2" 'cat version mine; [ -e big ] && echo big'
al_assert_eq "$OUT" "b
only-b
big" "a sandbox from the snapshot taken just before the SIGKILL"
al_pass "a snapshot outlives its sandbox's destroy and a SIGKILL of the server right after its answer"

# The quotas: 8M of snapshots' bytes (s1 holds 5 MB), 3 snapshots.
create '{}'
e=$SB
al_api_sh "$e" 'head -c 4000000 /dev/urandom >more'
al_api POST "/v1/sandboxes/$e/snapshots" -d '{}'
al_assert_eq "$CODE" 429 "a snapshot past server.quota.snapshot_bytes"
al_assert_contains "$BODY" "snapshot_bytes" "... names the quota"
snapshot "$c" '{}'
s3=$SNAP
al_api POST "/v1/sandboxes/$c/snapshots" -d '{}'
al_assert_eq "$CODE" 429 "a fourth snapshot"
al_assert_contains "$BODY" "server.quota.snapshots" "... names the quota"
al_api GET /v1/snapshots
al_assert_eq "$(al_jget 'len(d["snapshots"])')" 3 "alice's snapshots after the refusals"
al_assert_eq "$(find "$state/.snapshots" -name '*.json' | wc -l)" 3 "records in the state directory after the refusals"
al_pass "the quotas on snapshots and on their bytes refuse, and keep nothing"

# A graceful restart keeps them too; deleting the last snapshot and sandbox on a layer removes it.
stop TERM
start
al_api GET /v1/sandboxes
for k in $(al_jget '" ".join(x["sandbox_id"] for x in d["sandboxes"])'); do al_api DELETE "/v1/sandboxes/$k"; done
[ -n "$(ls -A "$state/.layers")" ] || al_fail "the snapshots' layers went with the sandboxes"
create "{\"snapshot\": \"$s3\"}"
al_api_sh "$SB" 'cat version; [ -e big ] || echo no-big'
al_assert_eq "$OUT" "c
no-big" "a sandbox from a snapshot after every sandbox was destroyed and a restart"
for s in $s1 $s2 $s3; do
	al_api DELETE "/v1/snapshots/$s"
	al_assert_eq "$CODE $(al_jget 'd["deleted"]')" "200 True" "delete $s"
done
al_api DELETE "/v1/snapshots/$s1"
al_assert_eq "$CODE" 404 "a second delete"
[ -n "$(ls -A "$state/.layers")" ] || al_fail "the layers went while a sandbox stood on them"
al_api_sh "$SB" 'cat version'
al_assert_eq "$OUT" c "a sandbox from a deleted snapshot keeps its files"
al_api DELETE "/v1/sandboxes/$SB"
for _ in $(seq 50); do
	[ -z "$(ls -A "$state/.layers")" ] && break
	sleep 0.1
done
al_assert_eq "$(ls -A "$state/.layers")" "" "the layers left once every snapshot and sandbox is gone"
al_assert_eq "$(ls -A "$state/.snapshots")" "" "the snapshots' records left"
al_pass "deleting the last snapshot and sandbox on a layer removes it"

# The same through the official MCP SDK (tests/mcp/sdk/snapshot.mjs): an agent snapshots its session's sandbox.
al_mcp_sdk snapshot.mjs "snapshots"
al_pass "an agent snapshots its session's sandbox and makes a sandbox from it through the official MCP SDK"

# E2B's snapshot calls through its official SDK (tests/e2b/snapshot.mjs), mapped onto the same tools.
e2b="$AL_SRC/tests/e2b"
[ -d "$e2b/node_modules/e2b" ] || al_fail "the E2B SDK is not installed in $e2b (scripts/deps.sh runs npm ci)"
out=$(cd "$e2b" && E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_API_KEY=$carol timeout 200 node snapshot.mjs 2>"$dir/e2b.err") ||
	{ printf '%s\n' "$out"; cat "$dir/e2b.err" "$dir/serve.err" >&2; al_fail "snapshots through the E2B SDK (see above)"; }
al_log "$out"
al_assert_contains "$out" "ok: all" "the E2B SDK's snapshot calls"
stop TERM

# Without a state directory there is nowhere to keep one: refused, saying why, and nothing made.
start_none() {
	rm -f "$dir/serve.port"
	al_serve_start "$dir" --config "$confdir/snap.yaml" --audit "$dir/audit2.jsonl" --state-dir none
	url=$AL_SERVE_URL
}
start_none
create '{}'
al_api POST "/v1/sandboxes/$SB/snapshots" -d '{"name": "x"}'
al_assert_eq "$CODE" 501 "a snapshot without a state directory"
al_assert_contains "$BODY" "--state-dir none" "... says why"
al_api POST /v1/sandboxes -d '{"snapshot": "snap-0000000000000000"}'
al_assert_eq "$CODE" 501 "a create from a snapshot without a state directory"
al_api GET /v1/sandboxes
al_assert_eq "$(al_jget 'len(d["sandboxes"])')" 1 "sandboxes after the refusals"
al_api GET /v1/snapshots
al_assert_eq "$CODE $(al_jget 'd["snapshots"]')" "200 []" "snapshots without a state directory"
al_pass "without a state directory, snapshots are refused with 501 naming why, and nothing is made"
