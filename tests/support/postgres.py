"""A throwaway PostgreSQL server the tests start themselves, like ``RedisServer``.

PostgreSQL refuses to run as root, and CI runs as root: the cluster's files belong to the
unprivileged ``postgres`` user and ``initdb``/``pg_ctl`` run through ``runuser -u postgres --``
(directly when the tests are not root). The data directory is a ``tempfile.mkdtemp()`` handed to
that user, not pytest's root-only tmp, which ``postgres`` cannot enter. It listens on 127.0.0.1
only, on a free port, with ``trust`` authentication (nothing but this machine can reach it), and
keeps its socket in the data directory, so no system directory is needed.

General on purpose: the BullMQ-on-PostgreSQL tests and the app's own database tests share it.
``url(dbname)`` is a libpq URL; ``create_database(name)`` gives a test a database of its own.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.support.servers import free_port

SUPERUSER = "postgres"
RUN_AS = "postgres"  # the unprivileged system user the cluster runs as when the tests are root


def postgres_binary(name: str) -> str:
    """``initdb``, ``pg_ctl``…: on PATH, or from the newest /usr/lib/postgresql/<version>/bin
    (Debian keeps them there, off PATH)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")
    if not candidates:
        raise RuntimeError(f"{name} is not installed (Debian/Ubuntu: apt-get install postgresql; ./dev test does it)")
    return max(candidates, key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)


@dataclass(frozen=True)
class ScratchDatabase:
    """A database a test has to itself."""

    name: str
    url: str


class PortTaken(Exception):
    """The port the server was told to listen on was taken meanwhile."""


class PostgresServer:
    def __init__(self) -> None:
        self._as_root = os.geteuid() == 0
        self.dir = tempfile.mkdtemp(prefix="qw-pg-")
        self.data = os.path.join(self.dir, "data")
        os.mkdir(self.data, 0o700)
        if self._as_root:
            user = pwd.getpwnam(RUN_AS)
            for path in (self.dir, self.data):
                os.chown(path, user.pw_uid, user.pw_gid)
        self._run(
            postgres_binary("initdb"),
            "-D",
            self.data,
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        # free_port() only finds a port that was free a moment ago (a parallel pytest-xdist
        # worker may take it first): the server then fails to start, and another is tried.
        for _ in range(5):
            self.port = free_port()
            try:
                self._start()
                return
            except PortTaken:
                continue
        raise RuntimeError("PostgreSQL found no free port in 5 tries")

    @property
    def log(self) -> str:
        return os.path.join(self.dir, "postgres.log")

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = ["runuser", "-u", RUN_AS, "--", *args] if self._as_root else list(args)
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{Path(args[0]).name} failed ({proc.returncode}): {proc.stderr[-3000:]}")
        return proc

    def _start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}"
            # A throwaway cluster: durability buys nothing, speed does.
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        pg_ctl = postgres_binary("pg_ctl")
        proc = self._run(pg_ctl, "-D", self.data, "-l", self.log, "-o", options, "-w", "start", check=False)
        if proc.returncode == 0:
            return
        said = self._said()
        if "Address already in use" in said or "could not bind" in said:
            raise PortTaken(self.port)
        raise RuntimeError(f"PostgreSQL did not start: {proc.stderr[-1500:]}\n{said}")

    def _said(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()[-3000:]
        except FileNotFoundError:
            return ""

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=10)

    def create_database(self, name: str) -> str:
        """A new, empty database (any leftover of that name dropped first); returns its URL."""
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        self._run(postgres_binary("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop", check=False)
        for _ in range(50):  # pg_ctl -w returns once the postmaster is gone; be sure before deleting
            if not os.path.exists(os.path.join(self.data, "postmaster.pid")):
                break
            time.sleep(0.1)
        shutil.rmtree(self.dir, ignore_errors=True)
