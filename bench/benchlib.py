"""Shared machinery for the live-pipeline benchmarks (``redis_load.py``, ``live_latency.py``).

Everything here starts its own processes on loopback ports and cleans them up:

* ``Procs``: a registry of child processes. Each child gets PR_SET_PDEATHSIG (Linux), so even a
  SIGKILL of the benchmark does not leave it running; Node children also exit when their stdin
  closes. ``Procs.stop_all()`` terminates them in reverse start order (SIGTERM, then SIGKILL).
* ``RedisServer``: a private ``redis-server`` (``--save '' --appendonly no``, temp dir).
* ``QueuewatchApp``: migrate + ``demo_user`` + the web server (``python -m dashboard.serve``) +
  ``manage.py monitor`` with the monitored
  and the dashboard Redis given by env vars, exactly like ``tests/e2e/conftest.py`` does.
* ``CountingProxy``: a TCP proxy process (``resp_proxy.py``) in front of the monitored Redis that
  counts the top-level commands one tool sends (RESP request parser), so a tool's traffic can be
  attributed exactly, independently of the ``INFO commandstats`` difference against a baseline.
* ``Tab``: a websocket client (the ``websockets`` package's asyncio client, installed for the
  web server) with a logged-in session cookie and a same-origin ``Origin`` header.
* ``commandstats``/``rates``: ``INFO commandstats`` snapshots and per-second deltas.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import http.cookiejar
import json
import os
import queue as queue_mod
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
BENCH_NODE = ROOT / "bench" / "node"
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
T0 = time.monotonic()


def log(msg: str = "") -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _set_pdeathsig() -> None:  # in the child, between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, min(len(s), int(-(-p * len(s) // 100))))
    return s[k - 1]


def timed_get(url: str, *, cookie: str = "", token: str = "") -> tuple[float, int, int]:
    """One GET with a session cookie or a bearer token: (seconds, body bytes, status)."""
    headers = {"Cookie": f"sessionid={cookie}"} if cookie else {"Authorization": f"Bearer {token}"}
    req = urllib.request.Request(url, headers=headers)
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as resp:
        body = resp.read()
        status = resp.status
    return time.perf_counter() - t, len(body), status


def overview_view(base_url: str, cookie: str, query: str = "") -> str:
    """The rows view an overview page names for its socket (``#queue-tables``' data-rows-view):
    what the page's script sends once the socket is open, so the monitor renders those rows."""
    req = urllib.request.Request(base_url + "/" + query, headers={"Cookie": f"sessionid={cookie}"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        html = resp.read().decode()
    found = re.search(r'id="queue-tables" data-rows-view="([0-9a-f]+)"', html)
    if not found:
        raise RuntimeError("the overview page names no rows view (is the dashboard Redis up?)")
    return found.group(1)


def overview_tab(base_url: str, cookie: str, query: str = "", on_message=None) -> Tab:
    """A tab on the overview: its socket names the page's rows view, as the page's script does."""
    view = overview_view(base_url, cookie, query)
    return Tab(base_url, "/ws/overview/", cookie, on_message=on_message, first_message=json.dumps({"view": view}))


STATE_KEY = "queuewatch:state"
MAC_LENGTH = 64  # the signature in front of each signed value (dashboard/core/signing.py)


def read_state(dash: redis.Redis) -> dict | None:
    """The monitor's state document (a hash: ``head`` and a signed field per queue,
    dashboard/core/state_store.py), read without checking the signatures; None before it
    publishes one."""
    raw = dash.hgetall(STATE_KEY)
    head = raw.get(b"head")
    if head is None:
        return None
    entries = [json.loads(v[MAC_LENGTH:]) for f, v in sorted(raw.items()) if f.startswith(b"q:")]
    return {**json.loads(head[MAC_LENGTH:]), "queues": entries}


def state_bytes(dash: redis.Redis) -> int:
    """The state document's size: every field and value of its hash."""
    return sum(len(f) + len(v) for f, v in dash.hgetall(STATE_KEY).items())


def state_queues(dash: redis.Redis) -> int:
    """How many queues the monitor's state document lists (0 before it publishes one)."""
    return max(0, dash.hlen(STATE_KEY) - 2)  # but its head and generation


# ----------------------------------------------------------------------------------------------
# Child processes


class Proc:
    def __init__(self, name: str, args: list[str], *, cwd: Path, env: dict | None, logdir: Path, json_stdout: bool):
        self.name = name
        self.log_path = logdir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self.lines: queue_mod.Queue = queue_mod.Queue()
        self.other: list[dict] = []  # JSON lines seen while waiting for another key
        self.proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            preexec_fn=_set_pdeathsig,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if json_stdout else self._log,
            stderr=self._log,
        )
        self.reader = None
        if json_stdout:
            self.reader = threading.Thread(target=self._read_stdout, name=f"stdout-{name}", daemon=True)
            self.reader.start()

    def _read_stdout(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self._log.write(raw)

    def expect(self, key: str, timeout: float) -> dict:
        """Wait for a JSON line on stdout that has ``key``; other lines are kept in ``other``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if self.proc.poll() is not None and self.reader is not None:
                self.reader.join(2)  # the process is gone: let the reader drain its last lines
            if left <= 0 or self.proc.poll() is not None and self.lines.empty():
                raise RuntimeError(f"{self.name}: no {key!r} line within {timeout:.0f} s\n{self.tail()}")
            try:
                obj = self.lines.get(timeout=min(left, 0.5))
            except queue_mod.Empty:
                continue
            if key in obj:
                return obj
            self.other.append(obj)

    def send_line(self, text: str) -> None:
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def cpu_seconds(self) -> float:
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def stop(self, grace: float = 10.0) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


class Procs:
    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.running: list[Proc] = []

    def start(
        self, name: str, args: list[str], *, cwd: Path = ROOT, env: dict | None = None, json_stdout: bool = False
    ) -> Proc:
        p = Proc(name, args, cwd=cwd, env=env, logdir=self.logdir, json_stdout=json_stdout)
        self.running.append(p)
        return p

    def stop(self, p: Proc, grace: float = 10.0) -> None:
        p.stop(grace)
        if p in self.running:
            self.running.remove(p)

    def stop_all(self) -> None:
        for p in reversed(list(self.running)):
            try:
                self.stop(p)
            except Exception as exc:  # keep cleaning up the others
                log(f"stopping {p.name} failed: {exc}")


class RedisServer:
    """``launcher``: a command the server runs under (e.g. valgrind), which keeps its pid."""

    def __init__(
        self, procs: Procs, name: str, *extra_args: str, launcher: tuple[str, ...] = (), start_timeout: float = 10
    ):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian/Ubuntu: apt-get install redis-server)")
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"qw-bench-{name}-"))
        self.proc = procs.start(
            name,
            [
                *launcher,
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
                str(self.dir),
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                *extra_args,
            ],
        )
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                info = self.client().info("server")
                break
            except redis.ConnectionError as exc:
                if not self.proc.alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start:\n{self.proc.tail()}") from exc
                time.sleep(0.05)
        if info["process_id"] != self.proc.proc.pid:  # never measure a server we did not start
            raise RuntimeError(f"port {self.port} is answered by pid {info['process_id']}, not our redis-server")

    def url(self, db: int = 0, port: int | None = None) -> str:
        return f"redis://127.0.0.1:{port or self.port}/{db}"

    def client(self, **kw) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **{"socket_timeout": 5, **kw})

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# INFO commandstats


def commandstats(client: redis.Redis) -> dict:
    """{command: (calls, usec)} plus Redis' own CPU seconds under the key ``"__cpu__"``."""
    raw = client.info("commandstats")
    out = {k[len("cmdstat_") :]: (v["calls"], v["usec"]) for k, v in raw.items() if k.startswith("cmdstat_")}
    cpu = client.info("cpu")
    out["__cpu__"] = (0, (cpu["used_cpu_user"] + cpu["used_cpu_sys"]) * 1e6)
    return out


def rates(before: dict, after: dict, seconds: float) -> tuple[dict[str, float], float, float]:
    """Per-command calls/s (INFO excluded), total calls/s, and Redis CPU % over the window."""
    per = {}
    for cmd, (calls, _) in after.items():
        if cmd in ("info", "__cpu__"):
            continue
        d = calls - before.get(cmd, (0, 0))[0]
        if d:
            per[cmd] = d / seconds
    cpu = (after["__cpu__"][1] - before["__cpu__"][1]) / 1e6 / seconds * 100
    return per, sum(per.values()), cpu


# ----------------------------------------------------------------------------------------------
# Counting proxy (a separate process, so its forwarding never competes for this process' GIL
# with the simulated browser tabs)


class CountingProxy:
    """Loopback TCP proxy to one Redis (``bench/resp_proxy.py``); counts the top-level commands
    passing through."""

    def __init__(self, procs: Procs, upstream_port: int, name: str):
        self.name = name
        self.proc = procs.start(
            f"proxy-{name}",
            [PY, str(ROOT / "bench" / "resp_proxy.py"), "--upstream", str(upstream_port)],
            json_stdout=True,
        )
        self.port = self.proc.expect("port", 10)["port"]
        self._lock = threading.Lock()

    def snapshot(self) -> collections.Counter:
        with self._lock:
            self.proc.send_line("snap")
            return collections.Counter(self.proc.expect("counts", 10)["counts"])

    def cpu_seconds(self) -> float:
        return self.proc.cpu_seconds()


# ----------------------------------------------------------------------------------------------
# Queuewatch: web server + monitor


def manage(env: dict, *args: str, code_dir: Path = ROOT) -> str:
    return subprocess.run(
        [PY, "manage.py", *args], cwd=code_dir, env=env, check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()


def resolve_ref(ref: str) -> str:
    """The full commit hash of ``ref``, fixed at start (HEAD may move while a run is going on)."""
    return subprocess.run(
        ["git", "rev-parse", "--verify", ref + "^{commit}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout.strip()


def export_code(ref: str, dest: Path) -> Path:
    """Extract the product code of commit ``ref`` (``git archive``, read-only on the repository)
    into ``dest``, so a run measures a fixed commit even while the working tree is being edited."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref], cwd=ROOT, check=True, capture_output=True, timeout=60
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, timeout=60)
    return dest


class QueuewatchApp:
    def __init__(
        self,
        procs: Procs,
        *,
        monitored_url: str,
        dashboard_url: str,
        workdir: Path,
        tick_ms: int | None,
        code_dir: Path = ROOT,
        extra_env: dict[str, str | None] | None = None,
    ):
        """``extra_env``: more variables (a ``None`` value removes one, e.g. the default Redis
        connection of a run that monitors only PostgreSQL)."""
        self.procs = procs
        self.code_dir = code_dir
        self.env = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_") and k != "DJANGO_SETTINGS_MODULE"
            },
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_SECRET_KEY": "bench-" + "x" * 40,
            "QUEUEWATCH_REDIS_URL": monitored_url,
            "QUEUEWATCH_DASHBOARD_REDIS_URL": dashboard_url,
            "QUEUEWATCH_PREFIXES": "bull",
            "QUEUEWATCH_INSECURE_DEV": "1",  # plain http on loopback
            "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
            "PYTHONUNBUFFERED": "1",
        }
        if tick_ms:
            self.env["QUEUEWATCH_MONITOR_TICK_MS"] = str(tick_ms)
        for key, value in (extra_env or {}).items():
            if value is None:
                self.env.pop(key, None)
            else:
                self.env[key] = value
        manage(self.env, "migrate", "-v0", code_dir=code_dir)
        self.username, self.password = manage(self.env, "demo_user", "--username", "bench", code_dir=code_dir).split(
            " / "
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.web = procs.start(
            "web",
            [PY, "-m", "dashboard.serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self.env,
            cwd=code_dir,
        )
        self.monitor: Proc | None = None
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/login/", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if not self.web.alive() or time.monotonic() > deadline:
                    raise RuntimeError("the web server did not start:\n" + self.web.tail()) from exc
                time.sleep(0.1)

    def start_monitor(self, *, probe: bool = False) -> Proc:
        """``manage.py monitor``; with ``probe``, the same monitor under ``bench/monitor_probe.py``
        (timers around its steps, read with ``probe_snapshot()``)."""
        args = [PY, str(ROOT / "bench" / "monitor_probe.py")] if probe else [PY, "manage.py", "monitor"]
        self.monitor = self.procs.start("monitor", args, env=self.env, cwd=self.code_dir, json_stdout=probe)
        self.probing = probe
        return self.monitor

    def probe_snapshot(self) -> dict | None:
        """The monitor's step timings since the previous call (None without ``probe``)."""
        if not getattr(self, "probing", False) or self.monitor is None or not self.monitor.alive():
            return None
        self.monitor.send_line("snap")
        return self.monitor.expect("probe", 10)["probe"]

    def stop_monitor(self) -> None:
        if self.monitor is not None:
            self.procs.stop(self.monitor, grace=15)

    def session_cookie(self) -> str:
        """Log in over HTTP like a browser (GET the form for the CSRF token, POST it) and return
        the ``sessionid`` cookie. The redirect after login is not followed, so no page (and no
        read of the monitored Redis) is requested here."""
        jar = http.cookiejar.CookieJar()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **kw):
                return None

        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
        html = opener.open(self.url + "/login/", timeout=10).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        body = urllib.parse.urlencode(
            {"csrfmiddlewaretoken": token, "username": self.username, "password": self.password, "next": "/"}
        ).encode()
        req = urllib.request.Request(
            self.url + "/login/", data=body, headers={"Referer": self.url + "/login/", "Origin": self.url}
        )
        try:
            opener.open(req, timeout=10)
        except urllib.error.HTTPError as exc:
            if exc.code != 302:
                raise
        for c in jar:
            if c.name == "sessionid":
                return c.value
        raise RuntimeError("login did not set a session cookie (wrong password?)")


# ----------------------------------------------------------------------------------------------
# Websocket tab


class Tab:
    """One browser tab's websocket: connects with the session cookie and a same-origin Origin
    header, records every message with its arrival time (``time.time()``, the machine clock)."""

    def __init__(self, base_url: str, path: str, cookie: str, on_message=None, first_message: str | None = None):
        self.base_url = base_url
        self.path = path
        self.cookie = cookie
        self.on_message = on_message
        self.first_message = first_message  # sent once open (an overview names its rows view)
        self.messages = 0
        self.bytes = 0
        self.opened: asyncio.Future | None = None
        self.closed: asyncio.Future | None = None
        self.close_code = None
        self.connection = None
        self._reader: asyncio.Task | None = None

    async def connect(self, timeout: float = 10) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus

        loop = asyncio.get_running_loop()
        self.opened, self.closed = loop.create_future(), loop.create_future()
        host_port = self.base_url.split("://", 1)[1]
        try:
            self.connection = await asyncio.wait_for(
                connect(
                    f"ws://{host_port}{self.path}",
                    origin=self.base_url,
                    additional_headers={"Cookie": f"sessionid={self.cookie}"},
                    max_size=None,
                    ping_interval=None,  # the server pings; this client only answers
                ),
                timeout,
            )
        except InvalidStatus as exc:
            self.opened.set_exception(RuntimeError(f"websocket {self.path} refused: {exc.response.status_code}"))
            raise self.opened.exception() from exc
        self.opened.set_result(True)
        if self.first_message is not None:
            await self.connection.send(self.first_message)

        async def read() -> None:
            try:
                async for payload in self.connection:
                    now = time.time()
                    data = payload.encode() if isinstance(payload, str) else payload
                    self.messages += 1
                    self.bytes += len(data)
                    if self.on_message is not None:
                        self.on_message(self, data.decode("utf-8", "replace"), now)
            except ConnectionClosed:
                pass
            finally:
                self.close_code = self.connection.close_code
                if not self.closed.done():
                    self.closed.set_result(self.close_code)

        self._reader = asyncio.create_task(read())

    @property
    def is_open(self) -> bool:
        return self.opened is not None and self.opened.done() and not self.opened.exception() and not self.closed.done()

    async def close(self) -> None:
        if self.connection is not None and not self.closed.done():
            await self.connection.close(1000)
            try:
                await asyncio.wait_for(asyncio.shield(self.closed), 3)
            except TimeoutError:
                pass


def code_version(ref: str | None = None) -> dict:
    """The commit measured, and any uncommitted changes to product files (figures depend on them).
    With ``ref`` (``--code-ref``) the code was exported from that commit, so nothing is uncommitted."""

    def git(*args):
        try:
            # Only the final newline: porcelain lines start with a meaningful space (" M path").
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.rstrip(
                "\n"
            )
        except (OSError, subprocess.SubprocessError):
            return ""

    if ref:
        return {
            "commit": git("rev-parse", "--short", ref),
            "source": f"git archive {ref}",
            "uncommitted_product_files": [],
        }
    dirty = [line[3:] for line in git("status", "--porcelain").splitlines() if not line[3:].startswith("bench/")]
    return {"commit": git("rev-parse", "--short", "HEAD"), "source": "working tree", "uncommitted_product_files": dirty}


def wait_for_monitor(app: QueuewatchApp, dash: redis.Redis, queues: int, timeout: float = 90) -> float:
    """Wait until the monitor leads and its state document lists every queue (so its start-up
    work -- discovery, reconciliation, first reads -- is over; overview rows are rendered only
    for pages that show them). Returns the seconds waited."""
    t0 = time.monotonic()
    while state_queues(dash) < queues:
        if app.monitor is None or not app.monitor.alive():
            raise RuntimeError("monitor exited:\n" + (app.monitor.tail() if app.monitor else ""))
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(
                f"monitor did not publish the figures of {queues} queues within {timeout:.0f} s:\n" + app.monitor.tail()
            )
        time.sleep(0.2)
    return time.monotonic() - t0


def install_time_limit(seconds: float) -> None:
    """Bound the whole run: SIGALRM raises in the main thread, whose ``finally`` cleans up."""

    def _expired(*_):
        raise TimeoutError(f"benchmark exceeded its {seconds:.0f} s time limit")

    def _terminated(signum, _):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGALRM, _expired)
    signal.signal(signal.SIGTERM, _terminated)
    signal.alarm(int(seconds))


def run_bench(bench, *, show_logs_of) -> int:
    """Run ``bench.run()`` (a coroutine), clean up, and print its result as ONE JSON line on
    stdout. On failure, log the tails of the processes ``show_logs_of(name)`` picks, clean up
    and re-raise."""
    try:
        result = asyncio.run(bench.run())
    except BaseException as exc:
        log(f"FAILED: {exc!r}")
        for p in bench.procs.running:
            if show_logs_of(p.name):
                log(f"--- {p.name} log tail ---\n{p.tail(1500)}")
        bench.cleanup()
        raise
    bench.cleanup()
    log("done")
    print(json.dumps(result))
    return 0
