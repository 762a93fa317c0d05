"""registry.py DIR ADDR — a tiny package registry over HTTPS on ADDR:443 (run in a network namespace
the test made): a PyPI "simple" index page for airlock-demo whose link points at
files.pythonhosted.org, and the wheel itself, as pip fetches them. DIR holds srv.pem, srv.key and
the wheel; each request path is appended to DIR/registry.log."""
import hashlib
import http.server
import os
import ssl
import sys

root, addr = sys.argv[1], sys.argv[2]
WHEEL = "airlock_demo-1.0-py3-none-any.whl"
wheel = open(os.path.join(root, WHEEL), "rb").read()
digest = hashlib.sha256(wheel).hexdigest()
PAGE = ('<!DOCTYPE html><html><body><a href="https://files.pythonhosted.org/packages/%s#sha256=%s">%s</a>'
        '</body></html>\n' % (WHEEL, digest, WHEEL)).encode()


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        with open(os.path.join(root, "registry.log"), "a") as f:
            f.write("%s %s\n" % (host, self.path))
        if host == "pypi.org" and self.path.rstrip("/") == "/simple/airlock-demo":
            body, kind = PAGE, "text/html"
        elif host == "files.pythonhosted.org" and self.path == "/packages/" + WHEEL:
            body, kind = wheel, "application/octet-stream"
        else:
            body, kind = b"not here\n", "text/plain"
            self.send_response(404)
        if kind != "text/plain":
            self.send_response(200)
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
