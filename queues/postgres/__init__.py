"""Reading BullMQ 6's PostgreSQL backend: its schema is documented by the ``.sql`` migrations
the BullMQ packages ship (``bullmq/postgres/migrations``); ``queues.sources.postgres`` is the
source kind built on these readers."""
