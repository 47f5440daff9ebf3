"""A private Redis Cluster for the tests: 3 primaries and 3 replicas (one each) of real
redis-server processes on free loopback ports, created with ``redis-cli --cluster create``.

Replicas are included: they cost well under a second more to start and make the cluster what a
production one is (``get_primaries()`` then has something to leave out). The fixture waits for
every node's ``cluster_state:ok`` and every primary's replica to be connected, not for every
node's slot map to list the replicas (gossip takes about 10 s more). Everything is started
in a temporary directory (node configs there), no data is saved, and nothing here ever talks to
a server it did not start: a port taken meanwhile (another test process) makes the whole cluster
start again on fresh ports.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time

import redis

from tests.support.servers import DIES_WITH_TESTS, free_port

PRIMARIES = 3
REPLICAS_PER_PRIMARY = 1
START_TIMEOUT_S = 60


class RedisCluster:
    """``RedisCluster()`` starts it; ``.url`` is ``redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…``;
    ``.stop()`` ends every process and removes the directory."""

    def __init__(self, *, primaries: int = PRIMARIES, replicas: int = REPLICAS_PER_PRIMARY):
        for binary in ("redis-server", "redis-cli"):
            if shutil.which(binary) is None:
                raise RuntimeError(f"{binary} is not installed (Debian/Ubuntu: apt-get install redis-server)")
        self.count = primaries * (1 + replicas)
        self.replicas = replicas
        self.dir = tempfile.mkdtemp(prefix="qw-cluster-")
        self.procs: list[subprocess.Popen] = []
        self.ports: list[int] = []
        for _ in range(5):
            try:
                self._start()
                return
            except _PortTaken:
                self._end_processes()
        self.stop()
        raise RuntimeError("the Redis Cluster found no free ports in 5 tries")

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def node_client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=5)

    def client(self) -> redis.cluster.RedisCluster:
        """A redis-py cluster client (the caller closes it)."""
        return redis.cluster.RedisCluster(host="127.0.0.1", port=self.ports[0], socket_timeout=5)

    def flush(self) -> None:
        """Empty every primary (replicas follow)."""
        with contextlib.closing(self.client()) as client:
            client.flushall(target_nodes=redis.cluster.RedisCluster.PRIMARIES)

    def node_ids(self) -> dict[int, str]:
        """Each node's port and cluster node id."""
        ids = {}
        for port in self.ports:
            with self.node_client(port) as node:
                ids[port] = node.execute_command("CLUSTER", "MYID").decode()
        return ids

    def primary_ports(self) -> list[int]:
        ports = []
        for port in self.ports:
            with self.node_client(port) as node:
                if node.info("replication")["role"] == "master":
                    ports.append(port)
        return ports

    def owner_of(self, slot: int) -> int:
        """The port of the primary serving ``slot``, as that primary itself says."""
        for port in self.primary_ports():
            with self.node_client(port) as node:
                for start, end, primary, *_replicas in node.execute_command("CLUSTER", "SLOTS"):
                    if start <= slot <= end and int(primary[1]) == port:
                        return port
        raise LookupError(f"no primary serves slot {slot}")

    def keys_in_slot(self, port: int, slot: int) -> list[bytes]:
        """The keys of ``slot`` the node on ``port`` holds (up to 10,000)."""
        with self.node_client(port) as node:
            return node.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10_000)

    def move_slot(self, slot: int, to_port: int, *, batch: int = 10, between_batches=None) -> None:
        """Move one hash slot to the primary on ``to_port`` with its keys, step by step as
        ``redis-cli --cluster reshard`` moves each slot: IMPORTING on the target, MIGRATING on
        the source, ``MIGRATE`` of its keys ``batch`` at a time (``between_batches()`` is called
        after each, while the slot is half-moved), then ``SETSLOT … NODE`` on the target, the
        source and the other primaries."""
        from_port = self.owner_of(slot)
        if from_port == to_port:
            raise ValueError(f"slot {slot} is already served by {to_port}")
        ids = self.node_ids()
        with self.node_client(to_port) as target, self.node_client(from_port) as source:
            target.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from_port])
            source.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to_port])
            while keys := source.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch):
                source.execute_command("MIGRATE", "127.0.0.1", to_port, "", 0, 5000, "KEYS", *keys)
                if between_batches is not None:
                    between_batches()
            target.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[to_port])
            source.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[to_port])
        for port in self.primary_ports():
            if port not in (from_port, to_port):
                with self.node_client(port) as other:
                    other.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[to_port])

    def _start(self) -> None:
        self.ports = []
        while len(self.ports) < self.count:
            port = free_port()
            if port != 6379 and port not in self.ports and port + 10000 <= 65535:
                self.ports.append(port)
        for port in self.ports:
            self.procs.append(self._spawn(port))
        deadline = time.monotonic() + START_TIMEOUT_S
        for port, proc in zip(self.ports, self.procs):
            self._wait_answering(port, proc, deadline)
        created = subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in self.ports),
                "--cluster-replicas",
                str(self.replicas),
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
        )
        if created.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed:\n{created.stdout[-2000:]}{created.stderr[-2000:]}")
        for port in self.ports:
            self._wait_cluster_ok(port, deadline)

    def _spawn(self, port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                f"{self.dir}/nodes-{port}.conf",
                "--repl-diskless-sync-delay",
                "0",
                "--cluster-node-timeout",
                "5000",
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
                f"{self.dir}/redis-{port}.log",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=DIES_WITH_TESTS,
        )

    def _wait_answering(self, port: int, proc: subprocess.Popen, deadline: float) -> None:
        while True:
            try:
                with self.node_client(port) as probe:
                    if probe.info("server")["process_id"] == proc.pid:  # ours, not another's
                        return
            except redis.RedisError:
                pass
            if proc.poll() is not None:
                with open(f"{self.dir}/redis-{port}.log", errors="replace") as log:
                    said = log.read()
                if "Address already in use" in said:
                    raise _PortTaken(port)
                raise RuntimeError(f"redis-server (cluster node {port}) did not start: {said[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server (cluster node {port}) did not answer in time")
            time.sleep(0.05)

    def _wait_cluster_ok(self, port: int, deadline: float) -> None:
        """Until the node says ``cluster_state:ok`` and, if it is a primary, its replica is
        connected. (Other nodes learn of the replicas by gossip some seconds later: a test must
        not expect them in every node's slot map at once.)"""
        with self.node_client(port) as probe:
            while not self._node_ready(probe):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"cluster node {port} never reached cluster_state:ok with its replica")
                time.sleep(0.05)

    def _node_ready(self, probe: redis.Redis) -> bool:
        if b"cluster_state:ok" not in probe.execute_command("CLUSTER", "INFO"):
            return False
        replication = probe.info("replication")
        return replication["role"] != "master" or replication["connected_slaves"] >= self.replicas

    def _end_processes(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.procs = []

    def stop(self) -> None:
        self._end_processes()
        shutil.rmtree(self.dir, ignore_errors=True)


class _PortTaken(Exception):
    pass
