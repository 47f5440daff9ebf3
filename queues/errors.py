"""Errors the reader raises, each with a message safe to show a user (no passwords)."""

from .messages import _


class QueuewatchError(Exception):
    """Base class for errors with a user-facing message."""


class SourceUnavailable(QueuewatchError):
    """A monitored connection (of any kind) could not be reached, refused a command or did not
    answer in time. ``reason`` is safe to show: it never holds the URL or a password."""

    def __init__(self, connection: str, reason: str):
        self.connection = connection
        self.reason = reason
        super().__init__(f"Connection '{connection}' is unavailable: {reason}")


class UnreadableQueueData(SourceUnavailable):
    """The connection answered, but a key of the queue holds another type than BullMQ gives it
    (a producer wrote over it): that queue's read fails, not the connection. Callers that only
    know ``SourceUnavailable`` still handle it; pages and the API say what it is."""

    def __init__(self, connection: str, reason: str):
        super().__init__(connection, reason)
        self.args = (
            f"Connection '{connection}' answered, but the queue's data cannot be read as BullMQ stores it: {reason}",
        )


class NotOffered(QueuewatchError):
    """A connection's kind does not offer this capability (a facet it has not built yet, such
    as job pages on a kind that only counts): shown as "not offered", never as an outage."""

    def __init__(self, *, connection: str, kind: str, facet: str):
        self.connection, self.kind, self.facet = connection, kind, facet
        # ``facet`` is the wording of ``queues.sources.facets.FACETS`` (a marked message).
        self.message = _(
            "Connection “{connection}” ({kind}) does not offer {facet}.", connection=connection, kind=kind, facet=facet
        )
        super().__init__(str(self.message))


class QueueNotFound(QueuewatchError):
    def __init__(self, connection: str, prefix: str, name: str):
        self.connection, self.prefix, self.name = connection, prefix, name
        super().__init__(f"No queue '{name}' under prefix '{prefix}' on connection '{connection}'.")


class JobNotFound(QueuewatchError):
    def __init__(self, queue_name: str, job_id: str):
        self.queue_name, self.job_id = queue_name, job_id
        super().__init__(
            f"Job '{job_id}' was not found in queue '{queue_name}'. It may have been removed, "
            "pruned by removeOnComplete/removeOnFail, or never existed."
        )


class NotAJob(QueuewatchError):
    """The id names a key of the queue that is not a job (a scheduler's hash, the events stream,
    a deduplication key...): it is in none of the queue's states."""

    def __init__(self, job_id: str):
        self.job_id = job_id
        super().__init__(f"'{job_id}' is not a job of this queue.")


class ConfigurationError(QueuewatchError):
    """A setting has a value we cannot use; raised at start-up so it fails loudly."""
