"""A private Redis Sentinel set-up for the tests: a primary, one replica (``--replicaof``) and
three Sentinels (``redis-server <conf> --sentinel``) monitoring it as ``mymaster`` with a
quorum of 2, on free loopback ports (never 6379).

The Sentinels judge the primary down after 1 s (``down-after-milliseconds 1000``) and give a
failover 3 s (``failover-timeout 3000``), so ``kill_primary()`` (SIGKILL, as a crash) is
followed by the replica's promotion within a few seconds. Start-up waits until every Sentinel
knows the replica and the two other Sentinels (they find each other through the primary every
2 s): before that a failover could not be agreed. Everything lives in a temporary directory
(the Sentinels rewrite their config files there); nothing is saved, and nothing here talks to a
server it did not start: a port taken meanwhile makes the whole set start again on fresh ports.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time

import redis

from tests.support.servers import DIES_WITH_TESTS, free_port

MASTER_NAME = "mymaster"
SENTINELS = 3
START_TIMEOUT_S = 40


class RedisSentinelSet:
    """``RedisSentinelSet()`` starts it; ``.url`` is ``redis+sentinel://…/mymaster``;
    ``.stop()`` ends every process and removes the directory."""

    def __init__(self) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed (Debian/Ubuntu: apt-get install redis-server)")
        self.dir = tempfile.mkdtemp(prefix="qw-sentinel-")
        self.procs: dict[int, subprocess.Popen] = {}  # by port
        for _ in range(5):
            try:
                self._start()
                return
            except _PortTaken:
                self._end_processes()
        self.stop()
        raise RuntimeError("the Sentinel set-up found no free ports in 5 tries")

    # -- what tests use ------------------------------------------------------------------------

    def url(self, db: int = 0, *, scheme: str = "redis+sentinel") -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"{scheme}://{hosts}/{MASTER_NAME}" + (f"/{db}" if db else "")

    @property
    def seeds(self) -> str:
        """``host:port,…`` of the Sentinels (what tests/node/connection.mjs takes in a URL)."""
        return ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)

    def primary_port(self) -> int:
        """The primary's port as the Sentinels report it now."""
        with redis.Redis(port=self.sentinel_ports[0], socket_timeout=2) as sentinel:
            _host, port = sentinel.sentinel_get_master_addr_by_name(MASTER_NAME)
        return int(port)

    def primary(self) -> redis.Redis:
        """A client of the current primary (the caller closes it)."""
        return redis.Redis(port=self.primary_port(), socket_timeout=5)

    def flush(self) -> None:
        with self.primary() as client:
            client.flushall()

    def kill_primary(self) -> int:
        """SIGKILL the current primary (a crash: no goodbye to replicas or Sentinels); its port."""
        port = self.primary_port()
        proc = self.procs.pop(port)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        return port

    def wait_promoted(self, old_port: int, timeout: float = 20) -> int:
        """Until the Sentinels name a primary other than ``old_port`` that says it is one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                port = self.primary_port()
                if port != old_port:
                    with redis.Redis(port=port, socket_timeout=2) as probe:
                        if probe.info("replication")["role"] == "master":
                            return port
            except redis.RedisError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"no replica was promoted in {timeout} s")

    # -- start and stop ------------------------------------------------------------------------

    def _start(self) -> None:
        ports: list[int] = []
        while len(ports) < 2 + SENTINELS:
            port = free_port()
            if port != 6379 and port not in ports:
                ports.append(port)
        self.primary_start_port, self.replica_port, *self.sentinel_ports = ports
        deadline = time.monotonic() + START_TIMEOUT_S
        self._spawn_server(self.primary_start_port)
        self._spawn_server(self.replica_port, "--replicaof", "127.0.0.1", str(self.primary_start_port))
        for port in (self.primary_start_port, self.replica_port):
            self._wait_answering(port, deadline)
        for port in self.sentinel_ports:
            self._spawn_sentinel(port)
        for port in self.sentinel_ports:
            self._wait_answering(port, deadline)
        self._wait_replica_linked(deadline)
        for port in self.sentinel_ports:
            self._wait_sentinel_ready(port, deadline)

    def _spawn_server(self, port: int, *extra: str) -> None:
        self.procs[port] = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--repl-diskless-sync-delay",
                "0",
                "--dir",
                self.dir,
                "--dbfilename",
                f"dump-{port}.rdb",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                "--logfile",
                self._log(port),
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=DIES_WITH_TESTS,
        )

    def _spawn_sentinel(self, port: int) -> None:
        conf = os.path.join(self.dir, f"sentinel-{port}.conf")
        with open(conf, "w") as f:
            f.write(
                f"port {port}\n"
                "bind 127.0.0.1\n"
                f"dir {self.dir}\n"
                f"logfile {self._log(port)}\n"
                "loglevel warning\n"
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.primary_start_port} 2\n"
                f"sentinel down-after-milliseconds {MASTER_NAME} 1000\n"
                f"sentinel failover-timeout {MASTER_NAME} 3000\n"
            )
        self.procs[port] = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", conf, "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=DIES_WITH_TESTS,
        )

    def _log(self, port: int) -> str:
        return os.path.join(self.dir, f"redis-{port}.log")

    def _wait_answering(self, port: int, deadline: float) -> None:
        proc = self.procs[port]
        while True:
            try:
                with redis.Redis(port=port, socket_timeout=1) as probe:
                    if probe.info("server")["process_id"] == proc.pid:  # ours, not another's
                        return
            except redis.RedisError:
                pass
            if proc.poll() is not None:
                with open(self._log(port), errors="replace") as log:
                    said = log.read()
                if "Address already in use" in said:
                    raise _PortTaken(port)
                raise RuntimeError(f"redis-server on {port} did not start: {said[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on {port} did not answer in time")
            time.sleep(0.05)

    def _wait_replica_linked(self, deadline: float) -> None:
        with redis.Redis(port=self.replica_port, socket_timeout=2) as probe:
            while probe.info("replication").get("master_link_status") != "up":
                if time.monotonic() > deadline:
                    raise RuntimeError("the replica never linked to the primary")
                time.sleep(0.05)

    def _wait_sentinel_ready(self, port: int, deadline: float) -> None:
        """Until the Sentinel knows the replica and the other Sentinels: a failover needs both."""
        with redis.Redis(port=port, socket_timeout=2, decode_responses=True) as sentinel:
            while True:
                state = sentinel.sentinel_master(MASTER_NAME)
                if state["num-slaves"] >= 1 and state["num-other-sentinels"] >= SENTINELS - 1:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Sentinel {port} never saw the replica and the other Sentinels: {state}")
                time.sleep(0.1)

    def _end_processes(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.procs = {}

    def stop(self) -> None:
        self._end_processes()
        shutil.rmtree(self.dir, ignore_errors=True)


class _PortTaken(Exception):
    pass
