"""The deployment files are valid: docker-compose.yml passes `docker compose config`, and
Redis in it is configured the way BullMQ needs."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.app_database import compose_command
from tests.support.servers import ROOT


def test_docker_compose_config_is_valid():
    cmd = compose_command()
    if cmd is None:
        pytest.skip("neither 'docker compose' nor 'docker-compose' is installed (.ci/run installs docker-compose)")
    env = {**os.environ, "QUEUEWATCH_SECRET_KEY": "x", "POSTGRES_PASSWORD": "y"}
    result = subprocess.run([*cmd, "config"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "noeviction" in result.stdout and "appendonly" in result.stdout
    assert "QUEUEWATCH_URL_DEFAULT: redis://redis:6379/0" in result.stdout
