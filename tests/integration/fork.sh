#!/usr/bin/env bash
# fork.sh — forks (issue 32), judged from outside with curl and from inside the sandboxes: a fork
# makes count new sandboxes of the caller's, each with the parent's files as they were (a tree of
# files, a big file byte for byte, a mode, a link that points outside kept as a link, never
# followed), the parent's metadata unless new labels are given; from then on parent and children
# diverge (a write in one is seen in no other); the children are kept on disk like any sandbox
# (a restart brings them back) and outlive a destroy of the parent; another principal's fork is
# 404; a bad count is refused; a fork past the quota makes nothing, and says which quota; an agent
# forks its MCP session's own sandbox through the official MCP SDK.
# shellcheck disable=SC2153 # CODE is al_api's (tests/lib.sh), not a misspelt code
: "${AL_GUARD_TIMEOUT:=270}" # several servers, restarts and a load of three clients (CTest allows 300s)
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
state="$dir/state"
al_serve_config "$confdir/fork.yaml" 'server:\n  max_lifetime: 1h\n  quota:\n    sandboxes: 6\n'
al_serve_tokens "$dir/serve.token"
bob=$AL_BOB
start() {
	rm -f "$dir/serve.port"
	al_serve_start "$dir" --config "$confdir/fork.yaml" --audit "$dir/audit.jsonl" --state-dir "$state"
	url=$AL_SERVE_URL
}
# What a sandbox's files are: every path with its type, mode and content digest, and the link.
tree='cd /workspace && find . -path ./.airlock -prune -o -printf "%p %y %m %l\n" | LC_ALL=C sort &&
	find . -path ./.airlock -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum'

start
al_api POST /v1/sandboxes -d '{"metadata": {"app": "fork"}, "lifetime": 600}'
[ "$CODE" = 201 ] || al_fail "create: HTTP $CODE: $BODY"
parent=$(al_jget 'd["sandbox_id"]')
al_api_sh "$parent" 'mkdir d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 && for i in $(seq 1 200); do echo "file $i" >d$((i % 10))/f$i; done
	head -c 5000000 /dev/urandom >big && chmod 0640 big && ln -s /etc/hostname outside && echo base >shared'
al_api_sh "$parent" "$tree"
before=$OUT
[ "$(printf '%s\n' "$before" | wc -l)" -ge 410 ] || al_fail "the parent's tree is short: $before"

al_api POST "/v1/sandboxes/$parent/fork" -d '{"count": 2}'
[ "$CODE" = 200 ] || al_fail "fork: HTTP $CODE: $BODY"
kids=$(al_jget '" ".join(c["sandbox_id"] for c in d["sandboxes"])')
read -r k1 k2 <<<"$kids"
[ -n "$k2" ] && [ "$k1" != "$k2" ] && [ "$k1" != "$parent" ] || al_fail "fork did not name two new sandboxes: $BODY"
# Kept sandboxes are forked without a copy: the children stand on one frozen layer of the parent's.
al_assert_eq "$(al_jget 'd["sandbox_id"], d["entries"] > 200, d["bytes"], d["layered"]')" "('$parent', True, 0, True)" "the fork's answer"
for k in $k1 $k2; do
	al_api_sh "$k" "$tree"
	al_assert_eq "$OUT" "$before" "the files of child $k"
	al_api GET "/v1/sandboxes/$k"
	al_assert_eq "$(al_jget 'd["metadata"]["app"]')" fork "child $k's labels, the parent's"
done
al_pass "a fork's children have the parent's files (tree, modes, a 5 MB file, a link kept as a link) and labels"

# From here on they diverge.
al_api_sh "$k1" 'echo one >shared; echo new >only-k1; rm d1/f1'
al_api_sh "$parent" 'echo parent >shared; chmod 0600 d2/f2; echo more >>d3/f3' # in the mirror the children share
al_api_sh "$k2" 'cat shared; ls only-k1 2>&1 >/dev/null | grep -c "No such"; cat d1/f1'
al_assert_eq "$OUT" "base
1
file 1" "child 2 after writes in child 1 and in the parent"
al_api_sh "$parent" 'cat shared; [ -e only-k1 ] && echo leaked; cat d1/f1'
al_assert_eq "$OUT" "parent
file 1" "the parent after writes in child 1"
al_api_sh "$k1" 'cat shared only-k1'
al_assert_eq "$OUT" "one
new" "child 1 keeps its own writes"
al_pass "parent and children diverge: a write in one is seen in no other"

