"""session.py — an MCP session's own sandbox, seen from outside: an agent that never names a sandbox
writes a file, runs code that reads it and writes another, and reads that back, over stdio and over
HTTP; explicit sandboxes keep working beside it; GET /v1/sandboxes lists the caller's own sandboxes
and never another principal's; when the session ends (end of input, DELETE /mcp), the sandbox's
processes and workspace are gone.

The sandbox is found on the host by its network namespace, which its code reports (inode numbers
are the same inside and out), and its workspace (a tmpfs only the sandbox's namespaces and the
server's descriptor keep alive) by the file the agent's code made in it, through that descriptor.

Usage: session.py WORKDIR CONFIGDIR MARKER -- AIRLOCK_COMMAND...
Environment: AL_ALICE_TOKEN, AL_BOB_TOKEN (their lines are in WORKDIR/clients.token)."""
import json
import os
import sys
import time

from client import Client, Http, ServeProcess, check, finish, scenario_args, write_config, structured as sc, succeeded as ok

(work, confdir, mark), cmd = scenario_args()

config = write_config(confdir, "session.yaml", """version: 1
rules:
- name: everything
  tools: ["*"]
  risk: LOW
  require_approval: false
""")

# The code the agent runs: reads the file it wrote, writes one, and says where it ran.
PROBE = "cat in.txt; echo; echo made-%s > out.txt; readlink /proc/self/ns/net" % mark
MADE = "made-%s\n" % mark


# ---- what the host sees of a sandbox -------------------------------------------------------------

def ns_holders(ns_links):
    """Host pids in any of these namespaces ("net:[...]": each exec has its own pid and mount
    namespaces, but all of them join the held sandbox's network namespace, which its init keeps)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        for kind in ("net",):
            try:
                if os.readlink("/proc/%s/ns/%s" % (p, kind)) in ns_links:
                    found.append(int(p))
            except OSError:
                pass
    return found


def fds_on(pid, made):
    """pid's descriptors that open the session's workspace: a directory holding out.txt as the
    agent's code wrote it."""
    n = 0
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return 0
    for fd in fds:
        try:
            with open("/proc/%d/fd/%s/out.txt" % (pid, fd)) as f:
                n += f.read() == made
        except OSError:
            pass
    return n


def where(r):
    """(sandbox id, namespace links) from PROBE's result."""
    lines = sc(r).get("stdout", "").split("\n")
    return sc(r).get("sandbox_id"), [l for l in lines if l.startswith("net:[")]


