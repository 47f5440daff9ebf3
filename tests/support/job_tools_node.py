"""tests/node/job_tools.mjs as a long-lived Node BullMQ 6.7 process (``NodeWorkers``' line
protocol), started in a chosen ``TZ``."""

from __future__ import annotations

import os
import subprocess

from tests.support.node_workers import NodeWorkers
from tests.support.servers import DIES_WITH_TESTS, NODE_DIR, ensure_node_modules

ZONE = "America/New_York"  # not UTC: a tool that mixed local and UTC times would be hours off


class NodeJobTools(NodeWorkers):
    def __init__(self, redis_url: str, prefix: str, *, tz: str = ZONE):
        ensure_node_modules()
        self.proc = subprocess.Popen(
            ["node", "job_tools.mjs", redis_url, prefix],
            cwd=NODE_DIR,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "TZ": tz},
            preexec_fn=DIES_WITH_TESTS,
        )
