#!/usr/bin/env bash
# lifetime.sh — a sandbox's own lifetime and metadata on airlock serve (issue 31), judged from
# outside with curl: create with a lifetime and labels; GET /v1/sandboxes/{id} shows when it ends
# and its labels; extending keeps it past its first end, shortening ends it soon; an exec and a cell
# running when the lifetime ends come back at once as a kill with the lifetime named in words, and
# the next call is told the same; the list filters by metadata (E2B's encoding and metadata.KEY);
# another principal gets 404 for GET and timeout and lists none of them; bad labels and lifetimes
# are refused with 400 naming the problem, creating nothing; code_set_sandbox_timeout over MCP; a
# sandbox destroyed by its owner or by a reviewer is named so to its owner's next call.
# shellcheck disable=SC2153 # CODE is al_api's (tests/lib.sh), not a misspelt code
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755) # a config's directory may be writable by its owner only
m=$(al_marker)
al_serve_config "$confdir/life.yaml" 'server:\n  max_lifetime: 1h\n  idle_ttl: 10m\n'
# Two clients: alice (the first line: every plain curl below sends her token) and bob.
al_serve_tokens "$dir/serve.token"
alice=$AL_ALICE
bob=$AL_BOB
reviewer=$(al_token_file "$dir/reviewer.token" reviewer)
al_serve_start "$dir" --config "$confdir/life.yaml" --audit "$dir/audit.jsonl" --approver-token-file "$dir/reviewer.token"
[ "$AL_TOKEN" = "$alice" ] || al_fail "the plain curls would not be alice's"
url=$AL_SERVE_URL

get() { al_json_get "$BODY" "$1"; }
# seconds_between T1 T2: T2 - T1 of two RFC 3339 times, in seconds (with milliseconds).
seconds_between() {
	"$AL_PY" -c 'import datetime, sys
p = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
print("%.3f" % (p(sys.argv[2]) - p(sys.argv[1])).total_seconds())' "$1" "$2"
}
# within X LO HI: LO <= X <= HI (decimals).
within() { "$AL_PY" -c 'import sys; x, lo, hi = map(float, sys.argv[1:]); sys.exit(not lo <= x <= hi)' "$@"; }
create() {
	al_api POST /v1/sandboxes -d "$1"
	al_assert_eq "$CODE" 201 "create $1: $BODY"
	SB=$(get sandbox_id)
}
count() {
	al_api GET /v1/sandboxes
	get sandboxes | "$AL_PY" -c 'import json, sys; print(len(json.load(sys.stdin)))'
}

# ---- create with a lifetime and labels; a held exec and a cell whose lifetime ends mid-way -------
create '{"lifetime": 6}'
c=$SB
create '{"lifetime": 7}'
d=$SB
t0=$(date +%s%N)
curl -sS -m 60 -X POST "$url/v1/sandboxes/$c/exec" -d "{\"command\": \"sh -c 'sleep 30' $m-exec\", \"fresh\": true}" \
	-o "$dir/exec.out" &
epid=$!
curl -sS -m 60 -X POST "$url/v1/sandboxes/$d/exec" -d '{"language": "python", "code": "import time\ntime.sleep(30)"}' \
	-o "$dir/cell.out" &
cpid=$!
create "{\"lifetime\": 10, \"metadata\": {\"app\": \"lt-$m\", \"team\": \"blue\", \"path/x.y_z-1\": \"h\u00e9llo w\"}}"
a=$SB
a_ends=$(get ends_at)
ta=$(date +%s%N)

al_api GET "/v1/sandboxes/$a"
al_assert_eq "$CODE" 200 "GET the sandbox's info: $BODY"
al_assert_eq "$(get id)/$(get state)/$(get network)/$(get processes)" "$a/running/none/0" "its id, state, network, processes"
label() { printf '%s' "$BODY" | "$AL_PY" -c 'import json, sys; print(json.load(sys.stdin)["metadata"][sys.argv[1]])' "$1"; }
al_assert_eq "$(label app)/$(label team)/$(label path/x.y_z-1)" "lt-$m/blue/héllo w" "its metadata"
al_assert_eq "$(get ends_at)" "$a_ends" "its ends_at is the create's"
within "$(seconds_between "$(get created_at)" "$(get ends_at)")" 9.999 10.001 ||
	al_fail "ends_at is not created_at + 10 s ($(get created_at), $(get ends_at))"
