"""Helpers shared by bench/fanout.py and bench/monitor_memory.py: start Queuewatch's own
processes (the web server, ``manage.py monitor``, ``manage.py`` one-offs) against private Redis servers,
read a process's CPU time and memory from /proc, and stop what was started.

Everything here talks to loopback only, and only to processes this benchmark started. Children
get PR_SET_PDEATHSIG (via ``bench.snapshot_bench._set_pdeathsig``), so even a SIGKILL of the
benchmark does not leave them running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench.snapshot_bench import _set_pdeathsig, log  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
PYTHON = os.path.join(REPO, ".venv", "bin", "python")
if not os.path.exists(PYTHON):
    PYTHON = sys.executable


def app_env(
    *, redis_url: str, dashboard_redis_url: str, db_path: str, tick_ms: int | None = None, **extra: str
) -> dict:
    """The environment Queuewatch's processes run with: nothing inherited may point them at
    another Redis or database."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("QUEUEWATCH_") and k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_SECRET_KEY": "bench-" + "x" * 40,
            "QUEUEWATCH_REDIS_URL": redis_url,
            "QUEUEWATCH_DASHBOARD_REDIS_URL": dashboard_redis_url,
            "DATABASE_URL": f"sqlite:///{db_path}",
            "QUEUEWATCH_LOG_LEVEL": "WARNING",
            "QUEUEWATCH_INSECURE_DEV": "1",  # plain http on loopback
            "PYTHONUNBUFFERED": "1",
        }
    )
    if tick_ms is not None:
        env["QUEUEWATCH_MONITOR_TICK_MS"] = str(tick_ms)
    env.update(extra)
    return env


def manage(env: dict, *args: str, timeout: float = 120) -> str:
    proc = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_set_pdeathsig,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout.strip()


class Child:
    """A long-running child process with its output in a log file."""

    def __init__(self, name: str, argv: list[str], env: dict, logdir: str):
        self.name = name
        self.log_path = os.path.join(logdir, f"{name}.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_set_pdeathsig,
        )
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, n: int = 3000) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                return fh.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def log_count(self, needle: str) -> int:
        try:
            with open(self.log_path, "rb") as fh:
                return fh.read().count(needle.encode())
        except OSError:
            return 0

    def stop(self, timeout: float = 15) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) did not stop on SIGTERM within {timeout:.0f}s; killing it")
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def start_web(env: dict, port: int, logdir: str) -> Child:
    """The web server Queuewatch ships (``python -m dashboard.serve``: uvicorn, its options in
    dashboard/serve.py)."""
    return Child("web", [PYTHON, "-m", "dashboard.serve", "--host", "127.0.0.1", "--port", str(port)], env, logdir)


def start_monitor(env: dict, logdir: str, script: str | None = None, args: tuple[str, ...] = ()) -> Child:
    """``manage.py monitor [args]``, or a bench script that runs the same command (a what-if variant)."""
    return Child(
        "monitor", ([PYTHON, script] if script else [PYTHON, "manage.py", "monitor"]) + list(args), env, logdir
    )


def wait_http(url: str, child: Child, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answered
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            if not child.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{child.name} did not start:\n{child.tail()}") from exc
            time.sleep(0.1)


def login_session(base_url: str, username: str, password: str) -> str:
    """Log in through the real login form; returns the session id cookie value."""
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base_url + "/login/", timeout=10).read().decode()
    marker = 'name="csrfmiddlewaretoken" value="'
    token = page[page.index(marker) + len(marker) :].split('"', 1)[0]
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/"}
    ).encode()
    req = urllib.request.Request(base_url + "/login/", data=body, headers={"Referer": base_url + "/login/"})
    opener.open(req, timeout=30).read()
    for c in jar:
        if c.name == "sessionid":
            return c.value
    raise RuntimeError("login did not set a session cookie (wrong password?)")


# --- /proc --------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


def status_kib(pid: int, key: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def reset_peak_rss(pid: int) -> bool:
    """Start the process's ``VmHWM`` (its peak RSS) again from its current RSS (``clear_refs``
    5, Linux 4.0+; needs the right to write the process's ``/proc`` files). Whether it could."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def threads(pid: int) -> int:
    return status_kib(pid, "Threads")
