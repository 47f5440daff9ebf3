"""How a snapshot talks to Redis (``queues.redis.snapshot``): commands packed as RESP bytes by
hand, sent in one buffer, and their replies read back, a transaction's ``+QUEUED`` replies
dropped and every other reply kept in place, an error reply included.

By hand rather than through redis-py's ``Pipeline``: building some 200,000 commands for 10,000
queues through it cost several times the CPU Redis spent answering them, and a snapshot's time
is mostly this process' CPU. The connection comes from the client's pool and goes back to it
only when every reply was read."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import redis

from ..ready_since import READY_FIELDS

try:  # what hiredis' reader returns while it holds no whole reply, as redis-py sets it up
    from redis._parsers.hiredis import NOT_ENOUGH_DATA as _NOT_ENOUGH_DATA
except ImportError:  # another redis-py: replies are read through its parser instead
    _NOT_ENOUGH_DATA = None


def resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


_MULTI, _EXEC = resp(b"MULTI"), resp(b"EXEC")


# ``HMGET <job key> <READY_FIELDS>`` but for the key, packed once.
_HMGET_HEAD = b"*%d\r\n$5\r\nHMGET\r\n" % (2 + len(READY_FIELDS))
_HMGET_FIELDS = b"".join(b"$%d\r\n%s\r\n" % (len(f), f) for f in READY_FIELDS)


def packed_hmget(key: bytes) -> bytes:
    return b"%s$%d\r\n%s\r\n%s" % (_HMGET_HEAD, len(key), key, _HMGET_FIELDS)


@contextlib.contextmanager
def pooled(client: redis.Redis) -> Iterator[Any]:
    """A connection of the client's pool for a snapshot's round trip; one that failed (or was left
    half-read: a step abandoned) is disconnected, never handed back to the pool as it is."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        yield conn
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)


def send(conn, chunks: list[tuple[bytes, int, bool]]) -> None:
    """Send each chunk of pre-packed commands (as one MULTI/EXEC when the chunk is atomic, else as
    plain commands) in one buffer, one ``sendall``: redis-py sends a list of parts one
    ``sendall`` each, and a Cluster's snapshot is a transaction per queue (three parts)."""
    parts = (part for packed, _, atomic in chunks for part in ((_MULTI, packed, _EXEC) if atomic else (packed,)))
    conn.send_packed_command([b"".join(parts)])


def receive(conn, chunks: list[tuple[bytes, int, bool]]) -> list:
    """Every reply to what ``send`` sent of ``chunks``, in order. An error reply (e.g. a foreign
    key of the wrong type under the prefix) comes back in place, not raised, so one odd key
    cannot hide every other queue of the connection."""
    read = _reply_reader(conn)
    gets, fill = _hiredis_reader(conn)  # looked up once: on a Cluster a transaction per queue
    out: list = []
    try:
        for _, replies, atomic in chunks:
            if not atomic:
                _take_replies(read, gets, fill, replies, out)
                continue
            _discard_replies(read, gets, fill, replies + 1)  # +OK for MULTI, then +QUEUED per command
            executed = _one_reply(read, gets, fill)  # nested error replies are returned, not raised
            if isinstance(executed, redis.ResponseError):
                raise executed
            if executed is None or len(executed) != replies:
                raise redis.ResponseError("snapshot transaction was aborted")
            out.extend(executed)
    except OSError as exc:  # what Connection.read_response would have said
        raise redis.ConnectionError(f"Error while reading a snapshot: {exc}") from exc
    return out


def _reply_reader(conn) -> Callable[[], Any]:
    """A function that reads the connection's next reply, an error reply returned in place (not
    raised). Through the connection's parser when it has one (redis-py's hiredis and RESP
    parsers do): ``Connection.read_response`` formats its host string and wraps errors on every
    call: a sixth of a snapshot's CPU at 10,000 queues when each reply was read through it."""
    read = getattr(getattr(conn, "_parser", None), "read_response", None)
    if read is not None:
        return read

    def read_in_place():
        try:
            return conn.read_response()
        except redis.ResponseError as exc:
            return exc

    return read_in_place


_Gets = Callable[[], Any] | None


def _take_replies(read: Callable[[], Any], gets: _Gets, fill: _Gets, count: int, out: list) -> None:
    """Append the next ``count`` replies to ``out``, error replies in place. With redis-py's
    hiredis parser they are taken from its reader in one loop, as ``_discard_replies`` does: a
    snapshot's second round trip is some 50,000 ``HMGET`` replies at 10,000 queues, and the
    parser's ``read_response`` around each was a tenth of its CPU."""
    if gets is None or fill is None:
        out.extend(read() for _ in range(count))
        return
    append = out.append
    while count:
        reply = gets()
        if reply is _NOT_ENOUGH_DATA:
            fill()
        elif isinstance(reply, redis.ConnectionError):  # as the parser's read_response raises it
            raise reply
        else:
            append(reply)
            count -= 1


def _one_reply(read: Callable[[], Any], gets: _Gets, fill: _Gets) -> Any:
    """The next reply, through hiredis' reader when there is one (as ``_take_replies``); a
    connection error in it (or first in it, as the parser's ``read_response`` checks) raised."""
    if gets is None or fill is None:
        return read()
    reply = gets()
    while reply is _NOT_ENOUGH_DATA:
        fill()
        reply = gets()
    if isinstance(reply, redis.ConnectionError):
        raise reply
    if isinstance(reply, list) and reply and isinstance(reply[0], redis.ConnectionError):
        raise reply[0]
    return reply


def _hiredis_reader(conn) -> tuple[_Gets, _Gets]:
    """The connection's hiredis reader's ``gets`` and its parser's socket fill, or (None, None)
    where it has no hiredis parser (then replies are read one at a time through the parser)."""
    parser = getattr(conn, "_parser", None)
    gets = getattr(getattr(parser, "_reader", None), "gets", None)
    fill = getattr(parser, "read_from_socket", None)
    if gets is None or fill is None or _NOT_ENOUGH_DATA is None:
        return None, None
    return gets, fill


def _discard_replies(read: Callable[[], Any], gets: _Gets, fill: _Gets, count: int) -> None:
    """Read and drop ``count`` replies: a transaction's ``+OK`` and ``+QUEUED`` ones, one per
    command (the results come back together in the ``EXEC`` reply). An error reply in their
    place (a command the user's ACL refuses) is raised at once, as ``Connection.read_response``
    raises it, so the reason is the command's own, not the transaction's ``EXECABORT``.

    With redis-py's hiredis parser they are taken from its reader in one loop: on a Cluster
    every queue is a transaction of its own, so these are nine in ten of the replies a snapshot
    reads, and the parser's ``read_response`` around each was a fifth of its CPU."""
    if gets is None or fill is None:  # the Python parser: one at a time
        for _ in range(count):
            reply = read()
            if isinstance(reply, Exception):
                raise reply
        return
    while count:
        reply = gets()
        if reply is _NOT_ENOUGH_DATA:  # no whole reply in the reader yet: more of the socket
            fill()
        elif isinstance(reply, Exception):  # an error reply, parsed into redis-py's error class
            raise reply
        else:  # OK, QUEUED
            count -= 1
