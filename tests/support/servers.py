"""Real processes the tests start: a private redis-server on a free port, the Node BullMQ
fixture. Nothing here ever talks to a server it did not start."""

from __future__ import annotations

import collections
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "node"


def _dies_with_tests():
    """A ``preexec_fn`` for the servers the tests start: Linux sends the server SIGKILL when the
    test process that started it dies, so a run stopped half-way (a killed ``./dev test``, a hung
    worker) leaves no redis-server or web server holding its port. Elsewhere: nothing to do."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    pr_set_pdeathsig = 1

    def set_parent_death_signal() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL)

    return set_parent_death_signal


# Started from the test process's main thread only: Linux signals the child when the *thread*
# that started it ends.
DIES_WITH_TESTS = _dies_with_tests()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_HELD: list[socket.socket] = []


def refused_port() -> int:
    """A loopback port where connections are refused for the rest of this test process: bound
    (so no other process, such as a parallel pytest-xdist worker's redis-server, can listen
    on it) but never listening."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    _HELD.append(held)
    return held.getsockname()[1]


class PortTaken(Exception):
    """The port redis-server was told to listen on was taken meanwhile."""


class RedisServer:
    """A throwaway redis-server. Extra ``config`` lines let a test start one in a deliberately
    wrong configuration (e.g. ``maxmemory-policy allkeys-lru``)."""

    def __init__(self, *config: str):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian/Ubuntu: apt-get install redis-server)")
        self.dir = tempfile.mkdtemp(prefix="qw-redis-")
        self.config = config
        # free_port() only finds a port that was free a moment ago: a parallel test process
        # (pytest-xdist worker) or another program may take it before redis-server binds it.
        # Then this server exits at once, and another port is tried.
        for _ in range(5):
            self.port = free_port()
            try:
                self._start(binary)
                return
            except PortTaken:
                continue
        raise RuntimeError("redis-server found no free port in 5 tries")

    def _start(self, binary: str) -> None:
        args = [
            binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self.dir,
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
            "--logfile",
            self.log,
        ]
        for line in self.config:
            # '""' is an empty argument, as in redis.conf: `rename-command CONFIG ""` removes it.
            words = ["" if word == '""' else word for word in line.split()]
            args += ["--" + words[0], *words[1:]]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=DIES_WITH_TESTS
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                # Our own process answering, not whoever else listens on the port.
                with redis.Redis(port=self.port, socket_timeout=1) as probe:
                    answered_by = probe.info("server")["process_id"]
                if answered_by == self.proc.pid:
                    break
            except redis.RedisError:  # not listening yet, or something else is
                pass
            if self.proc.poll() is not None:
                said = self._said()
                if "Address already in use" in said:
                    raise PortTaken(self.port)
                raise RuntimeError(f"redis-server did not start: {said}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait(10)
                raise RuntimeError(f"redis-server did not start: {self._said()}")
            time.sleep(0.05)

    @property
    def log(self) -> str:
        return os.path.join(self.dir, "redis.log")

    def _said(self) -> str:
        """What the exited server wrote: configuration errors on stderr, the rest in its log."""
        said = self.proc.stderr.read().decode(errors="replace")
        self.proc.stderr.close()
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                said += f.read()
        except FileNotFoundError:
            pass
        return said[-3000:]

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


def app_env(*, redis_url: str, dashboard_url: str, database: str, **extra: str) -> dict:
    """The environment of an ``AppServer`` (and its ``manage.py`` commands) of a test's own:
    this process's environment without any ``QUEUEWATCH_*`` setting, plus the monitored and
    dashboard Redis, a SQLite ``database`` and plain http on loopback, as ``./dev run`` serves
    it; ``extra`` adds settings."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "QUEUEWATCH_SECRET_KEY": "app-server-" + "x" * 40,
        "QUEUEWATCH_REDIS_URL": redis_url,
        "QUEUEWATCH_DASHBOARD_REDIS_URL": dashboard_url,
        "DATABASE_URL": f"sqlite:///{database}",
        "QUEUEWATCH_INSECURE_DEV": "1",
        **extra,
    }


class AppServer:
    """Queuewatch served by the server it ships (``python -m dashboard.serve``, uvicorn) in a
    subprocess with the environment ``env``, as users run it. It binds a port the OS chooses
    (``--port 0``) and says which in its log: no other process (a parallel pytest-xdist worker)
    can take the port between choosing and binding."""

    LISTENING = re.compile(r"Uvicorn running on http://[0-9.]+:(\d+)")

    def __init__(self, env: dict, *, timeout: float = 60):
        self.port: int | None = None
        self._said: collections.deque[str] = collections.deque(maxlen=100)
        self._bound = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dashboard.serve", "--host", "127.0.0.1", "--port", "0"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=DIES_WITH_TESTS,
        )
        # Read its log for the whole run (a pipe nobody reads would block the server once full).
        threading.Thread(target=self._read_log, daemon=True).start()
        deadline = time.monotonic() + timeout
        self._bound.wait(timeout)
        while not (self.port is not None and self.answers()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the web server did not start:\n" + self.said())
            time.sleep(0.1)

    def answers(self) -> bool:
        """The login page answers (slow to answer on a loaded machine counts as not yet)."""
        try:
            urllib.request.urlopen(self.url + "/login/", timeout=10).close()
            return True
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def said(self) -> str:
        """The last lines the web server logged."""
        return "".join(self._said)[-3000:]

    def _read_log(self) -> None:
        for line in self.proc.stderr:
            self._said.append(line)
            found = self.LISTENING.search(line)
            if found and self.port is None:
                self.port = int(found.group(1))
                self._bound.set()
        self._bound.set()  # it exited without listening

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def node_modules_installed() -> bool:
    """Every dependency of tests/node/package.json is in node_modules (one added since the last
    install counts as missing)."""
    wanted = json.loads((NODE_DIR / "package.json").read_text()).get("dependencies", {})
    return all((NODE_DIR / "node_modules" / name / "package.json").exists() for name in wanted)


def ensure_node_modules() -> None:
    """``npm ci`` in tests/node on first use, by one test process at a time: pytest-xdist
    workers that found it missing together wait for the first, then see it installed."""
    if node_modules_installed():
        return
    lock = Path(tempfile.gettempdir()) / f"queuewatch-npm-ci-{hashlib.sha1(bytes(NODE_DIR)).hexdigest()[:12]}.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not node_modules_installed():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True)


def run_node(script: str, *args: str, timeout: float = 90, prefix: str | None = None, env: dict | None = None) -> dict:
    """Run a Node script under tests/node and parse the JSON object on its last stdout line.
    ``prefix`` is passed as a leading ``--prefix=`` (scripts that read it with
    ``prefixAndArgs``: toolbox.mjs, seed_actions.mjs); ``env`` adds to the environment (``TZ``:
    the process's local zone, which BullMQ reads cron patterns without a ``tz`` in)."""
    ensure_node_modules()
    if prefix is not None:
        args = (f"--prefix={prefix}", *args)
    proc = subprocess.run(
        ["node", script, *args],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env} if env else None,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"node {script} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def finish(proc: subprocess.Popen, *, input: str | None = None, timeout: float = 120) -> tuple[str, str]:
    """The rest of a text-mode process's stdout and stderr, once it has exited: what
    ``Popen.communicate`` returns, except that it also keeps what a ``readline()`` before it
    already read ahead. ``communicate`` reads the pipes' file descriptors, so output buffered by
    that read-ahead (a fast process's last line, printed right after its first) is lost."""
    if input is not None:
        assert proc.stdin is not None
        proc.stdin.write(input)
        proc.stdin.close()
    got: dict[str, str] = {}
    readers = [
        threading.Thread(target=lambda name=name, pipe=pipe: got.__setitem__(name, pipe.read() if pipe else ""))
        for name, pipe in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))
    if any(reader.is_alive() for reader in readers):
        proc.kill()
        proc.wait()
        raise subprocess.TimeoutExpired(proc.args, timeout)
    proc.wait(max(1.0, deadline - time.monotonic()))
    return got["out"], got["err"]


def node_available() -> bool:
    return (
        shutil.which("node") is not None and shutil.which("npm") is not None and os.environ.get("QW_SKIP_NODE") != "1"
    )
