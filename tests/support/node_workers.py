"""A long-lived Node BullMQ 6.7 process (tests/node/workers.mjs) that adds jobs and starts and
stops real workers on command, so a test module shares one Node start."""

from __future__ import annotations

import json
import subprocess

from tests.support.servers import DIES_WITH_TESTS, NODE_DIR, ensure_node_modules


class NodeWorkers:
    def __init__(self, redis_url: str, prefix: str = "bull"):
        ensure_node_modules()
        self.proc = subprocess.Popen(
            ["node", "workers.mjs", redis_url, prefix],
            cwd=NODE_DIR,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            preexec_fn=DIES_WITH_TESTS,
        )

    def send(self, cmd: str, **fields) -> dict:
        self.proc.stdin.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"workers.mjs exited ({self.proc.poll()}) on {cmd}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"workers.mjs {cmd}: {reply['error']}")
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(15)
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()

    def __enter__(self) -> NodeWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