for k in profile image cpu_s memory_bytes peak_memory_bytes last_used_at; do
	get "$k" >/dev/null || al_fail "the info has no $k: $BODY"
done

# Extended to 30 s from now: alive after its first 10 s (a first lifetime long enough for the checks
# above on a loaded machine).
al_api POST "/v1/sandboxes/$a/timeout" -d '{"lifetime": 30}'
al_assert_eq "$CODE" 200 "extend the lifetime to 30 s: $BODY"
a_ends=$(get ends_at)
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$(get ends_at)" "$a_ends" "the info's ends_at after the extension"
within "$(seconds_between "$(get created_at)" "$a_ends")" 29 40 || al_fail "ends_at after the extension: $a_ends"

# ---- the list and its metadata filter --------------------------------------------------------------
create "{\"metadata\": {\"app\": \"lt-$m\", \"team\": \"red\"}}"
b=$SB
al_api GET "/v1/sandboxes/$b"
within "$(seconds_between "$(get created_at)" "$(get ends_at)")" 3599.9 3600.1 ||
	al_fail "without a lifetime, a sandbox ends at server.max_lifetime ($BODY)"
ids() { get sandboxes | "$AL_PY" -c 'import json, sys; print(" ".join(sorted(s["id"] for s in json.load(sys.stdin))))'; }
sorted() { printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }
al_api GET "/v1/sandboxes?metadata=app%3Dlt-$m%26team%3Dblue"
al_assert_eq "$CODE:$(ids)" "200:$a" "the list filtered by app and team (E2B's encoding)"
al_api GET "/v1/sandboxes?metadata=team%3Dh%25C3%25A9llo%2Bw"
al_assert_eq "$CODE:$(ids)" "200:" "a filter whose value no sandbox has"
al_api GET "/v1/sandboxes?metadata=path%252Fx.y_z-1%3Dh%25C3%25A9llo%2Bw"
al_assert_eq "$CODE:$(ids)" "200:$a" "a filter with an encoded key and value"
al_api GET "/v1/sandboxes?metadata.team=red"
al_assert_eq "$CODE:$(ids)" "200:$b" "the list filtered by metadata.team"
al_api GET "/v1/sandboxes?metadata.app=lt-$m"
al_assert_eq "$CODE:$(ids)" "200:$(sorted "$a" "$b")" "the list filtered by metadata.app"
al_api GET /v1/sandboxes
all=$(ids) # c and d may have ended by now
al_assert_contains "$all" "$a" "the unfiltered list"
al_assert_contains "$all" "$b" "the unfiltered list"
al_assert_eq "$(get sandboxes.0.state)" running "the list's entries carry the info's fields"
get sandboxes.0.metadata >/dev/null || al_fail "the list's entries carry metadata"
al_api GET "/v1/sandboxes?metadata=novalue"
al_assert_eq "$CODE" 400 "a filter that is not key=value"
al_assert_contains "$BODY" "key=value" "... says what it must be"

# ---- another principal: 404 as for an unknown id, and an empty list --------------------------------
al_api_as "$bob" GET "/v1/sandboxes/sb-not-$m"
unknown=$BODY
al_assert_eq "$CODE" 404 "bob GETs an id that never existed"
al_api_as "$bob" GET "/v1/sandboxes/$a"
al_assert_eq "$CODE" 404 "bob GETs alice's sandbox"
al_assert_eq "$(printf '%s' "$BODY" | sed "s/$a/ID/")" "$(printf '%s' "$unknown" | sed "s/sb-not-$m/ID/")" \
	"bob's answer for alice's sandbox is the answer for an unknown id"
al_api_as "$bob" POST "/v1/sandboxes/$a/timeout" -d '{"lifetime": 1}'
al_assert_eq "$CODE" 404 "bob sets the lifetime of alice's sandbox"
al_api_as "$bob" GET "/v1/sandboxes?metadata.app=lt-$m"
al_assert_eq "$CODE:$(ids)" "200:" "bob's list filtered by alice's labels"
al_api_as "$bob" GET /v1/sandboxes
al_assert_eq "$CODE:$(ids)" "200:" "bob's list"
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$(get ends_at)" "$a_ends" "alice's lifetime after bob's attempt"

