# SPDX-License-Identifier: GPL-2.0-only
"""A small Chrome DevTools Protocol client over a websocket, Python standard library only: starts
Debian's headless chromium, opens a page, evaluates JavaScript, sends keys, takes screenshots."""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request


class Chromium:
    def __init__(self, width=1400, height=900):
        self.dir = tempfile.mkdtemp(prefix="rp-views-chromium.")
        args = [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--allow-file-access-from-files", "--remote-debugging-port=0",
                "--user-data-dir=" + self.dir, "--window-size=%d,%d" % (width, height),
                "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.dir, "DevToolsActivePort")
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        self.port = int(open(port_file).read().split()[0])
        pages = []
        while not pages:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % self.port) as r:
                pages = [p for p in json.load(r) if p.get("type") == "page"]
            if not pages:
                if time.time() > deadline:
                    raise RuntimeError("chromium has no page")
                time.sleep(0.1)
        self.sock = self._connect(pages[0]["webSocketDebuggerUrl"])
        self.next_id = 0

    def _connect(self, url):
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        s = socket.create_connection((host, int(port)), timeout=120)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                   % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1)
            if not chunk:
                raise RuntimeError("websocket handshake failed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: %r" % head)
        return s

    def _send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            hdr = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(hdr + mask + masked)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("websocket closed")
            buf += chunk
        return buf

    def _recv(self):
        msg = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack("!H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            op = b0 & 0x0f
            if op == 8:
                raise RuntimeError("websocket closed by chromium")
            if op in (0, 1, 2):
                msg += payload
                if b0 & 0x80:
                    return msg.decode()

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self._send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            m = json.loads(self._recv())
            if m.get("id") == my:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("JS error in %s: %s" % (expr[:80], r["exceptionDetails"]))
        return r["result"].get("value")

    def open(self, url, ready_expr, timeout=120):
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        deadline = time.time() + timeout
        while True:
            try:
                if self.eval(ready_expr):
                    return
            except RuntimeError:
                pass
            if time.time() > deadline:
                raise RuntimeError("page %s: not ready (%s) after %d s" % (url, ready_expr, timeout))
            time.sleep(0.2)

    def key(self, key, code, vk):
        for t in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=t, key=key, code=code, text=key if t == "keyDown" else "",
                      windowsVirtualKeyCode=vk)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
