"""A loopback TCP proxy to one Redis that counts the top-level commands clients send through it.

    python bench/resp_proxy.py --upstream 6379

Prints ``{"port": N}`` (the free loopback port it listens on) on stdout, then answers every line
``snap`` on stdin with ``{"counts": {command: calls}}`` (cumulative; names like ``INFO
commandstats``: lower case, ``client|list`` for commands with subcommands). Exits when stdin
closes. Used by ``redis_load.py`` to attribute each tool's traffic exactly; commands that Lua
scripts run inside Redis never pass through it, so they are not counted here.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import socket
import sys
import threading

SUBCOMMANDS = {
    b"client",
    b"config",
    b"xinfo",
    b"script",
    b"object",
    b"memory",
    b"command",
    b"acl",
    b"latency",
    b"slowlog",
    b"pubsub",
    b"function",
    b"cluster",
    b"xgroup",
}


class RespCounter:
    """Counts the commands in a client-to-server RESP byte stream (arrays of bulk strings, or
    inline commands)."""

    def __init__(self, counts: collections.Counter):
        self.counts = counts
        self.buf = bytearray()

    def feed(self, data: bytes) -> None:
        self.buf += data
        pos = 0
        while True:
            parsed = self._one(pos)
            if parsed is None:
                break
            pos, name = parsed
            self.counts[name] += 1
        if pos:
            del self.buf[:pos]

    def _one(self, pos: int):
        buf = self.buf
        if pos >= len(buf):
            return None
        end = buf.find(b"\r\n", pos)
        if end < 0:
            return None
        if buf[pos] != 0x2A:  # not '*': an inline command
            parts = bytes(buf[pos:end]).split()
            return end + 2, (parts[0].lower().decode(errors="replace") if parts else "")
        n = int(buf[pos + 1 : end])
        p = end + 2
        words = []
        for i in range(n):
            e = buf.find(b"\r\n", p)
            if e < 0:
                return None
            length = int(buf[p + 1 : e])
            start, stop = e + 2, e + 2 + length
            if stop + 2 > len(buf):
                return None
            if i < 2:
                words.append(bytes(buf[start:stop]).lower())
            p = stop + 2
        name = words[0] if words else b""
        if name in SUBCOMMANDS and len(words) > 1:
            name = name + b"|" + words[1]
        return p, name.decode(errors="replace")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", type=int, required=True, help="port of the Redis on 127.0.0.1")
    args = ap.parse_args()
    counts: collections.Counter = collections.Counter()
    lock = threading.Lock()

    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", args.upstream)
        except OSError:
            writer.close()
            return
        for w in (writer, up_writer):
            w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local: collections.Counter = collections.Counter()
        counter = RespCounter(local)

        async def pump(src, dst, count):
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    if count:
                        counter.feed(data)
                        with lock:
                            counts.update(local)
                        local.clear()
                    await dst.drain()
            except (OSError, ValueError):
                pass
            finally:
                try:
                    dst.close()
                except Exception:
                    pass

        await asyncio.gather(pump(reader, up_writer, True), pump(up_reader, writer, False))

    async def serve():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(json.dumps({"port": port}), flush=True)
        await server.serve_forever()

    threading.Thread(target=lambda: asyncio.run(serve()), daemon=True).start()
    for line in sys.stdin:  # the parent's commands; EOF (parent gone) ends the proxy
        if line.strip() == "snap":
            with lock:
                snap = dict(counts)
            print(json.dumps({"counts": snap}), flush=True)


if __name__ == "__main__":
    main()
