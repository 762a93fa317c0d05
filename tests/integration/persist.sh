#!/usr/bin/env bash
# persist.sh — sandboxes that outlive airlock serve (issue 32), judged from outside with curl and
# the state directory on disk: with --state-dir, a SIGTERM keeps a sandbox and the next server
# brings it back under the same id for the same owner, with its files (a link, a mode, a big file
# byte for byte), metadata and lifetime, and another principal still gets 404; files written
# through the files API are kept too; a SIGKILL under load from three clients loses none of the
# writes the clients were told about; a destroy removes the sandbox's state; a sandbox whose disk
# limit the state directory has no room for is refused, with nothing left behind; a second server
# on the same directory is refused by name. Contexts do not survive, and their first cell after a
# restart (a SIGTERM's or a SIGKILL's) says so: restarted, why, and a line on its stderr.
: "${AL_GUARD_TIMEOUT:=270}" # several servers, restarts and a load of three clients (CTest allows 300s)
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
state="$dir/state"
al_serve_config "$confdir/persist.yaml" 'server:\n  max_lifetime: 1h\n'
al_serve_tokens "$dir/serve.token"
alice=$AL_ALICE
bob=$AL_BOB
start() {
	rm -f "$dir/serve.port"
	al_serve_start "$dir" --config "$confdir/persist.yaml" --audit "$dir/audit.jsonl" --state-dir "$state" "$@"
	url=$AL_SERVE_URL
}
cell() { # ID BODY: the cell's result in BODY
	BODY=$(curl -sS -m 60 -X POST "$url/v1/sandboxes/$1/exec" -d "$2" | tail -n1)
}

start
al_api POST /v1/sandboxes -d '{"metadata": {"app": "persist"}, "lifetime": 600}'
[ "$CODE" = 201 ] || al_fail "create: HTTP $CODE: $BODY"
id=$(al_jget 'd["sandbox_id"]')
[ -f "$state/$id/sandbox.json" ] || al_fail "no record of $id in the state directory"
al_api_sh "$id" 'mkdir -p d && echo hello >d/f && chmod 0750 d && ln -s /etc/passwd l && head -c 3000000 /dev/urandom >big && md5sum big'
sum=$OUT
al_api PUT "/v1/sandboxes/$id/files/api.txt" --data-binary 'from the files API'
[ "$CODE" = 200 ] || [ "$CODE" = 201 ] || al_fail "files API write: HTTP $CODE: $BODY"
cell "$id" '{"language": "python", "code": "x = 41"}'
al_api GET "/v1/sandboxes/$id"
ends=$(al_jget 'd["ends_at"]')

al_serve_stop TERM
[ -d "$state/$id/files" ] || al_fail "SIGTERM did not keep $id"
al_assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stopped_unix_ms"] > 0)' "$state/$id/sandbox.json")" True "the stop's time recorded"
start
grep -q "sandbox $id of token:alice is back" "$dir/serve.err" || al_fail "the server did not say it brought $id back: $(cat "$dir/serve.err")"
al_api GET "/v1/sandboxes/$id"
[ "$CODE" = 200 ] || al_fail "after a restart, GET $id: HTTP $CODE: $BODY"
al_assert_eq "$(al_jget 'd["metadata"]["app"]')" persist "metadata after the restart"
after=$(al_jget 'd["ends_at"]')
[ "$after" = "$ends" ] || [[ "$after" > "$ends" ]] || al_fail "the lifetime left shrank over the stop: $ends then $after"
BODY=$(curl -q -sS -m 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $bob" "$url/v1/sandboxes/$id") || true
al_assert_eq "$BODY" 404 "bob's GET of alice's restored sandbox"
al_api_sh "$id" 'cat d/f; stat -c %a d; readlink l; md5sum big; cat api.txt'
al_assert_eq "$OUT" "hello
750
/etc/passwd
$sum
from the files API" "the workspace after a SIGTERM and a restart"
cell "$id" '{"language": "python", "code": "x"}'
al_assert_eq "$(al_jget 'd["result"]["cell"]["restarted"], d["result"]["cell"].get("restart_reason"), d["result"]["cell"]["error"]["ename"]')" \
	"(True, 'server-restarted', 'NameError')" "the default context's first cell after the restart"
al_assert_contains "$(al_jget 'd["result"]["stderr"]')" "the server restarted since this context's last cell" "... its stderr"
cell "$id" '{"language": "python", "code": "x = 7"}'
cell "$id" '{"language": "python", "code": "x"}'
al_assert_eq "$(al_jget 'd["result"]["cell"]["restarted"], d["result"]["cell"]["value"]["text"]')" "(False, '7')" "the next cells keep their state again"
cell "$id" '{"language": "python", "context_id": "calc", "code": "y = 1"}'
al_pass "SIGTERM keeps a sandbox: same id, owner, files, metadata, lifetime; a context says it was lost"

# SIGKILL under load: three clients write files; every write a client was told about is there.
for c in 1 2 3; do
	(
		for n in $(seq 1 200); do
			b=$(python3 -c 'import json,sys; print(json.dumps({"language": "shell", "code": "echo %s >c%s-%s" % (sys.argv[2], sys.argv[1], sys.argv[2]), "fresh": True}))' "$c" "$n")
			r=$(curl -sS -m 30 -X POST "$url/v1/sandboxes/$id/exec" -d "$b" 2>/dev/null | tail -n1) || break
			case $r in *'"exit_code":0'*) echo "$n" >>"$dir/acked.$c" ;; *) break ;; esac
		done
	) &
	AL_BG_PIDS+=($!)
