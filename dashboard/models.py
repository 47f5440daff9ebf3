"""The ``dashboard`` app's models live in their feature packages; importing them here registers
them under the ``dashboard`` app label, so tables and migrations stay where they were."""

from dashboard.accounts.models import ApiToken, QueueGrant, hash_token  # noqa: F401
from dashboard.accounts.preferences import UserPreference  # noqa: F401,E402
from dashboard.actions.models import BulkTask, QueueSchema, TriageRule  # noqa: F401
from dashboard.audit.models import AuditEntry  # noqa: F401
from dashboard.browse.models import SearchTask  # noqa: F401
from dashboard.connections.models import DeadLetterEnvelope  # noqa: F401
from dashboard.live.models import JobTimingPoint, QueuePoint, StreamCursor  # noqa: F401
