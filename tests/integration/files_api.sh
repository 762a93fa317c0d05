#!/usr/bin/env bash
# files_api.sh — the files API of airlock serve (issue 31), driven with curl: stat of a file, a
# directory, a symlink and a missing path; mkdir with parents; move; remove of a file and a tree;
# a symlink planted by sandbox code pointing outside is never followed by stat, move or remove; a
# FIFO is refused; escapes are refused with 4xx and change nothing; a 200 MiB upload and download
# with the server's peak RSS bounded and the bytes equal; a cut upload and one past the disk limit
# leave no file; a tar upload, and bad tars refused with nothing unpacked.
. "$(dirname "$0")/../lib.sh"

command -v curl >/dev/null || al_skip "curl is missing"
al_serve_bin
dir=$(al_tmpdir 0777)
confdir=$(al_tmpdir 0755)
m=$(al_marker)
al_serve_config "$confdir/f.yaml"
mkdir -p "$dir/canary"
echo "canary $m" >"$dir/canary/keep"
chmod -R a+rwX "$dir/canary"

al_serve_start "$dir" --config "$confdir/f.yaml" --audit "$dir/audit.jsonl"
SPID=$AL_SERVE_PID
PORT=$SERVE_PORT
base="$AL_SERVE_URL/v1/sandboxes"

# expect CODE WHAT: the last al_api call answered CODE.
expect() { al_assert_eq "$CODE" "$1" "$2: $BODY"; }
# refused WHAT: the last al_api call was refused as the client's fault (4xx).
refused() { if [ "$CODE" -lt 400 ] || [ "$CODE" -ge 500 ]; then al_fail "$1: $CODE $BODY"; fi; }
# sh SANDBOX CODE: runs shell code in the sandbox; prints its stdout.
sh_in() {
	curl -s -X POST "$base/$1/exec" -H 'Content-Type: application/json' \
		-d "$("$AL_PY" -c 'import json,sys; print(json.dumps({"command": sys.argv[1]}))' "$2")" |
		"$AL_PY" -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l).get("result")
    if r: print(r["stdout"], end="")'
}
create() {
	al_api POST "/v1/sandboxes" -H 'Content-Type: application/json' -d "$1"
	expect 201 "create a sandbox"
	al_jget 'd.get("sandbox_id")'
}
sb=$(create '{"limits": {"disk_mb": 320}}')

# ---- stat --------------------------------------------------------------------------------------
sh_in "$sb" "mkdir -p d/e && printf abc > d/f && chmod 640 d/f && ln -s /etc/passwd out && ln -s d/f in &&
	ln -s $dir/canary evil && mkfifo p && echo ok" >"$dir/setup.out"
al_assert_eq "$(cat "$dir/setup.out")" ok "the sandbox made its files"
al_api GET "/v1/sandboxes/$sb/stat/d/f"
expect 200 "stat a file"
al_assert_eq "$(al_jget 'd.get("type")') $(al_jget 'd.get("size")') $(al_jget 'd.get("mode")') $(al_jget 'd.get("uid")')" "file 3 0640 1000" "the file's stat"
al_assert_contains "$(al_jget 'd.get("mtime")')" "T" "the file's mtime is RFC 3339"
al_api GET "/v1/sandboxes/$sb/stat/d"
al_assert_eq "$(al_jget 'd.get("type")') $(al_jget 'd.get("link_target")')" "directory None" "stat a directory"
al_api GET "/v1/sandboxes/$sb/stat/out"
al_assert_eq "$(al_jget 'd.get("type")') $(al_jget 'd.get("link_target")')" "symlink /etc/passwd" "stat a symlink: never followed"
al_api GET "/v1/sandboxes/$sb/stat/evil/"
al_assert_eq "$(al_jget 'd.get("type")')" "symlink" "stat a planted link with a trailing slash: the link itself"
al_api GET "/v1/sandboxes/$sb/stat"
al_assert_eq "$CODE $(al_jget 'd.get("type")')" "200 directory" "stat the workspace"
al_api GET "/v1/sandboxes/$sb/stat/p"
al_assert_eq "$(al_jget 'd.get("type")')" "fifo" "stat a FIFO (nothing opened)"
al_api GET "/v1/sandboxes/$sb/stat/missing"
expect 404 "stat of a missing path (exists: false)"
al_api GET "/v1/sandboxes/$sb/stat/evil/keep"
refused "stat through a link leading out"
al_assert_not_contains "$BODY" "canary" "stat through a link leading out says nothing of it"
al_api GET "/v1/sandboxes/$sb/stat/../../etc/passwd" --path-as-is
refused "stat of .."
al_api GET "/v1/sandboxes/nope/stat/d"
expect 404 "stat in an unknown sandbox"

