"""serverfile.py — escape case: links planted in a sandbox's workspace, then the server's file API
asked to follow them out. Usage: serverfile.py SECRET VICTIM_DIR AUDIT -- AIRLOCK_COMMAND...
Judged from outside: the secret's marker never appears in any answer, the victim dir is unchanged."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Client  # noqa: E402

secret, victim, audit = sys.argv[1], sys.argv[2], sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]
marker = open(secret).read().strip()
before = sorted(os.listdir(victim))
bad = []

c = Client(cmd + ["mcp", "--audit", audit])
c.initialize()
sb = c.call("code_create_sandbox", {})["result"]["structuredContent"]["sandbox_id"]
plant = f"""
ln -s {secret} leak-file; ln -s {os.path.dirname(secret)} leak-dir; ln -s ../../.. up
ln -s /proc/1/root p1root; ln -s /proc/self/root selfroot; ln -s {victim} victim
mkdir sub; ln -s ../../../../../../{secret} sub/rel-leak; echo ok > plain.txt
"""
r = c.call("code_execute", {"sandbox_id": sb, "language": "shell", "code": plant})
print("planted:", json.dumps(r["result"].get("structuredContent", {}).get("stderr")), file=sys.stderr)
name = os.path.basename(secret)
reads = ["leak-file", "leak-dir/" + name, "up" + secret, "p1root" + secret, "selfroot" + secret, "sub/rel-leak",
         "../../../../../../" + secret.lstrip("/"), secret, "/workspace/../" + secret.lstrip("/")]
for path in reads:
    r = c.call("code_read_file", {"sandbox_id": sb, "path": path})
    if marker in json.dumps(r) or not r["result"].get("isError"):
        bad.append("read_file " + path)
for path in ["leak-dir", "up", "p1root", "selfroot", "victim", "up/tmp"]:
    r = c.call("code_list_files", {"sandbox_id": sb, "path": path})
    if not r["result"].get("isError") or name in json.dumps(r):
        bad.append("list_files " + path)
for path in ["victim/pwned", "leak-file", "up" + victim + "/pwned", "p1root" + victim + "/pwned"]:
    r = c.call("code_write_file", {"sandbox_id": sb, "path": path, "content": "pwned"})
    if not r["result"].get("isError"):
        bad.append("write_file " + path)
# Control: the API does serve a plain file, so the refusals above are real.
r = c.call("code_read_file", {"sandbox_id": sb, "path": "plain.txt"})
control = "ok" in json.dumps(r["result"].get("structuredContent", {}))
c.close()
after = sorted(os.listdir(victim))
if open(secret).read().strip() != marker:
    bad.append("the secret changed")
if after != before:
    bad.append("the victim dir changed: %s" % after)
for b in bad:
    print("FAIL: followed out of the workspace: " + b, file=sys.stderr)
print(("ok" if control else "FAIL") + ": control: a plain file is served", file=sys.stderr)
sys.exit(1 if bad or not control else 0)
