"""cdp.py — the tests' own small driver of headless Chromium over the DevTools protocol (a WebSocket client written here, no library)."""
import base64
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request


class WebSocket:
    """A client WebSocket (RFC 6455): text frames out (masked, as a client must), frames in."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError("DevTools refused the WebSocket: " + head.decode(errors="replace"))

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            buf += chunk
        return buf

    def send(self, text):
        data = text.encode()
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else None
            data = self._exact(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise RuntimeError("DevTools closed the WebSocket")
            if opcode in (0x9, 0xA):  # ping, pong: not part of a message
                continue
            message += data
            if b0 & 0x80:
                return message.decode()


class Browser:
    """Headless Chromium with one page, driven by Runtime.evaluate and Input events."""

    def __init__(self, profile_dir, width=1200, height=900):
        binary = next((b for b in ("chromium", "chromium-browser") if _which(b)), None)
        if not binary:
            raise RuntimeError("chromium is not installed (scripts/deps.sh installs it)")
        os.makedirs(profile_dir, exist_ok=True)
        port_file = os.path.join(profile_dir, "DevToolsActivePort")
        if os.path.exists(port_file):
            os.unlink(port_file)
        # --no-sandbox: the tests run as root, where Chromium's own sandbox will not start; the
        # page it loads is ours, from a server on loopback.
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--user-data-dir={profile_dir}", f"--window-size={width},{height}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile_dir, "chromium.log"), "w"))
        for _ in range(300):
            if os.path.exists(port_file) and len(open(port_file).read().split()) >= 2:
                break
            time.sleep(0.1)
        else:
            self.close()
            raise RuntimeError("chromium did not open its DevTools port")
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t.get("type") == "page")
        path = page["webSocketDebuggerUrl"].split(f":{port}", 1)[1]
        self.ws = WebSocket("127.0.0.1", port, path)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {expression}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def goto(self, url):
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && document.body && document.body.dataset.state !== 'loading'", 10)

    def wait(self, expression, seconds, step=0.02):
        """Polls expression until it is truthy; returns its value, or None after seconds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            v = self.eval(expression)
            if v:
                return v
            time.sleep(step)
        return None

    # Keys that are not characters: their code and what a keyDown types (Enter activates a button).
    SPECIAL = {"Enter": (13, "\r"), "Escape": (27, ""), "Tab": (9, "")}

    def key(self, key):
        code, text = self.SPECIAL.get(key, (0, key))
        for kind in ("keyDown", "keyUp"):
            extra = {"windowsVirtualKeyCode": code, "code": key} if code else {}
            self.call("Input.dispatchKeyEvent", type=kind, key=key, text=text if kind == "keyDown" else "", **extra)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def viewport(self, width, height, mobile=False, dark=False):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)
        self.call("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}])

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _which(name):
    return any(os.access(os.path.join(d, name), os.X_OK) for d in os.environ.get("PATH", "/usr/bin").split(":"))