# Labels and lifetime of the children may be given; another principal cannot fork; bad counts.
al_api POST "/v1/sandboxes/$parent/fork" -d '{"metadata": {"branch": "b"}, "lifetime": 30}'
[ "$CODE" = 200 ] || al_fail "fork with labels: HTTP $CODE: $BODY"
k3=$(al_jget 'd["sandboxes"][0]["sandbox_id"]')
al_api GET "/v1/sandboxes/$k3"
al_assert_eq "$(al_jget 'sorted(d["metadata"].items())')" "[('branch', 'b')]" "a child's own labels"
code=$(curl -q -sS -m 30 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $bob" "$url/v1/sandboxes/$parent/fork" -d '{}') || true
al_assert_eq "$code" 404 "bob's fork of alice's sandbox"
for bad in '{"count": 0}' '{"count": 17}' '{"count": "two"}' '{"color": 1}'; do
	al_api POST "/v1/sandboxes/$parent/fork" -d "$bad"
	al_assert_eq "$CODE" 400 "fork $bad"
done
# The quota (6 sandboxes): alice holds 4; a fork of 3 is refused whole (nothing made), one of 2 is not.
al_api POST "/v1/sandboxes/$parent/fork" -d '{"count": 3}'
al_assert_eq "$CODE" 429 "a fork past the quota"
al_assert_contains "$BODY" "server.quota.sandboxes" "... names the quota"
al_api GET /v1/sandboxes
al_assert_eq "$(al_jget 'len(d["sandboxes"])')" 4 "alice's sandboxes after the fork past the quota"
al_api POST "/v1/sandboxes/$parent/fork" -d '{"count": 2}'
al_assert_eq "$CODE" 200 "a fork up to the quota"
al_api GET /v1/sandboxes
al_assert_eq "$(al_jget 'len(d["sandboxes"])')" 6 "alice's sandboxes after the fork up to the quota"
al_pass "a fork takes labels and a lifetime; bob gets 404; bad counts are refused; a fork past the quota makes nothing"

# Children outlive their parent and a restart of the server.
al_api DELETE "/v1/sandboxes/$parent"
[ "$CODE" = 200 ] || al_fail "destroy the parent: HTTP $CODE: $BODY"
kill -TERM "$AL_SERVE_PID"
for _ in $(seq 100); do
	kill -0 "$AL_SERVE_PID" 2>/dev/null || break
	sleep 0.1
done
start
al_api_sh "$k2" "$tree"
al_assert_eq "$OUT" "$before" "child 2 after its parent's destroy and a restart"
al_api_sh "$k1" 'cat shared only-k1'
al_assert_eq "$OUT" "one
new" "child 1 after a restart"
al_api_sh "$k1" '[ -e d1/f1 ] && echo back || echo gone'
al_assert_eq "$OUT" gone "child 1's deletion of a file of the layer, after a restart"
al_pass "children outlive the parent's destroy and a restart"

# After a SIGKILL of the server, every call that had returned is still there: a new file, a
# directory of the layer deleted and made again (the old entries stay hidden), a mode.
al_api_sh "$k1" 'echo killed >after-kill; rm -r d4; mkdir d4; echo fresh >d4/new; chmod 0700 d5'
kill -KILL "$AL_SERVE_PID"
for _ in $(seq 100); do
	kill -0 "$AL_SERVE_PID" 2>/dev/null || break
	sleep 0.1
done
start
al_api_sh "$k1" 'cat after-kill; ls d4; stat -c %a d5; cat shared'
al_assert_eq "$OUT" "killed
new
700
one" "child 1 after a SIGKILL of the server"
al_api_sh "$k2" 'cat d4/f4; ls d4 | wc -l; stat -c %a d5'
al_assert_eq "$OUT" "file 4
20
755" "child 2, beside child 1's changes, after a SIGKILL"
al_pass "a layered sandbox's changes survive a SIGKILL of the server"

# The layers go with the last sandbox standing on them.
al_api GET /v1/sandboxes
for k in $(al_jget '" ".join(x["sandbox_id"] for x in d["sandboxes"])'); do al_api DELETE "/v1/sandboxes/$k"; done
[ -d "$state/.layers" ] || al_fail "no layers were kept in $state/.layers"
for _ in $(seq 50); do
	[ -z "$(ls -A "$state/.layers")" ] && break
	sleep 0.1
done
al_assert_eq "$(ls -A "$state/.layers")" "" "the layers left once every sandbox is destroyed"
al_pass "destroying the last sandbox standing on a layer removes the layer"

# The same through the official MCP SDK (tests/mcp/sdk/fork.mjs): an agent forks its session's sandbox.
al_mcp_sdk fork.mjs "fork"
al_pass "an agent forks its session's sandbox through the official MCP SDK"