# ---- FIFO refused ------------------------------------------------------------------------------
al_api GET "/v1/sandboxes/$sb/files/p" --max-time 10
expect 400 "reading a FIFO"
al_api PUT "/v1/sandboxes/$sb/files/p" --data-binary x --max-time 10
expect 400 "writing a FIFO"

# ---- mkdir -------------------------------------------------------------------------------------
al_api POST "/v1/sandboxes/$sb/dirs/a/b/c"
expect 201 "mkdir with parents"
al_assert_eq "$(al_jget 'd.get("created")')" True "mkdir: created"
al_api POST "/v1/sandboxes/$sb/dirs/a/b/c"
expect 200 "mkdir of an existing directory"
al_assert_eq "$(al_jget 'd.get("created")')" False "mkdir again: not created"
al_api POST "/v1/sandboxes/$sb/dirs/d/f"
expect 409 "mkdir over a file"
al_api POST "/v1/sandboxes/$sb/dirs/evil/made"
refused "mkdir through a link leading out"
al_api POST "/v1/sandboxes/$sb/dirs/x/../../up" --path-as-is
refused "mkdir with .."
al_api GET "/v1/sandboxes/$sb/stat/x"
expect 404 "a refused mkdir made nothing on the way"
if [ -e "$dir/canary/made" ] || [ -e "$dir/up" ]; then al_fail "a refused mkdir made something outside"; fi

# ---- move --------------------------------------------------------------------------------------
mv_json() { "$AL_PY" -c 'import json,sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' "$@"; }
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d "$(mv_json from d/f to a/b/g)"
expect 200 "move a file"
al_api GET "/v1/sandboxes/$sb/files/a/b/g"
al_assert_eq "$BODY" abc "the moved file's bytes"
al_api GET "/v1/sandboxes/$sb/stat/d/f"
expect 404 "the old name is gone"
al_api PUT "/v1/sandboxes/$sb/files/a/b/h" --data-binary hh
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d '{"from": "a/b/h", "to": "a/b/g", "overwrite": false}'
expect 409 "move onto an existing file without overwrite"
al_api GET "/v1/sandboxes/$sb/files/a/b/g"
al_assert_eq "$BODY" abc "a refused move changed nothing"
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d '{"from": "a/b/h", "to": "a/b/g"}'
expect 200 "move replacing a file, as rename(2)"
al_api GET "/v1/sandboxes/$sb/files/a/b/g"
al_assert_eq "$BODY" hh "the replaced file"
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d "$(mv_json from evil to moved-evil)"
expect 200 "move a planted link"
al_api GET "/v1/sandboxes/$sb/stat/moved-evil"
al_assert_eq "$(al_jget 'd.get("type")') $(al_jget 'd.get("link_target")')" "symlink $dir/canary" "the link moved as itself"
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d "$(mv_json from moved-evil/keep to stolen)"
refused "move through a link leading out"
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d "$(mv_json from a/b/g to ../../g)"
refused "move to .."
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d '{"from": "a", "to": "a/b/inside"}'
expect 400 "move a directory into itself"
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d '{"from": "a/b/g", "dest": "x"}'
expect 400 "move with an unknown property"
al_api POST "/v1/sandboxes/$sb/move" -H 'Content-Type: application/json' -d '{"from": "a/b/g"}'
expect 400 "move without to"
al_assert_eq "$(cat "$dir/canary/keep")" "canary $m" "the canary outside is untouched by moves"
[ ! -e "$dir/g" ] || al_fail "a move reached outside"

