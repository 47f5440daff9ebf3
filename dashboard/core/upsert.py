"""Writing many rows of one model as plain tuples: insert, or update the row with the same key.

The monitor writes thousands of minute rows a second at 10,000 queues. ``bulk_create(...,
update_conflicts=True)`` spent most of that building a model instance per row and preparing
every field of every row in Python, on a thread that shares the interpreter with the monitor's
loop (py-spy: ~11 % of the monitor's samples). Here a row is a tuple in the upsert's column
order; only the columns whose values the database needs converted (dates, JSON) go through
Django's field preparation, and one statement (``INSERT … ON CONFLICT (key) DO UPDATE``, which
SQLite and PostgreSQL both speak) is executed for every row of the batch (``executemany``:
prepared once by SQLite, pipelined by psycopg).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connections, models

# Kinds of field whose Python values the drivers take as they are.
_PLAIN = (models.IntegerField, models.CharField, models.TextField, models.BooleanField, models.FloatField)


class Upsert:
    """``key`` names the unique constraint's fields, ``values`` the fields a conflict
    overwrites; rows are tuples of the key's values, then the values'. The model's other fields
    get their defaults in a new row and are left as they are in a known one."""

    def __init__(self, model: type[models.Model], *, key: Sequence[str], values: Sequence[str]):
        self.model = model
        self.key = list(key)
        self.values = list(values)
        given = [model._meta.get_field(name) for name in (*key, *values)]
        self.others = [f for f in model._meta.concrete_fields if f not in given and not f.primary_key]
        self.fields = [*given, *self.others]
        self.prepared = [i for i, f in enumerate(self.fields) if not isinstance(f, _PLAIN)]

    def sql(self, using: str) -> str:
        quote = connections[using].ops.quote_name
        columns = [quote(f.column) for f in self.fields]
        conflict = ", ".join(quote(self.model._meta.get_field(n).column) for n in self.key)
        updates = ", ".join(
            f"{quote(c)} = EXCLUDED.{quote(c)}" for c in (self.model._meta.get_field(n).column for n in self.values)
        )
        return (
            f"INSERT INTO {quote(self.model._meta.db_table)} ({', '.join(columns)}) "
            f"VALUES ({', '.join(['%s'] * len(columns))}) ON CONFLICT ({conflict}) DO UPDATE SET {updates}"
        )

    def write(self, rows: Sequence[tuple], *, using: str = "default") -> None:
        """Upsert ``rows`` (inside the caller's transaction, if any)."""
        if not rows:
            return
        connection = connections[using]
        if self.others:
            defaults = tuple(f.get_default() for f in self.others)
            rows = [(*row, *defaults) for row in rows]
        params = [self._prepared(row, connection) for row in rows] if self.prepared else list(rows)
        with connection.cursor() as cursor:
            cursor.executemany(self.sql(using), params)

    def _prepared(self, row: tuple, connection) -> tuple:
        values = list(row)
        for i in self.prepared:
            values[i] = self.fields[i].get_db_prep_save(values[i], connection)
        return tuple(values)
