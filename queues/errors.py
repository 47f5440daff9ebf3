"""Errors the reader raises, each with a message safe to show a user (no passwords)."""


class QueuewatchError(Exception):
    """Base class for errors with a user-facing message."""


class RedisUnavailable(QueuewatchError):
    """The monitored Redis could not be reached or did not answer in time."""

    def __init__(self, connection: str, reason: str):
        self.connection = connection
        self.reason = reason
        super().__init__(f"Redis connection '{connection}' is unavailable: {reason}")


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


class ConfigurationError(QueuewatchError):
    """A setting has a value we cannot use; raised at start-up so it fails loudly."""
