"""A bare websocket client over a plain socket, for tests that talk to a real web server
(``AppServer``): the handshake, reading frames, and the close code the server sends. Enough of
RFC 6455 for that and no more (no extensions, no client messages)."""

from __future__ import annotations

import base64
import os
import socket
import struct
import time


class WsClosed(Exception):
    pass


class RawSocket:
    def __init__(self, port: int, path: str, *, cookie: str = "", origin: str | None = None, timeout: float = 10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        origin = origin or f"http://127.0.0.1:{port}"
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n"
            + (f"Cookie: {cookie}\r\n" if cookie else "")
            + "\r\n"
        )
        self.sock.sendall(request.encode())
        self.buffer = b""
        head = self._read_until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WsClosed("the server closed the connection")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _read_exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WsClosed("the server closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def frame(self) -> tuple[int, bytes]:
        """The next frame from the server: (opcode, payload)."""
        first, second = self._read_exactly(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read_exactly(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read_exactly(8))[0]
        return first & 0x0F, self._read_exactly(length)

    def close_code(self, within: float = 10) -> int | None:
        """The code of the close frame the server sends within ``within`` seconds (text frames
        before it are skipped); None when none came."""
        deadline = time.monotonic() + within
        self.sock.settimeout(within)
        try:
            while time.monotonic() < deadline:
                opcode, payload = self.frame()
                if opcode == 0x8:
                    return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
        except (TimeoutError, WsClosed):
            return None
        return None

    def close(self) -> None:
        try:
            self.sock.sendall(_masked_close())
        except OSError:
            pass
        self.sock.close()


def _masked_close(code: int = 1000) -> bytes:
    mask = os.urandom(4)
    payload = struct.pack(">H", code)
    return b"\x88" + bytes([0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def log_in_cookie(base_url: str, username: str, password: str) -> str:
    """Log in through the real login form of a served app; the ``sessionid`` cookie's value."""
    import urllib.parse
    import urllib.request
    from http.cookiejar import CookieJar

    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base_url + "/login/", timeout=30).read().decode()
    marker = 'name="csrfmiddlewaretoken" value="'
    token = page[page.index(marker) + len(marker) :].split('"', 1)[0]
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": username, "password": password})
    request = urllib.request.Request(
        base_url + "/login/", data=body.encode(), headers={"Referer": base_url + "/login/"}
    )
    opener.open(request, timeout=30).read()
    for cookie in jar:
        if cookie.name == "sessionid":
            return cookie.value
    raise AssertionError("the login form set no session cookie")