# ---- remove ------------------------------------------------------------------------------------
al_api DELETE "/v1/sandboxes/$sb/files/moved-evil?recursive=true"
expect 200 "remove a planted link (recursive)"
al_assert_eq "$(al_jget 'd.get("removed")')" 1 "only the link was removed"
al_assert_eq "$(cat "$dir/canary/keep")" "canary $m" "the link's target outside is untouched"
sh_in "$sb" "ln -s $dir/canary a/b/c/evil2 && echo ok" >/dev/null
al_api DELETE "/v1/sandboxes/$sb/files/a"
expect 400 "remove a directory that is not empty, without recursive"
al_api DELETE "/v1/sandboxes/$sb/files/a?recursive=maybe"
expect 400 "a bad recursive flag"
al_api DELETE "/v1/sandboxes/$sb/files/a?recursive=true"
expect 200 "remove a tree"
al_assert_eq "$(al_jget 'd.get("removed")')" 5 "the tree's entries (a, b, c, g, evil2) removed"
al_api GET "/v1/sandboxes/$sb/stat/a"
expect 404 "the tree is gone"
al_assert_eq "$(cat "$dir/canary/keep")" "canary $m" "a link inside the tree was not followed"
al_api DELETE "/v1/sandboxes/$sb/files/in"
expect 200 "remove a file's link"
al_api DELETE "/v1/sandboxes/$sb/files/d/e"
expect 200 "remove an empty directory"
al_api DELETE "/v1/sandboxes/$sb/files/missing"
expect 404 "remove a missing file"
al_api DELETE "/v1/sandboxes/$sb/files//workspace"
expect 403 "remove the workspace itself"
al_api DELETE "/v1/sandboxes/$sb/files/../../$(basename "$dir")/canary/keep" --path-as-is
refused "remove with .."
al_assert_eq "$(cat "$dir/canary/keep")" "canary $m" "the canary outside is untouched by removes"

# ---- 200 MiB up and down, the server's memory bounded -------------------------------------------
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$SPID/status"; }
head -c $((200 << 20)) /dev/urandom >"$dir/big"
before=$(hwm)
al_api PUT "/v1/sandboxes/$sb/files/up/big.bin" -T "$dir/big"
expect 200 "upload 200 MiB"
al_assert_eq "$(al_jget 'd.get("bytes")')" $((200 << 20)) "the upload's size"
curl -s -f -o "$dir/big.back" "$base/$sb/files/up/big.bin" || al_fail "download 200 MiB"
after=$(hwm)
al_assert_eq "$(sha256sum <"$dir/big.back")" "$(sha256sum <"$dir/big")" "the downloaded bytes are the uploaded ones"
al_log "server VmHWM: ${before} kB before, ${after} kB after 200 MiB up and down"
[ $((after - before)) -lt $((64 << 10)) ] || al_fail "the server's peak RSS grew by $((after - before)) kB"
rm -f "$dir/big.back"
al_api GET "/v1/sandboxes/$sb/stat/up/big.bin"
al_assert_eq "$(al_jget 'd.get("size")')" $((200 << 20)) "stat of the uploaded file"
al_api DELETE "/v1/sandboxes/$sb/files/up?recursive=true"
expect 200 "remove the big file"

