"""install.py — code_install_package end to end against registries the test serves (registry.py, in a
network namespace of its own, reached through the egress proxy under the names pypi.org,
files.pythonhosted.org and registry.npmjs.org), with pip and with npm: an agent that never names a sandbox installs a package into its session's
sandbox, and a later code_execute imports it; without a route to the registry the same install
fails at once, saying why.

With TLS_CONFIG (the registries' entries with request rules, so that airlock terminates their
TLS, and the test CA as network.upstream-ca), the installs again, and their results name each
package file fetched by the SHA-256 of the bytes the registry served (registry.py's
served.sha256); through a tunnel (CONFIG) they name none and count the connections unseen.

Usage: install.py WORKDIR CONFIG MARKER [TLS_CONFIG] -- AIRLOCK_COMMAND...
(WORKDIR holds ca.pem, the test CA that signed the registry's certificate, and registry.log.)"""
import json
import os
import sys
import time

from client import Client, check, finish, structured as sc, succeeded as ok

work, config, mark = sys.argv[1], sys.argv[2], sys.argv[3]
tls_config = sys.argv[4] if sys.argv[4] != "--" else None
cmd = sys.argv[sys.argv.index("--") + 1:]
def mcp(profile=None, conf=None):
    extra = ["--profile", profile] if profile else []
    c = Client(cmd + ["mcp", "--config", conf or config, "--audit", os.path.join(work, "audit.jsonl")] + extra,
               elicit=False)
    c.initialize()
    return c


# The sandbox's profile allows the pypi registry's names; pip trusts the test CA through its user
# configuration in the workspace (HOME), which the agent writes like any file.
c = mcp("untrusted-code-write")
try:
    r = c.call("code_write_file", {"path": "test-ca.pem", "content": open(os.path.join(work, "ca.pem")).read()})
    check(ok(r), "the test CA written into the session's sandbox")
    r = c.call("code_write_file", {"path": ".config/pip/pip.conf", "content": "[global]\ncert = /workspace/test-ca.pem\n"})
    check(ok(r), "pip's user configuration written")
    r = c.call("code_install_package", {"manager": "pip", "packages": ["airlock-demo"]}, timeout=300)
    check(ok(r) and sc(r).get("exit_code") == 0, "pip install airlock-demo through the proxy (%s)" % json.dumps(sc(r))[:1500])
    check(sc(r).get("fetched") == [] and sc(r).get("fetched_unseen", 0) >= 1,
          "through a tunnel the result names no file and counts what it could not see (%r, %r)"
          % (sc(r).get("fetched"), sc(r).get("fetched_unseen")))
    log = open(os.path.join(work, "registry.log")).read() if os.path.exists(os.path.join(work, "registry.log")) else ""
    check("pypi.org /simple/airlock-demo/" in log and "files.pythonhosted.org /packages/airlock_demo-1.0" in log,
          "the registry served the index page and the wheel: %r" % log)
    r = c.call("code_execute", {"language": "python", "code": "import airlock_demo; print(airlock_demo.MARK)"})
    check(ok(r) and sc(r).get("stdout") == mark + "\n", "a later code_execute imports the package (%s)" % json.dumps(sc(r))[:600])
    # npm: the package document and its tarball, the test CA through the user's .npmrc.
    r = c.call("code_write_file", {"path": ".npmrc", "content": "cafile=/workspace/test-ca.pem\n"})
    check(ok(r), "npm's user configuration written")
    r = c.call("code_install_package", {"manager": "npm", "packages": ["airlock-demo"]}, timeout=300)
    check(ok(r) and sc(r).get("exit_code") == 0, "npm install airlock-demo through the proxy (%s)" % json.dumps(sc(r))[:1500])
    r = c.call("code_execute", {"language": "javascript", "code": "console.log(require('airlock-demo').MARK)"})
    check(ok(r) and sc(r).get("stdout") == mark + "\n", "a later code_execute requires the npm package (%s)" % json.dumps(sc(r))[:600])
    log = open(os.path.join(work, "registry.log")).read()
    check("registry.npmjs.org /airlock-demo\n" in log and "registry.npmjs.org /airlock-demo/-/airlock-demo-1.0.0.tgz" in log,
          "the registry served the package document and the tarball: %r" % log)
finally:
    check(c.close() == 0, "airlock mcp exits 0")

# The registries' TLS terminated at airlock: each package file fetched, named by its digest.
if tls_config:
    served = dict(line.split() for line in open(os.path.join(work, "served.sha256")))
    c = mcp("untrusted-code-write", tls_config)
    try:
        for manager, want in (("pip", {"name": "airlock_demo", "version": "1.0", "host": "files.pythonhosted.org",
                                       "file": "airlock_demo-1.0-py3-none-any.whl"}),
                              ("npm", {"name": "airlock-demo", "version": "1.0.0", "host": "registry.npmjs.org",
                                       "file": "airlock-demo-1.0.0.tgz"})):
            want["sha256"] = served[want["file"]]
            r = c.call("code_install_package", {"manager": manager, "packages": ["airlock-demo"]}, timeout=300)
            check(ok(r) and sc(r).get("exit_code") == 0,
                  "%s install with the registry's TLS terminated at airlock (%s)" % (manager, json.dumps(sc(r))[:1500]))
            got = sc(r).get("fetched") or []
            check(any(all(f.get(k) == v for k, v in want.items()) for f in got) and len(got) == 1,
                  "%s: the result names the one package file fetched by the digest of what was served (%r)" % (manager, got))
            check(sc(r).get("fetched_unseen") == 0, "%s: nothing went by unseen (%r)" % (manager, sc(r).get("fetched_unseen")))
        r = c.call("code_execute", {"language": "python", "code": "import airlock_demo; print(airlock_demo.MARK)"})
        check(ok(r) and sc(r).get("stdout") == mark + "\n", "the package fetched through terminated TLS imports (%s)"
              % json.dumps(sc(r))[:600])
    finally:
        check(c.close() == 0, "airlock mcp exits 0")

# No route: the default profile has no network; the install says so at once (pip would retry).
c = mcp()
try:
    for manager in ("pip", "npm"):
        t0 = time.time()
        r = c.call("code_install_package", {"manager": manager, "packages": ["airlock-demo"]}, timeout=60)
        took = time.time() - t0
        text = json.dumps(r)
        check(r["result"].get("isError") is True and "no network" in text and took < 10,
              "%s without a route fails at once (%.1f s): %s" % (manager, took, text[:300]))
finally:
    check(c.close() == 0, "airlock mcp exits 0")
finish()
