"""The README's commands for a user and a token work exactly as written, from a fresh copy of
the repository (its tracked files only; the virtualenv is reused, so nothing is installed)."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.servers import ROOT

PASSWORD = "readme-Pass-2026!"


def readme_manage_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [line.split("#")[0].strip() for line in text.splitlines() if line.startswith("./dev manage ")]


@pytest.fixture
def fresh_copy(tmp_path) -> Path:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    copy = tmp_path / "queuewatch"
    for name in filter(None, tracked.decode().split("\0")):
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, target)  # keeps modes (./dev) and times (no reinstall)
    (copy / ".venv").symlink_to(ROOT / ".venv")
    return copy


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("QUEUEWATCH_", "DJANGO_", "DATABASE_URL"))}


def run_in_a_terminal(command: str, cwd: Path, answers: dict[str, str], timeout: float = 120) -> str:
    """Run ``command`` with a terminal as its stdin (createsuperuser asks for a password only
    in one), answering each prompt in ``answers``."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=clean_env(),
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    output, pending, deadline = "", dict(answers), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(primary, 4096).decode(errors="replace")
                except OSError:  # the command closed the terminal: it has finished
                    break
                output += chunk
                for prompt in list(pending):
                    if output.rstrip().endswith(prompt):
                        os.write(primary, (pending.pop(prompt) + "\n").encode())
            elif proc.poll() is not None:
                break
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, f"{command!r} failed:\n{output}"
    return output


def test_the_readme_user_and_token_commands_work_as_written_from_a_fresh_copy(fresh_copy):
    commands = readme_manage_commands()
    assert [c.split()[2] for c in commands] == ["createsuperuser", "set_role", "api_token"]
    create, set_role, api_token = commands

    run_in_a_terminal(create, fresh_copy, {"Password:": PASSWORD, "Password (again):": PASSWORD})
    run_in_a_terminal(set_role, fresh_copy, {})
    token = run_in_a_terminal(api_token, fresh_copy, {}).strip().splitlines()[-1].strip()
    assert re.fullmatch(r"\S{20,}", token), token

    # The token authenticates against the JSON API of that same installation.
    check = (
        "from django.test import Client; "
        f"with_token = Client(HTTP_AUTHORIZATION='Bearer {token}', HTTP_HOST='127.0.0.1'); "
        "without = Client(HTTP_HOST='127.0.0.1'); "
        "print(with_token.get('/api/v1/tasks/999999').status_code, without.get('/api/v1/tasks/999999').status_code)"
    )
    statuses = (
        subprocess.run(
            ["./dev", "manage", "shell", "-c", check],
            cwd=fresh_copy,
            env=clean_env(),
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.splitlines()[-1]
        .split()
    )
    assert statuses == ["404", "401"], statuses