# ---- the exec and the cell cut short by the lifetime -------------------------------------------------
wait "$epid" || true
wait "$cpid" || true
elapsed=$((($(date +%s%N) - t0) / 1000000))
# Not a timing bound: run to their end they would take 30 s; cut short by their sandboxes' ends they
# are over well before, however loaded the machine that ran every check above meanwhile.
[ "$elapsed" -lt 28000 ] || al_fail "the exec and the cell ended ${elapsed} ms after they began (their lifetimes were 6 and 7 s)"
r=$(tail -n1 "$dir/exec.out")
al_assert_eq "$(al_json_get "$r" result.status)/$(al_json_get "$r" result.signal)" signaled/9 "the exec's verdict: $r"
al_assert_eq "$(al_json_get "$r" result.error)" "sandbox $c reached its lifetime (6 s) and was destroyed while this call ran" \
	"the exec's error says why"
al_assert_eq "$(al_json_get "$r" result.sandbox_ended)" lifetime "the exec's sandbox_ended"
[ -z "$(al_marker_pids "$m-exec")" ] || al_fail "the exec's sleep outlived its sandbox"
r=$(tail -n1 "$dir/cell.out")
al_assert_eq "$(al_json_get "$r" result.status)/$(al_json_get "$r" result.cell.state)" signaled/lost "the cell's verdict: $r"
al_assert_eq "$(al_json_get "$r" result.error)" "sandbox $d reached its lifetime (7 s) and was destroyed while this call ran" \
	"the cell's error says why"
al_api POST "/v1/sandboxes/$c/exec" -d '{"command": "true"}'
al_assert_eq "$CODE" 404 "an exec after the lifetime"
al_assert_eq "$(get error)" "no sandbox \"$c\": it reached its lifetime (6 s) and was destroyed" "... is told why"
al_api GET "/v1/sandboxes/$d"
al_assert_eq "$CODE" 404 "GET after the lifetime"
al_assert_contains "$(get error)" "reached its lifetime (7 s)" "... is told why"
al_api_as "$bob" POST "/v1/sandboxes/$c/exec" -d '{"command": "true"}'
al_assert_eq "$CODE:$(get error)" "404:no sandbox \"$c\" (never created, destroyed, or expired)" \
	"bob is not told what became of alice's sandbox"

# ---- alive past its first lifetime; shortened, it ends soon ----------------------------------------
left=$((11000 - ($(date +%s%N) - ta) / 1000000))
[ "$left" -le 0 ] || sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
al_api GET "/v1/sandboxes/$a"
al_assert_eq "$CODE" 200 "the extended sandbox, 11 s after its creation (its first lifetime was 10 s)"
al_api POST "/v1/sandboxes/$a/timeout" -d '{"lifetime": 1}'
al_assert_eq "$CODE" 200 "shorten the lifetime to 1 s: $BODY"
for _ in $(seq 50); do
	al_api GET "/v1/sandboxes/$a"
	[ "$CODE" = 404 ] && break
	sleep 0.1
done
al_assert_eq "$CODE" 404 "the shortened sandbox, 5 s later"
al_assert_contains "$(get error)" "reached its lifetime (1 s)" "... is told why"

