"""redis-py's failures as the source-neutral ``SourceUnavailable``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.sentinel import MasterNotFoundError

from ..errors import SourceUnavailable, UnreadableQueueData


@contextmanager
def redis_errors(connection: str) -> Iterator[None]:
    """Turn redis-py's failures into ``SourceUnavailable`` with a message that names the
    connection but never its URL or password."""
    try:
        yield
    except (redis.AuthenticationError, redis.exceptions.AuthorizationError):
        # Checked before ConnectionError, which these subclass in redis-py.
        raise SourceUnavailable(connection, "authentication failed (check the user and password)") from None
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise SourceUnavailable(connection, describe(exc)) from None
    except redis.ResponseError as exc:
        # A pipeline's error says "Command # n (…) of pipeline caused error: WRONGTYPE …".
        if "WRONGTYPE" in str(exc):
            raise UnreadableQueueData(connection, "a key holds another Redis type than BullMQ gives it") from None
        raise SourceUnavailable(connection, refusal(exc)) from None


# How Redis 6/7 word a refusal by the ACL: a command sent (NOPERM) and a command a script called.
ACL_REFUSALS = ("NOPERM", "no permissions to run", "can't run this command or subcommand")


def refusal(exc: redis.ResponseError) -> str:
    """A refused command, saying so plainly when the ACL user lacks the permission (also when a
    BullMQ script called the command: Redis checks those against the user too)."""
    text = str(exc)
    if isinstance(exc, redis.exceptions.NoPermissionError) or any(words in text for words in ACL_REFUSALS):
        return f"the Redis user may not run a command (its ACL): {text}"
    return f"Redis refused a command: {text}"


@contextmanager
def unreachable_only(connection: str) -> Iterator[None]:
    """Only "could not reach the server" as ``SourceUnavailable``; a refused command stays the
    error it is (a long task treats the first as a pause and the second as its failure)."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise SourceUnavailable(connection, describe(exc)) from None


def describe(exc: Exception) -> str:
    if isinstance(exc, redis.TimeoutError):
        return "timed out waiting for Redis to answer"
    text = str(exc) or exc.__class__.__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        # OpenSSL's own words ("self-signed certificate in certificate chain") do not say
        # what to change: almost always the CA file, or a name the certificate does not carry.
        text = (
            "TLS certificate verification failed: the certificate Redis presented is not signed by a "
            "CA this connection trusts (?ssl_ca_certs=) or does not name its host: " + text
        )
    if isinstance(exc, MasterNotFoundError):
        # During a failover, or when no Sentinel answers; redis-py's text lists each Sentinel's error.
        text = "no Sentinel names a reachable primary (a failover in progress, or the Sentinels are down): " + text
    return text if len(text) < 300 else text[:300] + "…"


def guarded_iter(connection: str, chunks: Iterator[str]) -> Iterator[str]:
    """``chunks`` with the failures met while iterating translated too (a streamed export
    reads Redis page by page, after the response has started)."""
    with redis_errors(connection):
        yield from chunks
