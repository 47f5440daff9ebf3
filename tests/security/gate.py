"""A TCP proxy in front of Redis that holds any command naming a marker until the test opens
the gate: the test decides when the web process may read a given part of the data, so what
the client received before that can be checked without timing."""

from __future__ import annotations

import socket
import threading


class GateProxy:
    def __init__(self, *, upstream_port: int, marker: bytes):
        self.marker = marker
        self.upstream_port = upstream_port
        self.opened = threading.Event()
        self.held = threading.Event()  # a command naming the marker is waiting at the gate
        self._listener = socket.create_server(("127.0.0.1", 0))  # a port the OS chooses
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def open(self) -> None:
        self.opened.set()

    def close(self) -> None:
        self.opened.set()
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, gated: bool) -> None:
        carry = b""  # the end of the previous read: a marker split across two reads is still seen
        try:
            while data := source.recv(65536):
                if gated and not self.opened.is_set() and self.marker in carry + data:
                    # Redis runs no command until it has all of it, so holding this read holds
                    # the command even if its first bytes already went through.
                    self.held.set()
                    self.opened.wait()
                carry = data[-len(self.marker) :]
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
