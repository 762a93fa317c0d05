"""registry.py DIR ADDR MARK — tiny package registries over HTTPS on ADDR:443 (run in a network
namespace the test made): for pip, a PyPI "simple" index page for airlock-demo whose link points at
files.pythonhosted.org, and the wheel itself; for npm, the package document of airlock-demo on
registry.npmjs.org and its tarball (module.exports.MARK = MARK). DIR holds srv.pem, srv.key and the
wheel; each request's host and path is appended to DIR/registry.log."""
import base64
import hashlib
import http.server
import io
import json
import os
import ssl
import sys
import tarfile

root, addr, mark = sys.argv[1], sys.argv[2], sys.argv[3]
WHEEL = "airlock_demo-1.0-py3-none-any.whl"
wheel = open(os.path.join(root, WHEEL), "rb").read()
digest = hashlib.sha256(wheel).hexdigest()
PAGE = ('<!DOCTYPE html><html><body><a href="https://files.pythonhosted.org/packages/%s#sha256=%s">%s</a>'
        '</body></html>\n' % (WHEEL, digest, WHEEL)).encode()



def npm_tarball():
    out = io.BytesIO()
    files = {"package/package.json": json.dumps({"name": "airlock-demo", "version": "1.0.0", "main": "index.js"}),
             "package/index.js": "module.exports = { MARK: %s };\n" % json.dumps(mark)}
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


TGZ = npm_tarball()
# What was served, file by file, for the install's provenance (install.py compares).
with open(os.path.join(root, "served.sha256"), "w") as f:
    f.write("%s %s\nairlock-demo-1.0.0.tgz %s\n" % (WHEEL, digest, hashlib.sha256(TGZ).hexdigest()))
DOC = json.dumps({"name": "airlock-demo", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
    "name": "airlock-demo", "version": "1.0.0", "main": "index.js", "dist": {
        "tarball": "https://registry.npmjs.org/airlock-demo/-/airlock-demo-1.0.0.tgz",
        "shasum": hashlib.sha1(TGZ).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(TGZ).digest()).decode()}}}}).encode()
FILES = {
    ("pypi.org", "/simple/airlock-demo/"): (PAGE, "text/html"),
    ("files.pythonhosted.org", "/packages/" + WHEEL): (wheel, "application/octet-stream"),
    ("registry.npmjs.org", "/airlock-demo"): (DOC, "application/json"),
    ("registry.npmjs.org", "/airlock-demo/-/airlock-demo-1.0.0.tgz"): (TGZ, "application/octet-stream"),
}


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        with open(os.path.join(root, "registry.log"), "a") as f:
            f.write("%s %s\n" % (host, self.path))
        body, kind = FILES.get((host, self.path), (None, "text/plain"))
        self.send_response(200 if body is not None else 404)
        body = body if body is not None else b"not here\n"
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer((addr, 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(root, "srv.pem"), os.path.join(root, "srv.key"))
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(os.path.join(root, "registry.ready"), "w").write("ok\n")
srv.serve_forever()
