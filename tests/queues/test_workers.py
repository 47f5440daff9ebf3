"""Workers per queue from CLIENT LIST (queues/workers.py): BullMQ 6.7's connection names
(``<prefix>:<base64(queue)>`` and ``…:w:<worker name>``, as ``Queue.getWorkers()`` matches
them), the database a client is on, queue-events readers that are not workers, and a server that
refuses CLIENT LIST. The live test with real Node workers is tests/live/test_workers_node.py."""
# Literal `bull:` keys kept: client names as BullMQ sets them, and CLIENT LIST (server-wide) on a whole database.

from __future__ import annotations

import uuid

import pytest
import redis

from queues.keys import QueueRef
from queues.redis.workers import read_workers
from queues.workers import Worker, client_name, workers_by_queue

MAIL = QueueRef("default", "bull", "mail")
EMOJI = QueueRef("default", "app", "émails ✉")


def client(name, *, db=0, addr="10.0.0.1:5000", age=30, idle=2):
    return {"name": name, "db": str(db), "addr": addr, "age": str(age), "idle": str(idle)}


def test_client_name_is_bullmqs_prefix_and_base64_queue_name():
    assert client_name(MAIL) == "bull:bWFpbA=="  # what Node's QueueBase.clientName() gives "mail"
    assert client_name(EMOJI) == "app:w6ltYWlscyDinIk="


def test_named_and_unnamed_workers_match_and_others_do_not():
    clients = [
        client("bull:bWFpbA==", addr="a:1"),
        client("bull:bWFpbA==:w:box:w:7", addr="a:2", age=90, idle=0),  # the worker name may hold ":w:"
        client("bull:bWFpbA==:qe", addr="a:3"),  # QueueEvents reader, not a worker
        client("bull:bWFpbA==", db=3, addr="a:4"),  # same prefix and name, another database
        client("other:bWFpbA==", addr="a:5"),  # another prefix
        client("", addr="a:6"),
        client("app:w6ltYWlscyDinIk=:w:e", addr="b:1"),
    ]
    found = workers_by_queue(clients, [MAIL, EMOJI, QueueRef("default", "bull", "idle")], db=0)
    assert [(w.name, w.addr, w.age_s, w.idle_s) for w in found[MAIL]] == [("", "a:1", 30, 2), ("box:w:7", "a:2", 90, 0)]
    assert [w.addr for w in found[EMOJI]] == ["b:1"]
    assert found[QueueRef("default", "bull", "idle")] == []


def test_hostile_client_list_fields_do_not_raise():
    found = workers_by_queue([{"name": "bull:bWFpbA==", "db": "x", "age": None}, {"db": "0"}], [MAIL], db=0)
    assert [(w.age_s, w.idle_s, w.addr) for w in found[MAIL]] == [(0, 0, "")]


def test_read_workers_on_real_redis_sees_a_named_connection_on_its_database(redis_db):
    worker = redis_db.client()
    worker.client_setname(client_name(MAIL) + ":w:real")
    try:
        found = read_workers(redis_db.client(), [MAIL])
        assert [w.name for w in found[MAIL]] == ["real"]
    finally:
        worker.close()


def test_a_server_that_refuses_client_list_raises_so_workers_stay_unknown(redis_db):
    admin = redis_db.client()
    user, password = f"noclient-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "+@all", "-client")
    try:
        limited = redis.Redis.from_url(redis_db.url, username=user, password=password)
        with pytest.raises(redis.RedisError):
            read_workers(limited, [MAIL])
        limited.close()
    finally:
        admin.execute_command("ACL", "DELUSER", user)


def test_python_bullmq_names_match_too_and_each_worker_keeps_its_connection_name():
    names = ["bull:mail", "bull:mail:w:py-1", "bull:mail:qe", "bull:bWFpbA==:w:node"]
    found = workers_by_queue([client(n, addr=n) for n in names], [MAIL], db=0)
    assert sorted(w.name for w in found[MAIL]) == ["", "node", "py-1"]
    # The health check's evidence: the names BullMQ gave the connections, kept through the document.
    assert [w.client for w in found[MAIL]] == ["bull:mail", "bull:bWFpbA==:w:node", "bull:mail:w:py-1"]
    assert [Worker.from_dict(w.as_dict()) for w in found[MAIL]] == found[MAIL]
    assert Worker.from_dict({"name": "old", "addr": "a:1"}).client == ""  # a document from before the field
