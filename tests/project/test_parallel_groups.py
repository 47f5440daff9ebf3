"""The suite's ``xdist_group`` marks hold: tests of one group run on one pytest-xdist worker,
one after another. The kill-and-restart trials (``heavy_trial``) and the two-replicas module
rely on it — the trials must never run two at once, and a group's module fixture (four
processes) must start once. pytest 9.2 with pytest-xdist 3.8 silently dropped the grouping
(pytest-dev/pytest-xdist#1386): a run of this synthetic suite catches such an upgrade."""

from __future__ import annotations

import subprocess
import sys
import textwrap

GROUPED = textwrap.dedent(
    """
    import os
    import pytest

    pytestmark = pytest.mark.xdist_group("together")


    @pytest.mark.parametrize("n", range(6))
    def test_grouped(n, tmp_path_factory):
        out = tmp_path_factory.getbasetemp().parent / f"grouped-{n}"
        out.write_text(os.environ["PYTEST_XDIST_WORKER"])
    """
)
LOOSE = textwrap.dedent(
    """
    import time

    import pytest


    @pytest.mark.parametrize("n", range(6))
    def test_loose(n):
        time.sleep(0.2)
    """
)


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "test_grouped.py").write_text(GROUPED)
    (suite / "test_loose.py").write_text(LOOSE)
    base = tmp_path / "base"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:django",
            "-n",
            "3",
            "--dist=loadgroup",
            f"--basetemp={base}",
            str(suite),
        ],
        cwd=suite,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {path.read_text() for path in base.glob("grouped-*")}
    assert len(list(base.glob("grouped-*"))) == 6
    assert len(workers) == 1, f"one group ran on {sorted(workers)}"