# ---- bad input: 400 naming the problem, nothing made -------------------------------------------------
before=$(count)
bad() { # BODY WORDS
	al_api POST /v1/sandboxes -d "$1"
	al_assert_eq "$CODE" 400 "create $1"
	al_assert_contains "$(get error)" "$2" "the refusal of $1"
}
bad '{"lifetime": 0}' "lifetime: must be greater than 0"
bad '{"lifetime": -5}' "lifetime: must be greater than 0"
bad '{"lifetime": 7200}' "above the server's max_lifetime (1h)"
bad '{"lifetime": 1e12}' "lifetime: must be at most"
bad '{"lifetime": "3"}' "lifetime: expected number"
bad '{"metadata": {"a b": "x"}}' 'key "a b"'
bad '{"metadata": {"": "x"}}' 'key "" must be at least 1'
bad "{\"metadata\": {\"$(printf 'k%.0s' $(seq 65))\": \"x\"}}" "must be at most 64 characters"
bad "{\"metadata\": {\"big\": \"$(printf 'v%.0s' $(seq 513))\"}}" "metadata.big: must be at most 512"
bad "{\"metadata\": {\"wide\": \"$(printf '\u00e9%.0s' $(seq 300))\"}}" 'the value of "wide" must be at most 512 bytes'
bad '{"metadata": {"n": 1}}' "metadata.n: expected string"
bad '{"metadata": {"z": "a\u0000b"}}' 'u0000 is not allowed' # the JSON API refuses NUL before any tool sees it
bad '{"metadata": ["x"]}' "metadata: expected object"
many=$("$AL_PY" -c 'import json; print(json.dumps({"metadata": {"k%d" % i: "v" for i in range(65)}}))')
bad "$many" "metadata: takes at most 64 properties"
al_assert_eq "$(count)" "$before" "no sandbox was made by the refused creates"
al_api POST "/v1/sandboxes/$b/timeout" -d '{"lifetime": 4000}'
al_assert_eq "$CODE" 400 "a timeout past the cap"
al_assert_contains "$(get error)" "would outlive the server's max_lifetime (1h from the sandbox's creation)" "... names the cap"
al_api POST "/v1/sandboxes/$b/timeout" -d '{"lifetime": 0}'
al_assert_eq "$CODE" 400 "a zero timeout"
al_api POST "/v1/sandboxes/$b/timeout" -d '{}'
al_assert_eq "$CODE" 400 "a timeout without lifetime"
al_assert_contains "$(get error)" "lifetime" "... names it"
al_api GET "/v1/sandboxes/$b"
within "$(seconds_between "$(get created_at)" "$(get ends_at)")" 3599.9 3600.1 || al_fail "a refused timeout changed the end"

# ---- MCP: code_set_sandbox_timeout ----------------------------------------------------------------
mcp() { # SESSION BODY: the JSON-RPC answer (the last data line of an SSE answer, or the JSON)
	curl -sS -m 60 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		${1:+-H "Mcp-Session-Id: $1"} -d "$2" -D "$dir/mcp.h" "$url/mcp" | sed -n 's/^data: //p;/^{/p' | tail -n1
}
mcp "" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lt","version":"1"}}}' >/dev/null
sid=$(tr -d '\r' <"$dir/mcp.h" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
[ -n "$sid" ] || al_fail "no MCP session"
mcp "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
r=$(mcp "$sid" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"code_set_sandbox_timeout\",\"arguments\":{\"sandbox_id\":\"$b\",\"lifetime\":60}}}")
al_assert_eq "$(al_json_get "$r" result.isError)/$(al_json_get "$r" result.structuredContent.sandbox_id)" "false/$b" "code_set_sandbox_timeout: $r"
al_api GET "/v1/sandboxes/$b"
al_assert_eq "$(get ends_at)" "$(al_json_get "$r" result.structuredContent.ends_at)" "the info's ends_at is the tool's"
within "$(seconds_between "$(get created_at)" "$(get ends_at)")" 59 90 || al_fail "ends_at after the MCP call: $BODY"
r=$(mcp "$sid" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"code_create_sandbox","arguments":{"lifetime":7200}}}')
al_assert_contains "$r" "max_lifetime" "code_create_sandbox refuses a lifetime past the cap: $r"

# ---- destroyed by its owner: the next call is told so ------------------------------------------------
al_api DELETE "/v1/sandboxes/$b"
al_assert_eq "$CODE" 200 "alice destroys her sandbox"
al_api GET "/v1/sandboxes/$b"
al_assert_eq "$CODE:$(get error)" "404:no sandbox \"$b\": it was destroyed by its owner" "GET after the destroy"
# ... and by an approver (the console's destroy): the owner is told who.
create '{}'
e=$SB
code=$(curl -q -sS -m 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $reviewer" -X DELETE "$url/v1/admin/sandboxes/$e")
al_assert_eq "$code" 200 "the reviewer destroys alice's sandbox"
al_api GET "/v1/sandboxes/$e"
al_assert_eq "$CODE:$(get error)" "404:no sandbox \"$e\": it was destroyed by an approver (token:reviewer)" "GET after the reviewer's destroy"
al_pass "per-sandbox lifetime and metadata"