def gone(links, pid, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if not ns_holders(links) and (pid is None or fds_on(pid, MADE) == 0):
            return True
        time.sleep(0.1)
    print("left: processes %s in %s, %d workspace descriptors" % (ns_holders(links), links,
          fds_on(pid, MADE) if pid else 0), file=sys.stderr)
    return False


def agent(call):
    """The calls of an agent that never heard of sandbox ids; returns the execute's result."""
    r = call("code_write_file", {"path": "in.txt", "content": "written-" + mark})
    check(ok(r) and sc(r).get("bytes") == len("written-" + mark), "code_write_file without sandbox_id (%s)" % json.dumps(r)[:300])
    ex = call("code_execute", {"language": "shell", "code": PROBE})
    out = sc(ex).get("stdout", "")
    check(ok(ex) and out.startswith("written-" + mark), "code_execute without sandbox_id sees the written file (%s)" % json.dumps(ex)[:400])
    r = call("code_read_file", {"path": "out.txt"})
    check(ok(r) and sc(r).get("content") == "made-%s\n" % mark, "code_read_file without sandbox_id reads what the code wrote (%s)" % json.dumps(r)[:300])
    r = call("code_list_files", {})
    names = sorted(e["name"] for e in sc(r).get("entries", []))
    check("in.txt" in names and "out.txt" in names, "code_list_files without sandbox_id: %s" % names)
    return ex


def explicit_ids_work(call, own):
    sb = sc(call("code_create_sandbox", {})).get("sandbox_id")
    check(bool(sb) and sb != own, "code_create_sandbox: another sandbox (%s, the session's is %s)" % (sb, own))
    r = call("code_read_file", {"sandbox_id": sb, "path": "in.txt"})
    check(r["result"].get("isError") is True, "the explicit sandbox does not have the session's files")
    r = call("code_execute", {"sandbox_id": sb, "language": "shell", "code": "echo x-%s > f; cat f" % mark})
    check(ok(r) and sc(r).get("sandbox_id") == sb and sc(r).get("stdout") == "x-%s\n" % mark, "code_execute with an explicit sandbox_id")
    r = call("code_destroy_sandbox", {"sandbox_id": sb})
    check(ok(r), "code_destroy_sandbox of the explicit sandbox")
    # Network without a sandbox_id is still a throwaway sandbox made with that network.
    r = call("code_execute", {"language": "shell", "code": "test -e in.txt && echo seen || echo fresh",
                              "network_enabled": True, "allowed_domains": ["example.invalid"]})
    check(ok(r) and sc(r).get("sandbox_id") is None and sc(r).get("stdout") == "fresh\n",
          "code_execute with network and no sandbox_id: a throwaway sandbox (%s)" % json.dumps(r)[:300])


def text(r):
    """The text content a model reads."""
    return "".join(x.get("text", "") for x in r.get("result", {}).get("content", []) if x.get("type") == "text")


def texts_are_short(call):
    """Text content carries what a model needs, not the whole verdict (which stays in
    structuredContent): the output, a cell's value, the error, a status line only when the
    program did not exit 0."""
    cases = [
        ({"language": "python", "code": "print(6*7)"}, lambda t: t == "42", False),
        ({"language": "python", "code": "x = 6\nx * 7"}, lambda t: t.startswith("Out[") and t.endswith("]: 42"), False),
        ({"language": "python", "code": "print('a')\n1/0"},
         lambda t: t.startswith("stdout:\na\nstderr:\n") and t.endswith("ZeroDivisionError: division by zero"), True),
        ({"language": "python", "code": "import sys; sys.exit(3)", "fresh": True}, lambda t: t == "exit 3", True),
        ({"language": "shell", "code": "ls /", "fresh": True}, lambda t: "\nusr" in t and "verdict" not in t, False),
        ({"language": "shell", "code": "sleep 5", "timeout": 1, "fresh": True}, lambda t: t == "timed out after 1 s", True),
        ({"language": "shell", "code": "head -c 1100000 /dev/zero | tr '\\0' x", "fresh": True},
         lambda t: len(t) < 70000 and "[... 983.0 kB not shown here: the whole output is in structuredContent ...]" in t
         and t.endswith("x\nstdout truncated: 51.4 kB more not shown"), True),
    ]
    for args, want, failed in cases:
        r = call("code_execute", args)
        t = text(r)
        check(want(t) and r["result"].get("isError") is failed and "enforced" not in t,
              "text content of %s: %r (%d characters)" % (args["code"][:30], t[-160:], len(t)))
        check("enforced" in json.dumps(sc(r).get("verdict", {})), "structuredContent still holds the whole verdict")
    r = call("code_write_file", {"path": "t.txt", "content": "hello"})
    check(text(r) == "wrote 5 bytes to t.txt", "code_write_file's text: %r" % text(r))
    r = call("code_read_file", {"path": "t.txt"})
    check(text(r) == "hello", "code_read_file's text is the content: %r" % text(r))
    r = call("code_list_files", {})
    check("t.txt  5 bytes" in text(r).split("\n"), "code_list_files's text: one line per entry: %r" % text(r)[:200])


# ---- MCP on stdio: the session ends at end of input ----------------------------------------------

def over_stdio():
    c = Client(cmd + ["mcp", "--config", config, "--audit", os.path.join(work, "stdio.jsonl")], elicit=False)
    try:
        c.initialize()
        tools = {t["name"]: t for t in c.request("tools/list")["result"]["tools"]}
        for t in ("code_write_file", "code_read_file", "code_list_files", "code_install_package", "code_execute"):
            s = tools[t]["inputSchema"]
            check("sandbox_id" not in s.get("required", []) and "session" in tools[t]["description"],
                  "%s: sandbox_id optional, the session's sandbox described" % t)
        check("sandbox_id" not in tools["code_destroy_sandbox"]["inputSchema"].get("required", []),
              "code_destroy_sandbox: sandbox_id optional (without it: the session's own)")
        r = c.call("code_destroy_sandbox", {})
        check(ok(r) and "nothing to destroy" in text(r), "code_destroy_sandbox before any call: nothing made, nothing to destroy (%s)" % json.dumps(r)[:300])
        own, links = where(agent(lambda t, a: c.call(t, a)))
        check(own is not None and len(links) == 1, "stdio: the sandbox reported its network namespace")
        check(len(ns_holders(links)) > 0, "stdio: while the session lives, its sandbox has processes on the host")
        check(fds_on(c.p.pid, MADE) > 0, "stdio: while the session lives, the server holds its workspace")
        explicit_ids_work(lambda t, a: c.call(t, a), own)
        texts_are_short(lambda t, a: c.call(t, a))
        # A reset: without an id, the session's own sandbox goes; the next call gets a new, empty one.
        r = c.call("code_destroy_sandbox", {})
        check(ok(r) and sc(r).get("sandbox_id") == own, "code_destroy_sandbox without sandbox_id destroys the session's own (%s)" % json.dumps(r)[:300])
        check(gone(links, c.p.pid), "stdio: the reset sandbox's processes and workspace are gone")
        r = c.call("code_read_file", {"path": "out.txt"})
        check(r["result"].get("isError") is True, "after the reset the files are gone (%s)" % json.dumps(r)[:200])
        new, new_links = where(c.call("code_execute", {"language": "shell", "code": PROBE}))
        check(new is not None and new != own and new_links != links, "the next call runs in a new sandbox (%s, was %s)" % (new, own))
    finally:
        check(c.close() == 0, "stdio: airlock mcp exits 0 at end of input")
    check(gone(links, None), "stdio: after end of input no process is left in the session's sandbox")


# ---- airlock serve: MCP over HTTP for alice, the JSON API for bob --------------------------------

class Serve(ServeProcess):
    """airlock serve with two client principals: token:alice (an MCP session) and token:bob."""

    def __init__(self, config=config):
        port_file = os.path.join(work, "serve.port")
        if os.path.exists(port_file):
            os.unlink(port_file)  # a stopped server's port is no answer
        super().__init__(cmd, work, ["--config", config, "--audit", os.path.join(work, "serve.jsonl"),
                                     "--token-file", os.path.join(work, "clients.token")])
        self.as_ = {who: Http(self.base, os.environ["AL_%s_TOKEN" % who.upper()]) for who in ("alice", "bob")}

    def request(self, who, method, path, body=None, headers=None):
        return self.as_[who].request(method, path, body, headers)

    def mcp(self, msg):
        """alice's MCP session."""
        return self.as_["alice"].mcp(msg)

    def listed(self, who):
        code, _, body = self.request(who, "GET", "/v1/sandboxes")
        check(code == 200, "GET /v1/sandboxes as %s: 200 (%d %s)" % (who, code, body[:200]))
        return {s["id"]: s for s in json.loads(body).get("sandboxes", [])} if code == 200 else {}

def over_http(s):
    s.as_["alice"].initialize("session")
    ids = iter(range(2, 100))

    def call(tool, args):
        return s.mcp({"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                      "params": {"name": tool, "arguments": args}})

    check(s.listed("alice") == {}, "GET /v1/sandboxes: alice has none before her first call")
    own, links = where(agent(call))
    check(own is not None and len(links) == 1, "HTTP: the sandbox reported its network namespace")
    mine = s.listed("alice")
    entry = mine.get(own, {})
    check(set(mine) == {own}, "GET /v1/sandboxes lists alice's session sandbox (%s)" % list(mine))
    check(entry.get("profile") and entry.get("created_at", "").endswith("Z") and entry.get("last_used_at", "").endswith("Z")
          and entry.get("busy") is False, "the listing has profile, times and busy: %s" % entry)
    # bob: his own sandbox through the JSON API; he never sees alice's, nor can he use it.
    code, _, body = s.request("bob", "POST", "/v1/sandboxes", {})
    bobs = json.loads(body).get("sandbox_id") if code == 201 else None
    check(bobs is not None, "bob creates a sandbox over the JSON API (%d %s)" % (code, body[:200]))
    check(set(s.listed("bob")) == {bobs}, "GET /v1/sandboxes as bob: only his own")
    check(set(s.listed("alice")) == {own}, "GET /v1/sandboxes as alice: never bob's")
    code, _, _ = s.request("bob", "GET", "/v1/sandboxes/%s/files/out.txt" % own)
    check(code == 404, "bob reading alice's session sandbox: 404 (%d)" % code)
    check(len(ns_holders(links)) > 0 and fds_on(s.p.pid, MADE) > 0, "HTTP: while the session lives, its sandbox is there")
    # DELETE /mcp ends the session and its sandbox.
    code, _, _ = s.request("alice", "DELETE", "/mcp", headers={"Mcp-Session-Id": s.as_["alice"].sid})
    check(code == 204, "DELETE /mcp: 204 (%d)" % code)
    check(gone(links, s.p.pid), "HTTP: after DELETE /mcp no process is left in the session's sandbox and the "
                                     "server no longer holds its workspace")
    check(own not in s.listed("alice"), "GET /v1/sandboxes: the ended session's sandbox is not listed")
    check(set(s.listed("bob")) == {bobs}, "bob's sandbox lives on")


def ended_while_making(s):
    """Sessions deleted while their first call's sandbox is being made (no warm spare: each is made
    on the spot): the sandbox made for nobody is destroyed, never left listed under alice (and her
    quota) until it expires."""
    import threading
    for i in range(5):
        h = Http(s.base, os.environ["AL_ALICE_TOKEN"])
        h.initialize("ended-%d" % i)
        msg = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "code_write_file", "arguments": {"path": "a.txt", "content": "x"}}}
        t = threading.Thread(target=lambda: h.mcp(msg), daemon=True)
        t.start()
        time.sleep(0.005 * i)  # the DELETE lands at different points of the making
        code, _, _ = h.request("DELETE", "/mcp", headers={"Mcp-Session-Id": h.sid})
        check(code in (204, 404), "DELETE /mcp of session %d: %d" % (i, code))
        t.join(30)
    deadline = time.monotonic() + 10
    while s.listed("alice") and time.monotonic() < deadline:
        time.sleep(0.2)
    check(s.listed("alice") == {}, "sessions ended while their sandbox was made leave none: %s" % list(s.listed("alice")))


over_stdio()
srv = Serve()
try:
    over_http(srv)
finally:
    check(srv.stop() == 0, "airlock serve stops cleanly")
srv = Serve(write_config(confdir, "nopool.yaml", """version: 1
server:
  pool: {}
rules:
- name: everything
  tools: ["*"]
  risk: LOW
  require_approval: false
"""))
try:
    ended_while_making(srv)
finally:
    check(srv.stop() == 0, "airlock serve stops cleanly")
finish()