done
for _ in $(seq 100); do
	[ "$(cat "$dir"/acked.* 2>/dev/null | wc -l)" -ge 30 ] && break
	sleep 0.1
done
al_serve_stop KILL
for p in "${AL_BG_PIDS[@]}"; do
	[ "$p" = "$AL_SERVE_PID" ] || wait "$p" 2>/dev/null || true
done
acked=$(cat "$dir"/acked.* 2>/dev/null | wc -l)
[ "$acked" -ge 3 ] || al_fail "the clients had only $acked writes acknowledged before the SIGKILL"
start
lost=0
for c in 1 2 3; do
	while read -r n; do
		[ "$(cat "$state/$id/files/c$c-$n" 2>/dev/null)" = "$n" ] || { lost=$((lost + 1)); al_log "lost: c$c-$n"; }
	done <"$dir/acked.$c"
done
al_assert_eq "$lost" 0 "acknowledged writes missing after a SIGKILL ($acked acknowledged)"
al_api_sh "$id" 'cat c1-1'
al_assert_eq "$OUT" 1 "a file of the load, read in the sandbox brought back after a SIGKILL"
cell "$id" '{"language": "python", "context_id": "calc", "code": "y"}'
al_assert_eq "$(al_jget 'd["result"]["cell"]["restarted"], d["result"]["cell"].get("restart_reason"), d["result"]["cell"]["error"]["ename"]')" \
	"(True, 'server-restarted', 'NameError')" "a named context made before a SIGKILL, its first cell after the restart"
al_pass "SIGKILL under load: all $acked acknowledged writes are there"

# A second server on the same state directory is refused by name.
rc=0
"${AL_SETPRIV[@]}" "$AL_AIRLOCK_BIN" serve --socket none --config "$confdir/persist.yaml" --audit "$dir/audit2.jsonl" \
	--state-dir "$state" --http 127.0.0.1:0 --token-file "$dir/serve.token" 2>"$dir/second.err" || rc=$?
[ "$rc" != 0 ] || al_fail "a second server on the same state directory started"
grep -q "another airlock serve keeps its sandboxes in $state" "$dir/second.err" ||
	al_fail "the second server's refusal does not say why: $(cat "$dir/second.err")"

# No room for a sandbox's disk limit: refused, and nothing left in the state directory.
al_api POST /v1/sandboxes -d '{"limits": {"disk_mb": 1000000}}'
[ "$CODE" != 201 ] || al_fail "a sandbox whose disk limit the state directory cannot hold was made"
case $BODY in *"state directory"*"free"*) ;; *) al_fail "the refusal does not say why: $BODY" ;; esac
al_assert_eq "$(find "$state" -mindepth 1 -maxdepth 1 -type d | wc -l)" 1 "sandboxes kept after the refused create"

# A destroy removes the sandbox's state.
al_api DELETE "/v1/sandboxes/$id"
[ "$CODE" = 200 ] || al_fail "destroy: HTTP $CODE: $BODY"
[ ! -e "$state/$id" ] || al_fail "the destroyed sandbox's state is still there"
al_serve_stop TERM
start
al_api GET "/v1/sandboxes/$id"
[ "$CODE" = 404 ] || al_fail "a destroyed sandbox came back after a restart: HTTP $CODE"
al_serve_stop TERM
al_pass "destroy removes the state; a second server and a create without room are refused"
