#!/usr/bin/env python3
"""https_upstream.py DIR ADDR — the tests' HTTPS upstream host (tls.sh, serve_secrets.sh,
broker_hosts.sh), run in a network namespace the test made, on ADDR:443 with DIR/srv.pem and
DIR/srv.key (al_test_certs): what a request brought is appended to DIR/up.log as

    HOST REQUEST-LINE
    Header: value          (each header as it came, one a line)
    body: BODY
    --

and the answer is the request's headers for a path ending in /echo, else "hello PATH". GET, POST
and HEAD alike; DIR/up.ready is written once it listens."""
import http.server
import ssl
import sys

d, addr = sys.argv[1], sys.argv[2]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        seen = "".join("%s: %s\n" % kv for kv in self.headers.items())
        with open(d + "/up.log", "a") as f:
            f.write("%s %s\n%sbody: %s\n--\n" % (self.headers.get("Host"), self.requestline, seen,
                                                  body.decode(errors="replace")))
        out = (seen if self.path.endswith("/echo") else "hello %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_POST = do_HEAD = do_GET

    def log_message(self, *a):
        pass


s = http.server.ThreadingHTTPServer((addr, 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/srv.pem", d + "/srv.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(d + "/up.ready", "w").write("ok\n")
s.serve_forever()
