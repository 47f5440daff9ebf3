"""On the embedded SQLite database, the web process and the monitor write the same file: a
transaction that reads and then writes waits for another process's writer instead of failing
with "database is locked" (a login did, while a monitor wrote).

Two processes of their own, with the settings Queuewatch ships (the test run begins SQLite
transactions otherwise: tests/settings.py says why)."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.support.servers import ROOT, app_env

SETUP = """
import django, sys, time
django.setup()
from django.db import connection, transaction
"""

HOLDER = (
    SETUP
    + """
with connection.cursor() as c:
    c.execute("CREATE TABLE IF NOT EXISTS writes (who TEXT)")
with transaction.atomic():
    with connection.cursor() as c:
        c.execute("INSERT INTO writes VALUES ('holder')")
    print("written", flush=True)
    sys.stdin.readline()  # commit when told
print("committed", flush=True)
"""
)

READER_THEN_WRITER = (
    SETUP
    + """
print("starting", flush=True)
with transaction.atomic():
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM writes")  # reads first...
        time.sleep(1.0)  # ...while the other process commits...
        c.execute("INSERT INTO writes VALUES ('reader')")  # ...then writes
        c.execute("SELECT who FROM writes ORDER BY rowid")
        print(",".join(row[0] for row in c.fetchall()), flush=True)
"""
)


def test_a_read_then_write_transaction_waits_for_another_processs_writer(tmp_path):
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

    holder = python(HOLDER)
    assert holder.stdout.readline().strip() == "written", holder.stderr.read()
    reader = python(READER_THEN_WRITER)
    try:
        # Begun IMMEDIATE, the reader waits at its start for the holder's lock; begun DEFERRED,
        # it would read now and fail at its write, the holder having committed in between.
        assert reader.stdout.readline().strip() == "starting", reader.stderr.read()
        time.sleep(0.5)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "committed", holder.stderr.read()
        out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        assert out.split() == ["holder,reader"]
    finally:
        for proc in (holder, reader):
            proc.kill()
            proc.wait()
