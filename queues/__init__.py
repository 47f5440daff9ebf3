"""Framework-free BullMQ-on-Redis library.

Nothing in this package imports Django: it is the part of Queuewatch that knows how BullMQ 6
lays queues out in Redis (its keys, job hashes and Lua scripts, as of BullMQ 6.7) and how
to read them cheaply and safely. The web edge lives in ``dashboard/``.
"""
