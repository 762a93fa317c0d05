"""drive.py — the approver's console judged in headless Chromium: sign-in, a live pending call, approve, deny, a changed request, a timeout, the sandboxes (kept, paused, running) and snapshots, terminals and audit views; screenshots of each view.

Environment: AL_URL (the server), AL_CLIENT and AL_REVIEWER (tokens), AL_MARK (a marker), AL_SHOTS
(screenshot directory), AL_PROFILE (Chromium's profile directory). Prints FAIL lines and exits 1.
"""
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402

URL, CLIENT, REVIEWER, M = (os.environ[k] for k in ("AL_URL", "AL_CLIENT", "AL_REVIEWER", "AL_MARK"))
SHOTS = os.environ["AL_SHOTS"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def http(method, path, token, body=None, timeout=90):
    data = json.dumps(body).encode() if body is not None else None
    rq = urllib.request.Request(URL + path, data=data, method=method)
    if token:
        rq.add_header("Authorization", "Bearer " + token)
    if data is not None:
        rq.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(rq, timeout=timeout) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


class Exec(threading.Thread):
    """A client's call that blocks while it waits for a decision."""

    def __init__(self, sandbox, code):
        super().__init__(daemon=True)
        self.sandbox, self.code, self.result = sandbox, code, None
        self.start()

    def run(self):
        self.result = http("POST", f"/v1/sandboxes/{self.sandbox}/exec", CLIENT, {"language": "shell", "code": self.code})


def refused(result):
    """An exec that did not run: refused at once (4xx), or (a reviewer was asked, so its stream had
    started with the pending approval) a stream that ends with a 403 error line and no result."""
    if result is None:
        return False
    lines = [json.loads(l) for l in result[1].splitlines() if l.strip()] if result[0] == 200 else []
    return result[0] >= 400 or (bool(lines) and lines[0].get("status") == "pending" and
                                lines[-1].get("status") == 403 and not any("result" in l for l in lines))


def pending(expect_code):
    """Waits until the server lists a pending call holding expect_code; returns (item, when)."""
    for _ in range(500):
        s, body, _ = http("GET", "/v1/approvals", REVIEWER)
        for a in json.loads(body)["approvals"] if s == 200 else []:
            if expect_code in a["request"].get("code", ""):
                return a, time.monotonic()
        time.sleep(0.02)
    return None, None


def files(sandbox):
    s, body, _ = http("GET", f"/v1/sandboxes/{sandbox}/files", CLIENT)
    return body


def card_of(b, item, seconds=10.0):
    return b.wait(f"!!document.querySelector('#approvals .card[data-id=\"{item['id']}\"]')", seconds)


def stream_only(b):
    """Stops the page's polling (its fallback, every 5 s) until polling(b): a card that shows
    meanwhile came over the live stream, however long a loaded host took to bring it."""
    b.eval("stopPolling(); true")


def polling(b):
    b.eval("startPolling(); true")


def main():
    # ---- the page itself: public, strict, holding no data
    s, page, h = http("GET", "/console", None)
    check(s == 200 and "console.js" in page, "GET /console without credentials serves the page")
    csp = h.get("Content-Security-Policy", "")
    check("script-src 'self'" in csp and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp,
          "the page's Content-Security-Policy: " + csp)
    inline = re.findall(r"<script(?![^>]*\ssrc=)|<[^>]*\s(?:on\w+|style)\s*=|<style", page)
    check(not inline, f"no inline script, handler or style in the page {inline}")
    s, _, _ = http("GET", "/v1/audit", None)
    check(s == 401, "the audit route without a token: 401")
    s, _, _ = http("GET", "/v1/audit", CLIENT)
    check(s == 403, "the audit route with a client's token: 403")

    s, body, _ = http("POST", "/v1/sandboxes", CLIENT, {"language": "shell"})
    check(s == 201, "the client creates a sandbox")
    sb = json.loads(body)["sandbox_id"]

    b = Browser(os.environ["AL_PROFILE"])
    try:
        run(b, sb)
    finally:
        b.close()


def sign_in(b):
    b.goto(URL + "/console")
    check(b.wait("document.body.dataset.state === 'login'", 5) is True, "without a token the page asks for one")
    check(b.eval("document.getElementById('approvals').children.length") == 0, "and shows no approval")
    b.screenshot(os.path.join(SHOTS, "console-login.png"))
    b.eval(f"document.getElementById('token').value = {json.dumps(CLIENT)}; "
           "document.getElementById('login-form').requestSubmit(); true")
    check(b.wait("document.getElementById('login-error').textContent.includes('not an approver')", 5) is not None,
          "a client's token is refused: not an approver's")
    b.eval(f"document.getElementById('token').value = {json.dumps(REVIEWER)}; "
           "document.getElementById('login-form').requestSubmit(); true")
    check(b.wait("document.body.dataset.state === 'ready'", 5) is True, "the approver's token signs in")
    check(b.eval("sessionStorage.getItem('airlock.approver-token') !== null && document.cookie === ''"),
          "the token is in session storage, no cookie")


def step_approve(b, sb):
    """A pending call appears over the live stream, with the whole padded code and the marked pattern; approve runs it."""
    pad = " " * 3000
    code = f"echo approved-{M};{pad} touch approved-{M}.txt # \u202etxt.exe\nprint\tdone"
    stream_only(b)
    ex = Exec(sb, code)
    item, listed = pending(f"approved-{M}")
    check(item is not None, "the server lists the pending call")
    shown = card_of(b, item)
    lag = time.monotonic() - listed
    live = b.eval("document.body.dataset.live + ' ' + document.getElementById('approvals-status').textContent")
    check(shown is True, f"the page shows it with its polling stopped ({lag:.2f} s after the server listed it; stream: {live})")
    check(b.eval("document.body.dataset.live") == "sse",
          "it came on the live stream (polling, every 5 s, is only the fallback)")
    polling(b)
    sel = f"#approvals .card[data-id=\"{item['id']}\"]"
    text = b.eval(f"document.querySelector('{sel}').innerText")
    for want in ("token:alice", "code_execute", "HIGH", "asked", "none (loopback only)", item["digest"]):
        check(want in text, f"the card shows {want!r}")
    check(f"touch approved-{M}.txt" in text.replace("\n", ""), "the tail behind the padding is on the card")
    check("\u2423\u00d73001" in text, "the 3001-space run is shown and counted")
    check("\\u{202E}" in text, "the right-to-left override is spelled out")
    check("\u2192" in text, "the tab is visible")
    check(b.eval(f"document.querySelectorAll('{sel} td.ln').length") == 2, "two numbered lines")
    marks = b.eval(f"[...document.querySelectorAll('{sel} mark')].map(m => m.textContent)")
    check(marks == ["touch"], f"the rule's pattern is marked: {marks}")
    check(b.eval(f"/^[0-9]+:[0-9]{{2}}$/.test(document.querySelector('{sel} .countdown').textContent)"),
          "a countdown shows the time left")
    b.screenshot(os.path.join(SHOTS, "console-approvals.png"))
    b.viewport(390, 844, mobile=True, dark=True)
    b.screenshot(os.path.join(SHOTS, "console-approvals-phone-dark.png"))
    b.viewport(1200, 900)
    check(f"approved-{M}.txt" not in files(sb), "nothing ran before the decision")
    b.eval(f"document.querySelector('{sel} button.approve').click(); true")
    ex.join(60)
    check(ex.result is not None and ex.result[0] == 200 and f"approved-{M}" in ex.result[1],
          "clicking approve runs the call")
    check(f"approved-{M}.txt" in files(sb), "its side effect is there")


def step_deny(b, sb):
    """Deny, with the keyboard on the focused card; markup in the code stays text."""
    hostile = "<img src=x onerror=window.pwned=1><script>window.pwned=2</script>"
    # The stream drops (the page's own connection cut): the page reconnects and stays live.
    b.eval("state.live.abort(); true")
    check(b.wait("document.body.dataset.live === 'off'", 2) is True, "a dropped stream is noticed")
    check(b.wait("document.body.dataset.live === 'sse'", 5) is True, "and reconnected")
    stream_only(b)
    ex = Exec(sb, f"echo //example.com/x-{M} | cat; touch denied-{M}.txt # {hostile}")
    item, listed = pending(f"denied-{M}")
    shown = item is not None and card_of(b, item) is True
    lag = time.monotonic() - listed if listed else 99
    check(shown, f"a second call shows over the new stream, polling stopped ({lag:.2f} s)")
    polling(b)
    sel = f"#approvals .card[data-id=\"{item['id']}\"]"
    check(hostile in b.eval(f"document.querySelector('{sel} .code').textContent"), "markup in the code is shown as text")
    greyed = b.eval(f"[...document.querySelectorAll('{sel} .code .com')].map(e => e.textContent).join('')")
    check(greyed.startswith("#") and "example.com" not in greyed,
          f"shell: '//' is no comment, '#' at a word's start is ({greyed[:60]!r})")
    check(b.eval(f"document.querySelectorAll('{sel} img, {sel} script').length === 0 && window.pwned === undefined"),
          "and never becomes an element or runs")
    b.eval(f"document.querySelector('{sel}').focus(); true")
    b.key("d")
    ex.join(60)
    check(refused(ex.result), f"d denies the focused call ({ex.result and ex.result[1][-200:]})")
    check(b.eval(f"document.querySelector('{sel}') && document.querySelector('{sel}').dataset.outcome") in ("denied", None),
          "the card says denied")
    check(f"denied-{M}.txt" not in files(sb), "the denied call did not run")


def step_changed(b, sb):
    """A decision on a changed request is refused (the page holds another request's digest)."""
    ex = Exec(sb, f"touch changed-{M}.txt")
    item, _ = pending(f"changed-{M}")
    check(item is not None and card_of(b, item) is True, "a third call shows")
    sel = f"#approvals .card[data-id=\"{item['id']}\"]"
    b.eval(f"document.querySelector('{sel}').dataset.digest = 'sha256:' + '0'.repeat(64); "
           f"document.querySelector('{sel} button.approve').click(); true")
    check(b.wait(f"document.querySelector('{sel}').dataset.outcome === 'refused'", 5) is True,
          "approving a changed request is refused")
    check("changed" in b.eval(f"document.querySelector('{sel} .outcome').textContent"), "and the page says so")
    check(f"changed-{M}.txt" not in files(sb), "the changed request did not run")
    http("POST", f"/v1/approvals/{item['id']}", REVIEWER, {"approve": False})
    ex.join(60)


def step_timeout(b, sb):
    """Silence past the rule's timeout is a denial."""
    ex = Exec(sb, f"touch quick-{M}.txt")
    item, _ = pending(f"quick-{M}")
    check(item is not None and card_of(b, item) is True, "a call under a 10 s rule shows")
    sel = f"#approvals .card[data-id=\"{item['id']}\"]"
    left = b.eval(f"document.querySelector('{sel} .countdown').textContent")
    # Whatever a loaded host took to show the card, it shows the time left of the rule's 10 s
    # (the other rule's is 60 s), never 0:00 (an expired call reads "expired").
    check(left in [f"0:{n:02d}" for n in range(10, 0, -1)], f"its countdown counts down the rule's timeout ({left})")
    check(b.wait(f"!document.querySelector('{sel}')", 20) is True, "it leaves the page when it times out")
    ex.join(60)
    check(refused(ex.result) and '"status":"timed-out"' in ex.result[1], "the timed-out call was refused, its stream says timed-out")
    check(f"quick-{M}.txt" not in files(sb), "the timed-out call did not run")


def step_sandboxes(b, sb):
    """The sandboxes view: every principal's, with its cgroup's figures."""
    s, _, _ = http("GET", "/v1/admin/sandboxes", CLIENT)
    check(s == 403, "a client's token lists no other principal's sandboxes (403)")
    b.eval("document.querySelector('.tab[data-view=\"sandboxes\"]').click(); true")
    row = f"#sandboxes tr[data-id=\"{sb}\"]"
    cells = b.wait(f"document.querySelector('{row}') && [...document.querySelectorAll('{row} td')].map(t => t.textContent)", 5)
    check(bool(cells) and cells[1] == "token:alice" and cells[4].startswith("none"), f"the sandbox, its owner and network ({cells})")
    check(bool(cells) and cells[3] == "host", "its image: the host's system directories")
    check(bool(cells) and cells[9].endswith("iB") and cells[10].endswith("iB"), "its memory now and at peak")
    digest = os.environ["AL_IMAGE_DIGEST"]
    s, body, _ = http("POST", "/v1/sandboxes", CLIENT, {"profile": "imgs", "image": "bb"})
    check(s == 201, f"the client creates a sandbox on an image ({s} {body})")
    on_image = json.loads(body).get("sandbox_id", "") if s == 201 else ""
    cell = f"#sandboxes tr[data-id=\"{on_image}\"] td:nth-child(4)"
    shown = b.wait(f"document.querySelector('{cell}') && [document.querySelector('{cell}').textContent,"
                   f" document.querySelector('{cell}').title]", 5)
    check(bool(shown) and shown[0] == "bb " + digest[:19] + "\u2026" and shown[1] == digest,
          f"its image: the name and the digest ({shown})")
    http("DELETE", f"/v1/sandboxes/{on_image}", CLIENT)
    b.screenshot(os.path.join(SHOTS, "console-sandboxes.png"))


def step_terminals(b, sb):
    """The terminals view: a client's live terminal session, rendered by xterm.js for the approver, read-only."""
    s, body, _ = http("POST", f"/v1/sandboxes/{sb}/exec", CLIENT, {"pty": {"cols": 80, "rows": 24}})
    last = json.loads(body.strip().splitlines()[-1]) if s == 200 else {}
    pid = last.get("result", {}).get("process", {}).get("pid")
    check(bool(pid), f"the client starts a terminal session ({s} {body[-300:]})")
    # What the session prints, never what was typed: the typed line holds "%s", the output the marker.
    # Markup in the output must stay text.
    typed = f"printf 'seen-%s\\n' {M}; printf '<img src=x class=inj-{M}>\\n'\n"
    rq = urllib.request.Request(URL + f"/v1/sandboxes/{sb}/processes/{pid}/stdin", data=typed.encode(), method="POST")
    rq.add_header("Authorization", "Bearer " + CLIENT)
    with urllib.request.urlopen(rq, timeout=30) as r:
        check(r.status == 200, "the client types into its terminal")
    out = f"/v1/admin/sandboxes/{sb}/processes/{pid}/output?follow=false&encoding=base64"
    s, _, _ = http("GET", out, CLIENT)
    check(s == 403, f"a client's token cannot read a terminal through the approver's route ({s})")
    s, _, _ = http("GET", f"/v1/admin/sandboxes/{sb}/processes", CLIENT)
    check(s == 403, f"nor list the processes there ({s})")
    s, _, _ = http("GET", out, None)
    check(s == 401, f"nor can anybody without a token ({s})")
    s, _, _ = http("POST", f"/v1/admin/sandboxes/{sb}/processes/{pid}/stdin", REVIEWER, {})
    check(s in (404, 405), f"the approver's view has no stdin route ({s})")
    s, body, _ = http("GET", out, REVIEWER)
    check(s == 200 and '"encoding":"base64"' in body, f"the approver reads the terminal's bytes ({s})")

    b.eval("document.querySelector('.tab[data-view=\"terminals\"]').click(); true")
    item = f"#terminals li[data-key=\"{sb}/{pid}\"]"
    check(b.wait(f"!!document.querySelector('{item}')", 10) is True, "the terminals view lists the session")
    b.eval(f"document.querySelector('{item} button.watch').click(); true")
    rows = "document.querySelector('#terminal-screen .xterm-rows')"
    shown = b.wait(f"{rows} && {rows}.textContent.includes('seen-{M}')", 15)
    check(shown is True, "xterm.js renders the session's output in the page's terminal rows")
    check(b.eval(f"{rows}.children.length") == 24, "... on a terminal of the session's 24 rows")
    check(b.eval(f"{rows}.children[0].getBoundingClientRect().height > 5 && "
                 f"{rows}.getBoundingClientRect().width > 300") is True,
          "... laid out by its own styles under the page's policy")
    check(b.wait(f"{rows}.textContent.includes('<img src=x class=inj-{M}>')", 5) is True
          and b.eval(f"!document.querySelector('.inj-{M}')") is True, "markup in the output stays text")
    s, _, _ = http("POST", f"/v1/sandboxes/{sb}/processes/{pid}/resize", CLIENT, {"cols": 100, "rows": 30})
    check(s == 200, "the client resizes its terminal")
    check(b.wait(f"{rows}.children.length === 30", 10) is True, "the watched terminal follows the new size")
    b.screenshot(os.path.join(SHOTS, "console-terminals.png"))
    http("DELETE", f"/v1/sandboxes/{sb}/processes/{pid}", CLIENT)
    b.eval("document.querySelector('.tab[data-view=\"sandboxes\"]').click(); true")


def sleepers(tag):
    """Host pids of the processes running `sleep TAG` (a sandbox's exec, seen from outside)."""
    want = b"sleep\0" + tag.encode() + b"\0"
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open(f"/proc/{p}/cmdline", "rb").read() == want:
                found.append(int(p))
        except OSError:
            pass
    return found


def step_pause(b, sb):
    """The approver pauses another principal's sandbox from its row and resumes it; the owner's info agrees."""
    s, body, _ = http("POST", "/v1/sandboxes", CLIENT, {})
    check(s == 201, "the client creates a sandbox to pause")
    held = json.loads(body)["sandbox_id"]
    s, _, _ = http("POST", f"/v1/admin/sandboxes/{held}/pause", CLIENT)
    check(s == 403, f"a client's token cannot pause through the admin route ({s})")
    row = f"#sandboxes tr[data-id=\"{held}\"]"
    check(b.wait(f"!!document.querySelector('{row} button.pause')", 5) is True, "its row has a Pause button")
    b.eval(f"document.querySelector('{row} button.pause').click(); true")
    check(b.wait(f"document.body.dataset.paused === '{held}:pause:200'", 10) is True, "Pause pauses it")
    check(b.wait(f"!!document.querySelector('{row} td.paused') && !!document.querySelector('{row} button.resume')", 5) is True,
          "the row shows it paused, with a Resume button")
    s, body, _ = http("GET", f"/v1/sandboxes/{held}", CLIENT)
    info = json.loads(body) if s == 200 else {}
    check(info.get("state") == "paused" and str(info.get("paused_by", "")).startswith("approver "),
          f"the owner sees it paused by an approver ({info.get('state')}, {info.get('paused_by')})")
    b.eval(f"document.querySelector('{row} button.resume').click(); true")
    check(b.wait(f"document.body.dataset.paused === '{held}:resume:200'", 10) is True, "Resume resumes it")
    s, body, _ = http("GET", f"/v1/sandboxes/{held}", CLIENT)
    check(s == 200 and json.loads(body).get("state") == "running", "the owner sees it running again")
    # To disk: its processes released, its files kept; the row says so, and Resume makes it again.
    # Enabled: the row the Resume disabled stays until the list's refresh replaces it, and a click on
    # its disabled button would do nothing.
    check(b.wait(f"!!document.querySelector('{row} button.todisk:not([hidden]):not([disabled])')", 5) is True,
          "a kept sandbox's row has To disk")
    b.eval(f"document.querySelector('{row} button.todisk').click(); true")
    check(b.wait(f"document.body.dataset.paused === '{held}:disk:200'", 10) is True, "To disk pauses it to disk")
    check(b.wait(f"!!document.querySelector('{row} td.ondisk') && !!document.querySelector('{row} button.resume')", 5) is True,
          "the row shows it on disk, with a Resume button")
    b.eval(f"document.querySelector('{row} button.resume').click(); true")
    check(b.wait(f"document.body.dataset.paused === '{held}:resume:200'", 30) is True, "Resume makes it again")
    check(b.wait(f"!document.querySelector('{row} td.ondisk') && !document.querySelector('{row} td.paused')", 5) is True,
          "the row shows it running again")
    http("DELETE", f"/v1/sandboxes/{held}", CLIENT)


def step_kept(b, sb):
    """The sandboxes view says which sandboxes are kept on disk and lists every principal's snapshots;
    the approver deletes one from its row (confirmed), for its owner, through the runner."""
    s, body, _ = http("POST", "/v1/sandboxes", CLIENT, {})
    check(s == 201, "the client creates a sandbox to snapshot")
    kept = json.loads(body)["sandbox_id"]
    s, _, _ = http("POST", f"/v1/sandboxes/{kept}/exec", CLIENT, {"language": "shell", "code": "head -c 300000 /dev/urandom >kept.bin"})
    check(s == 200, "the client writes a file in it")
    cell = f"#sandboxes tr[data-id=\"{kept}\"] td.kept"
    shown = b.wait(f"document.querySelector('{cell}') && document.querySelector('{cell}').textContent", 10)
    check(bool(shown) and re.fullmatch(r"(29[0-9]|30[0-9]) KiB of 1\.0 GiB", shown or "") is not None,
          f"its row says it is kept, what its files hold on disk of its disk limit ({shown})")
    status = b.wait("/kept on disk/.test(document.getElementById('sandboxes-summary').textContent) && "
                    "document.getElementById('sandboxes-summary').textContent", 5)
    check(bool(status) and re.search(r"\d+ live: \d+ running, \d+ paused \(\d+ to disk\); \d+ kept on disk", status or "") is not None,
          f"the view counts the running, paused and kept sandboxes ({status})")
    s, body, _ = http("POST", f"/v1/sandboxes/{kept}/snapshots", CLIENT, {"name": f"console-{M}"})
    check(s == 201, f"the client snapshots it ({s})")
    snap = json.loads(body).get("snapshot_id", "") if s == 201 else ""
    s, _, _ = http("GET", "/v1/admin/snapshots", CLIENT)
    check(s == 403, f"a client's token lists no other principal's snapshots ({s})")
    row = f"#snapshots tr[data-id=\"{snap}\"]"
    cells = b.wait(f"document.querySelector('{row}') && [...document.querySelectorAll('{row} td')].map(t => t.textContent)", 10)
    check(bool(cells) and cells[1] == f"console-{M}" and cells[2] == "token:alice" and cells[3] == kept and cells[4].endswith("KiB"),
          f"the snapshot's row: its name, owner, sandbox and bytes ({cells})")
    b.screenshot(os.path.join(SHOTS, "console-snapshots.png"))
    b.eval(f"document.querySelector('{row} button.destroy').click(); true")
    check(b.wait(f"!!document.querySelector('{row} button.confirm')", 5) is True, "Delete asks first")
    b.eval(f"document.querySelector('{row} button.confirm').click(); true")
    check(b.wait(f"document.body.dataset.snapdeleted === '{snap}:200'", 10) is True, "Delete it deletes it")
    check(b.wait(f"!document.querySelector('{row}')", 5) is True, "its row is gone")
    s, _, _ = http("GET", f"/v1/snapshots/{snap}", CLIENT)
    check(s == 404, f"the owner's snapshot is gone ({s})")
    s, body, _ = http("GET", "/v1/audit?tool=code_delete_snapshot", REVIEWER)
    recs = [r for r in json.loads(body)["records"] if snap in json.dumps(r)] if s == 200 else []
    check(any("reviewer" in json.dumps(r) and "alice" in json.dumps(r) for r in recs),
          f"the audit log names the approver and the owner ({len(recs)} records)")
    http("DELETE", f"/v1/sandboxes/{kept}", CLIENT)


def step_destroy(b, sb):
    """The approver destroys another principal's sandbox from its row: confirm, keyboard, gone."""
    s, body, _ = http("POST", "/v1/sandboxes", CLIENT, {"language": "shell"})
    check(s == 201, "the client creates a second sandbox")
    victim = json.loads(body)["sandbox_id"]
    tag = f"{300 + os.getpid() % 97}.{int(time.time() * 1000) % 100000}"
    ex = Exec(victim, f"sleep {tag}")
    for _ in range(200):
        if sleepers(tag):
            break
        time.sleep(0.05)
    check(bool(sleepers(tag)), f"an exec runs in it (sleep {tag}, seen on the host)")
    s, _, _ = http("DELETE", f"/v1/admin/sandboxes/{victim}", CLIENT)
    check(s == 403, f"a client's token cannot destroy through the admin route ({s})")
    s, _, _ = http("DELETE", f"/v1/admin/sandboxes/{victim}x", REVIEWER)
    check(s == 404, f"an unknown id: 404 ({s})")
    row = f"#sandboxes tr[data-id=\"{victim}\"]"
    check(b.wait(f"!!document.querySelector('{row} button.destroy')", 5) is True, "its row has a Destroy button")
    b.eval(f"document.querySelector('{row} button.destroy').focus(); true")
    b.key("Enter")
    check(b.wait(f"document.activeElement === document.querySelector('{row} button.confirm')", 3) is True,
          "Destroy asks first, the focus on the confirming button")
    b.key("Escape")
    check(b.wait(f"!!document.querySelector('{row} button.destroy')", 5) is True, "Escape takes it back")
    check(bool(sleepers(tag)), "and nothing was destroyed")
    b.eval(f"document.querySelector('{row} button.destroy').focus(); true")
    b.key("Enter")
    check(b.wait(f"document.activeElement === document.querySelector('{row} button.confirm')", 3) is True, "asked again")
    b.screenshot(os.path.join(SHOTS, "console-destroy.png"))
    b.key("Enter")
    check(b.wait(f"!document.querySelector('{row}') && document.body.dataset.destroyed === '{victim}:200'", 10) is True,
          "Enter on the confirmation destroys it: the row leaves")
    ex.join(30)
    check(ex.result is not None, "the exec it ran ended")
    gone = False
    for _ in range(100):
        if not sleepers(tag):
            gone = True
            break
        time.sleep(0.05)
    check(gone, "no process of it remains on the host")
    s, _, _ = http("GET", f"/v1/sandboxes/{victim}/files", CLIENT)
    check(s == 404, f"its owner finds it gone ({s})")
    check(b.eval(f"!!document.querySelector('#sandboxes tr[data-id=\"{sb}\"]')"), "the other sandbox stays")
    s, body, _ = http("GET", "/v1/audit?tool=code_destroy_sandbox", REVIEWER)
    recs = [r for r in json.loads(body)["records"] if r.get("sandbox") == victim] if s == 200 else []
    both = [r for r in recs if r["client"]["principal"] == "token:reviewer" and r["client"].get("on_behalf_of") == "token:alice"]
    check(len(both) == 2 and {r["event"] for r in both} == {"start", "end"} and
          all(r["result"]["status"] in ("started", "ok") for r in both),
          f"its audit records name the approver and the owner ({recs})")


def step_audit(b, sb):
    """The audit view finds the decision."""
    b.eval("document.querySelector('.tab[data-view=\"audit\"]').click(); true")
    b.eval("{ const f = document.getElementById('audit-form'); f.elements.decision.value = 'approved';"
           "f.elements.tool.value = 'code_execute'; f.requestSubmit(); true }")
    # The filtered list replaces the unfiltered one when its fetch returns: wait for that list.
    found = b.wait("(() => { const ds = [...document.querySelectorAll('#audit details')];"
                   " return ds.length && ds.every(d => d.dataset.decision === 'approved')"
                   " && ds.filter(d => d.dataset.by === 'http').length; })()", 5)
    check(bool(found), f"the audit view lists the approved call ({found})")
    b.eval("{ const d = [...document.querySelectorAll('#audit details')].find(d => d.dataset.by === 'http'); d.open = true; true }")
    detail = b.eval("[...document.querySelectorAll('#audit details[open] pre')].map(p => p.textContent).join('')")
    check(f"approved-{M}" in detail and "token:reviewer" in detail, "its record expands to JSON naming the approver")
    check(b.eval("[...document.querySelectorAll('#audit details')].every(d => d.dataset.decision === 'approved')"),
          "the decision filter holds")
    b.screenshot(os.path.join(SHOTS, "console-audit.png"))
    b.eval("{ const f = document.getElementById('audit-form'); f.elements.decision.value = 'denied';"
           "f.elements.tool.value = ''; f.requestSubmit(); true }")
    check(b.wait("[...document.querySelectorAll('#audit details')].some(d => d.dataset.by === 'timeout')", 5) is True,
          "the denied filter finds the timeout")


def step_audit_route(b, sb):
    """The audit route's filters, from outside."""
    s, body, _ = http("GET", "/v1/audit?since=2999-01-01T00:00:00.000Z", REVIEWER)
    check(s == 200 and json.loads(body)["records"] == [], "no record since a future time")
    s, body, _ = http("GET", "/v1/audit?principal=token:alice&limit=2", REVIEWER)
    recs = json.loads(body)["records"] if s == 200 else []
    check(len(recs) == 2 and all(r["client"]["principal"] == "token:alice" for r in recs), "limit and principal hold")
    s, _, _ = http("GET", "/v1/audit?limit=0", REVIEWER)
    check(s == 400, "limit 0 is refused")


def step_forwarder(b, sb):
    """`airlock console`: the URL it printed signs the page in as the socket's uid, live."""
    url, uid = os.environ["AL_FWD_URL"], os.environ["AL_UID"]
    b.goto(url)
    check(b.wait("document.body.dataset.state === 'ready' && document.body.dataset.live === 'sse'", 5) is True,
          "the forwarder's URL signs in, live, with no token typed")
    check(b.eval("location.hash") == "" and b.eval("sessionStorage.getItem('airlock.approver-token')") == url.split("#token=")[1],
          "its token moved from the address bar into the tab's session storage")
    stream_only(b)
    ex = Exec(sb, f"touch forwarded-{M}.txt")
    item, listed = pending(f"forwarded-{M}")
    shown = item is not None and card_of(b, item) is True
    lag = time.monotonic() - listed if listed else 99
    check(shown, f"a pending call shows over the live stream through the forwarder, polling stopped ({lag:.2f} s)")
    polling(b)
    sel = f"#approvals .card[data-id=\"{item['id']}\"]" if item else "#none"
    b.eval(f"document.querySelector('{sel} button.approve').click(); true")
    ex.join(60)
    check(ex.result is not None and ex.result[0] == 200, "approved as the socket's uid: it ran")
    s, body, _ = http("GET", "/v1/audit?tool=code_execute&decision=approved", REVIEWER)
    recs = [r for r in json.loads(body)["records"] if f"forwarded-{M}" in json.dumps(r)] if s == 200 else []
    check(any(r["approval"]["approver"] == f"uid:{uid}" for r in recs), f"the audit log names uid:{uid} as the approver")


def run(b, sb):
    sign_in(b)
    step_approve(b, sb)
    step_deny(b, sb)
    step_changed(b, sb)
    step_timeout(b, sb)
    step_sandboxes(b, sb)
    step_terminals(b, sb)
    step_pause(b, sb)
    step_kept(b, sb)
    step_destroy(b, sb)
    step_audit(b, sb)
    step_audit_route(b, sb)
    step_forwarder(b, sb)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a driver failure is a test failure, never a skip
        failures.append(repr(e))
        print("FAIL " + repr(e), flush=True)
    sys.exit(1 if failures else 0)
