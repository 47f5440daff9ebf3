"""PostgreSQL roles with the grants docs/operations.md gives Queuewatch's user, for the tests that
check what a role may do: the reading grant, and the grant actions need on top of it."""

from __future__ import annotations

import uuid

READ_GRANTS = ("GRANT USAGE ON SCHEMA bullmq TO {role}", "GRANT SELECT ON ALL TABLES IN SCHEMA bullmq TO {role}")
ACT_GRANTS = (
    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA bullmq TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA bullmq TO {role}",
)


def role_url(postgres_server, url: str, *grants: str) -> str:
    """The URL of a new login role of the database ``url`` names, given ``grants`` (BullMQ's
    schema must exist: the grants name its tables)."""
    role = f"qw_{uuid.uuid4().hex[:8]}"
    with postgres_server.connect(dbname=url.rsplit("/", 1)[1]) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        for grant in grants:
            conn.execute(grant.format(role=role))
    return url.replace("postgres@", f"{role}@", 1)
