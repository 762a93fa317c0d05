#!/usr/bin/env bash
# quota.sh — the quota on what a principal's kept sandboxes may store (issue 32), judged from
# outside with curl and the state directory on disk: server.quota.sandbox_bytes counts the disk
# limits of a principal's sandboxes together (each a hard limit, so what they keep stays within
# it whatever they write); a create past it (with a disk limit of its own, the default one that a
# spare would have, from a snapshot) and a fork past it are refused with 429 naming the quota,
# with nothing made: no sandbox listed, nothing new in the state directory; another principal has
# a quota of its own; once one is destroyed, the same calls succeed; a restart brings the kept
# ones back within it.
: "${AL_GUARD_TIMEOUT:=200}"
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
state="$dir/state"
# A spare (its disk limit the default 1 GiB) that a plain create would claim.
al_serve_config "$confdir/quota.yaml" 'server:\n  max_lifetime: 1h\n  pool: [{profile: untrusted-code-read, count: 1}]\n  quota:\n    sandboxes: 8\n    sandbox_bytes: 40M\n'
al_serve_tokens "$dir/serve.token"
bob=$AL_BOB
start() {
	rm -f "$dir/serve.port"
	al_serve_start "$dir" --config "$confdir/quota.yaml" --audit "$dir/audit.jsonl" --state-dir "$state"
}
create() { # BODY: the new sandbox's id in SB
	al_api POST /v1/sandboxes -d "$1"
	[ "$CODE" = 201 ] || al_fail "create $1: HTTP $CODE: $BODY"
	SB=$(al_jget 'd["sandbox_id"]')
}
# What the state directory keeps: the sandboxes' directories, the layers and snapshots' records.
kept() { find "$state" -mindepth 1 -maxdepth 2 ! -name lock -printf '%P\n' | LC_ALL=C sort; }
mine() { # the number of alice's sandboxes
	al_api GET /v1/sandboxes
	al_jget 'len(d["sandboxes"])'
}
refused() { # WHAT: the last call was refused for the bytes quota, and nothing was made
	al_assert_eq "$CODE" 429 "$1"
	al_assert_contains "$BODY" "server.quota.sandbox_bytes" "$1: the refusal names the quota"
	al_assert_eq "$(kept)" "$before" "$1: the state directory afterwards"
	al_assert_eq "$(mine)" "$had" "$1: alice's sandboxes afterwards"
}

start
create '{"limits": {"disk_mb": 16}}'
a=$SB
create '{"limits": {"disk_mb": 16}}'
b=$SB
before=$(kept)
had=$(mine)
al_assert_eq "$had" 2 "alice's sandboxes"
# 32 MiB of 40 held: 16 more is past it.
al_api POST /v1/sandboxes -d '{"limits": {"disk_mb": 16}}'
refused "a create past server.quota.sandbox_bytes"
al_assert_contains "$BODY" "alice" "... names the principal"
# A plain create would claim the spare (1 GiB of disk): past the quota too, and the spare stays one.
al_api POST /v1/sandboxes -d '{}'
refused "a plain create (a spare's default disk limit) past the quota"
al_api POST "/v1/sandboxes/$a/fork" -d '{"count": 1}'
refused "a fork past the quota"
# 8 MiB more fits.
create '{"limits": {"disk_mb": 8}}'
c=$SB
al_pass "creates and forks past server.quota.sandbox_bytes are refused with 429, naming it, and make nothing"

# Per principal: bob's own 40 MiB.
al_api_as "$bob" POST /v1/sandboxes -d '{"limits": {"disk_mb": 32}}'
al_assert_eq "$CODE" 201 "bob's create beside alice's full quota"
al_pass "another principal's quota is its own"

# A snapshot of a (16 MiB of disk) is kept; a sandbox made from it would have 16 MiB: refused.
al_api POST "/v1/sandboxes/$a/snapshots" -d '{"name": "a"}'
al_assert_eq "$CODE" 201 "a snapshot of a"
snap=$(al_jget 'd["snapshot_id"]')
before=$(kept)
had=$(mine)
al_api POST /v1/sandboxes -d "{\"snapshot\": \"$snap\"}"
refused "a create from a snapshot past the quota"

# Room again once one is destroyed: the same calls succeed.
al_api DELETE "/v1/sandboxes/$b"
al_assert_eq "$CODE" 200 "destroy b"
create "{\"snapshot\": \"$snap\"}"
al_api DELETE "/v1/sandboxes/$SB"
al_api DELETE "/v1/sandboxes/$c"
al_api POST "/v1/sandboxes/$a/fork" -d '{"count": 1}'
al_assert_eq "$CODE" 200 "a fork within the quota"
al_pass "within the quota again after a destroy: a create from a snapshot and a fork are made"

# Kept sandboxes come back after a restart, and count against the quota as before.
al_serve_stop TERM
start
al_assert_eq "$(mine)" 2 "alice's sandboxes after a restart"
before=$(kept)
had=2
al_api POST /v1/sandboxes -d '{"limits": {"disk_mb": 16}}'
refused "a create past the quota after a restart"
al_serve_stop TERM
al_pass "after a restart the kept sandboxes count against server.quota.sandbox_bytes"
