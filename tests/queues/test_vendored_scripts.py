"""The vendored BullMQ scripts (queues/redis/bullmq_lua) are the pinned npm package's own,
byte for byte, and of the release SCRIPTS_VERSION names."""

from __future__ import annotations

import json
import subprocess

import pytest

from queues.redis.bullmq_scripts import COMMANDS_DIR, SCRIPTS_VERSION
from tests.support.servers import NODE_DIR, ensure_node_modules, node_available

pytestmark = [pytest.mark.node, pytest.mark.skipif(not node_available(), reason="needs Node.js and npm")]

# The flattened scripts as BullMQ ships them (its build resolves the `--- @include`s).
DUMP = """
const scripts = require('bullmq/dist/cjs/scripts/index.js');
const out = {};
for (const s of Object.values(scripts)) if (s && s.content) out[`${s.name}-${s.keys}.lua`] = s.content;
process.stdout.write(JSON.stringify({version: require('bullmq/package.json').version, scripts: out}));
"""


def test_vendored_scripts_equal_the_pinned_npm_package():
    ensure_node_modules()
    npm = json.loads(
        subprocess.run(["node", "-e", DUMP], cwd=NODE_DIR, capture_output=True, text=True, check=True).stdout
    )
    assert npm["version"] == ".".join(map(str, SCRIPTS_VERSION))
    vendored = {p.name: p.read_text(encoding="utf-8") for p in COMMANDS_DIR.glob("*.lua")}
    assert sorted(vendored) == sorted(npm["scripts"])
    assert [name for name, text in sorted(vendored.items()) if text != npm["scripts"][name]] == []
