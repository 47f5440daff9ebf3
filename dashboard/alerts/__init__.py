"""Alerting: rules evaluated by the monitor, their state rows, silences, and the outbox of
notifications delivered by email and webhook. A Django app of its own (label ``alerts``)."""
