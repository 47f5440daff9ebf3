"""On the embedded SQLite database the web process and the monitor share one file: a writer
commits while another process holds a read transaction open (WAL mode), instead of waiting for
it and failing with "database is locked". Two processes of their own, with the settings
Queuewatch ships."""

from __future__ import annotations

import subprocess
import sys

from tests.support.servers import ROOT, app_env

SETUP = """
import django, sys
django.setup()
from django.db import connection, transaction
with connection.cursor() as c:
    c.execute("CREATE TABLE IF NOT EXISTS writes (who TEXT)")
"""

READER = (
    SETUP
    + """
with transaction.atomic():
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM writes")  # a read transaction, held open...
        print("reading", c.fetchone()[0], flush=True)
        sys.stdin.readline()  # ...until told
        c.execute("SELECT count(*) FROM writes")
        print("still reads", c.fetchone()[0], flush=True)  # its snapshot: the writer's row unseen
"""
)

WRITER = (
    SETUP
    + """
with connection.cursor() as c:
    c.execute("INSERT INTO writes VALUES ('writer')")
print("committed", flush=True)
"""
)


def test_a_writer_commits_while_another_process_holds_a_read_transaction(tmp_path):
    env = app_env(
        redis_url="redis://127.0.0.1:1/0", dashboard_url="redis://127.0.0.1:1/1", database=str(tmp_path / "db")
    )

    def python(code: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    reader = python(READER)
    writer = None
    try:
        assert reader.stdout.readline().split() == ["reading", "0"], reader.stderr.read()
        # In the rollback-journal mode the commit waits for the reader's lock: the writer would
        # fail after its 20 s timeout, while the reader still holds its transaction.
        writer = python(WRITER)
        out, err = writer.communicate(timeout=60)
        assert (writer.returncode, out.strip()) == (0, "committed"), err
        out, err = reader.communicate("\n", timeout=60)
        assert (reader.returncode, out.split()) == (0, ["still", "reads", "0"]), err
    finally:
        for proc in (reader, writer):
            if proc is not None:
                proc.kill()
                proc.wait()