# ---- cut uploads leave nothing -----------------------------------------------------------------
curl -s -o /dev/null --limit-rate 4M -T "$dir/big" "$base/$sb/files/cut/big.bin" &
cpid=$!
sleep 1.5
kill "$cpid" 2>/dev/null || true
wait "$cpid" 2>/dev/null || true
"$AL_PY" - "$PORT" "$sb" "$AL_TOKEN" <<'PY' || al_fail "the short body"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("PUT /v1/sandboxes/%s/files/short.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
           "Content-Length: 100000\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode() + b"x" * 1000)
s.close()
PY
sleep 1
al_api GET "/v1/sandboxes/$sb/stat/cut/big.bin"
expect 404 "a cut upload left no file"
al_api GET "/v1/sandboxes/$sb/stat/short.bin"
expect 404 "a body shorter than its Content-Length left no file"
listing=$(sh_in "$sb" "ls -A . cut 2>&1; df -k . | tail -n1")
al_assert_not_contains "$listing" ".airlock-" "no temporary file is left"
used=$(printf '%s\n' "$listing" | tail -n1 | awk '{print $3}')
[ "$used" -lt $((8 << 10)) ] || al_fail "the cut uploads still hold ${used} kB of the workspace"

# ---- the disk limit ----------------------------------------------------------------------------
small=$(create '{"limits": {"disk_mb": 8}}')
head -c $((20 << 20)) /dev/zero >"$dir/twenty"
al_api PUT "/v1/sandboxes/$small/files/full.bin" -T "$dir/twenty"
expect 507 "an upload past the disk limit"
al_assert_contains "$BODY" "disk" "the refusal names the disk limit"
al_api GET "/v1/sandboxes/$small/stat/full.bin"
expect 404 "nothing of the refused upload"
al_api PUT "/v1/sandboxes/$small/files/after.txt" --data-binary "room $m"
expect 200 "the space came back"

# ---- tar uploads -------------------------------------------------------------------------------
"$AL_PY" - "$dir" "$m" <<'PY'
import io, sys, tarfile
d, m = sys.argv[1], sys.argv[2].encode()
def tar(name, members):
    with tarfile.open("%s/%s" % (d, name), "w") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
def f(name, data=b"", **kw):
    i = tarfile.TarInfo(name); i.size = len(data); i.mode = 0o644
    for k, v in kw.items(): setattr(i, k, v)
    return (i, data)
def special(name, typ, **kw):
    i = tarfile.TarInfo(name); i.type = typ
    for k, v in kw.items(): setattr(i, k, v)
    return (i, None)
good = [special("pkg", tarfile.DIRTYPE, mode=0o755), f("pkg/a.txt", b"A " + m), f("pkg/sub/b.bin", bytes(range(256)) * 64),
        special("pkg/link", tarfile.SYMTYPE, linkname="a.txt"), f("top.txt", b"top", mode=0o4755),
        f("pkg/na\u00efve-\u540d\u524d.txt", b"a UTF-8 name")]
tar("good.tar", good)
tar("dotdot.tar", good[:2] + [f("../escape.txt", b"x")])
tar("abs.tar", good[:2] + [f("/abs.txt", b"x")])
tar("linkout.tar", good[:2] + [special("out", tarfile.SYMTYPE, linkname="/etc")])
tar("linkup.tar", good[:2] + [special("up", tarfile.SYMTYPE, linkname="../../x")])
tar("hard.tar", good[:2] + [special("h", tarfile.LNKTYPE, linkname="pkg/a.txt")])
tar("fifo.tar", good[:2] + [special("f", tarfile.FIFOTYPE)])
tar("dev.tar", good[:2] + [special("null", tarfile.CHRTYPE, devmajor=1, devminor=3)])
tar("through.tar", [special("ln", tarfile.SYMTYPE, linkname="pkg"), f("ln/x.txt", b"x")])
tar("intolink.tar", [f("evil3/x.txt", b"x")])
open("%s/garbage.tar" % d, "wb").write(b"this is not a tar archive " * 100)
PY
al_api PUT "/v1/sandboxes/$sb/archive/dest" -T "$dir/good.tar" -H 'Content-Type: application/x-tar'
expect 200 "a tar upload"
al_assert_eq "$(al_jget 'd.get("members")')" 6 "the members unpacked"
al_api GET "/v1/sandboxes/$sb/files/dest/pkg/a.txt"
al_assert_eq "$BODY" "A $m" "an unpacked file"
al_api GET "/v1/sandboxes/$sb/files/dest/pkg/na%C3%AFve-%E5%90%8D%E5%89%8D.txt"
al_assert_eq "$BODY" "a UTF-8 name" "an unpacked file whose name is beyond ASCII"
al_api GET "/v1/sandboxes/$sb/stat/dest/pkg/link"
al_assert_eq "$(al_jget 'd.get("type")') $(al_jget 'd.get("link_target")')" "symlink a.txt" "an unpacked symlink, kept as data"
al_api GET "/v1/sandboxes/$sb/stat/dest/pkg/sub/b.bin"
al_assert_eq "$(al_jget 'd.get("size")')" 16384 "an unpacked file in an implied directory"
al_api GET "/v1/sandboxes/$sb/stat/dest/top.txt"
al_assert_eq "$(al_jget 'd.get("mode")')" 0755 "no set-id bit from an archive"
al_api PUT "/v1/sandboxes/$sb/archive" -T "$dir/good.tar"
expect 200 "a tar upload into the workspace itself"
al_api GET "/v1/sandboxes/$sb/files/top.txt"
al_assert_eq "$BODY" top "unpacked at the workspace's root"
for bad in dotdot abs linkout linkup hard fifo dev through garbage; do
	al_api PUT "/v1/sandboxes/$sb/archive/bad-$bad" -T "$dir/$bad.tar"
	expect 400 "a tar with a bad member ($bad)"
	al_api GET "/v1/sandboxes/$sb/stat/bad-$bad"
	expect 404 "nothing of the refused tar ($bad)"
done
sh_in "$sb" "ln -s $dir/canary evil3 && echo ok" >/dev/null
al_api PUT "/v1/sandboxes/$sb/archive" -T "$dir/intolink.tar"
expect 409 "a tar whose directory meets a planted link"
[ ! -e "$dir/canary/x.txt" ] || al_fail "a tar unpacked through a planted link"
al_assert_eq "$(cat "$dir/canary/keep")" "canary $m" "the canary outside is untouched by tars"
listing=$(sh_in "$sb" "ls -A . dest")
al_assert_not_contains "$listing" ".airlock-" "no temporary directory is left"
al_assert_contains "$(cat "$dir/audit.jsonl")" '"code_upload"' "the audit log records the uploads"

# ---- MCP: code_file on the same manager ----------------------------------------------------------
PYTHONPATH="$AL_SRC/tests/mcp" "$AL_PY" - "$AL_SERVE_URL" "$sb" <<'PY' >"$dir/mcp.out" || al_fail "code_file over MCP: $(cat "$dir/mcp.out")"
import os, sys
from client import Http  # tests/mcp/client.py: MCP over streamable HTTP
h, sb = Http(sys.argv[1], os.environ["AL_TOKEN"]), sys.argv[2]
h.initialize("t")
def call(i, args):
    return h.mcp({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "code_file", "arguments": args}})["result"]
r = call(2, {"sandbox_id": sb, "action": "mkdir", "path": "via-mcp/x"})
assert not r["isError"] and r["structuredContent"]["created"] is True, r
r = call(3, {"sandbox_id": sb, "action": "stat", "path": "via-mcp/x"})
assert r["structuredContent"]["type"] == "directory", r
r = call(4, {"sandbox_id": sb, "action": "remove", "path": "via-mcp", "recursive": True})
assert r["structuredContent"]["removed"] == 2, r
r = call(5, {"sandbox_id": sb, "action": "stat", "path": "via-mcp"})
assert r["isError"] and "no such file" in r["content"][0]["text"], r
r = h.mcp({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "code_upload", "arguments": {}}})
assert "error" in r or r["result"]["isError"], r
print("ok")
PY
al_assert_eq "$(cat "$dir/mcp.out")" ok "code_file over MCP; code_upload is not an MCP tool"

kill "$SPID"
wait "$SPID" 2>/dev/null || true
al_pass "files API"
