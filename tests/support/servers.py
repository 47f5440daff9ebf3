"""Real processes the tests start: a private redis-server on a free port, the Node BullMQ
fixture. Nothing here ever talks to a server it did not start."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "node"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A throwaway redis-server. Extra ``config`` lines let a test start one in a deliberately
    wrong configuration (e.g. ``maxmemory-policy allkeys-lru``)."""

    def __init__(self, *config: str):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian/Ubuntu: apt-get install redis-server)")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="qw-redis-")
        self.config = config
        self._start(binary)

    def _start(self, binary: str) -> None:
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.dir, "--daemonize", "no", "--loglevel", "warning"]
        for line in self.config:
            args += ["--" + line.split()[0], *line.split()[1:]]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                break
            except redis.ConnectionError as exc:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start: {self.proc.stderr.read().decode()}") from exc
                time.sleep(0.05)

    def start(self) -> None:
        """Start again on the same port after kill() (data is not kept)."""
        self._start(shutil.which("redis-server"))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stderr.close()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(port=self.port, db=db)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def ensure_node_modules() -> None:
    if not (NODE_DIR / "node_modules" / "bullmq").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True)


def run_node(script: str, *args: str, timeout: float = 90) -> dict:
    """Run a Node script under tests/node and parse the JSON object on its last stdout line."""
    ensure_node_modules()
    proc = subprocess.run(["node", script, *args], cwd=NODE_DIR, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"node {script} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def node_available() -> bool:
    return shutil.which("node") is not None and shutil.which("npm") is not None and os.environ.get("QW_SKIP_NODE") != "1"
