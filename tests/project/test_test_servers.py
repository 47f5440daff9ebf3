"""The servers the tests start do not outlive the test process that started them, even when it
is killed (a stopped ``./dev test`` must not leave redis-servers holding ports)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.support.servers import ROOT

STARTS_A_SERVER = """
from tests.support.servers import RedisServer
server = RedisServer()
print(server.proc.pid, flush=True)
import time
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) is gone for our purposes.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_test_process_takes_its_redis_server_with_it():
    starter = subprocess.Popen([sys.executable, "-c", STARTS_A_SERVER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(starter.stdout.readline())
        assert alive(server_pid)
    finally:
        starter.send_signal(signal.SIGKILL)  # no finally, no atexit: as when a run is killed
        starter.wait(10)
    deadline = time.monotonic() + 10
    while alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(server_pid)
