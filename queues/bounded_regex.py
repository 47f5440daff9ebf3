"""Regular expressions written by people (admins' triage rules, ``pattern`` in a queue's job
schema) run here, and only here, bounded: one home for the rule.

Patterns are compiled with the ``regex`` module, whose matching takes a ``timeout``, so a
hostile pattern such as ``(x+x+)+y`` cannot hang a web process: a match that runs out of time
raises ``TimeoutError`` (``search`` gives the caller the choice of what that means). Before a
pattern is stored, ``problem`` refuses one that is empty, too long, invalid, or that times out
on a pathological probe (long runs of one character, then a mismatch). The probe catches
exponential backtracking; a pattern that is only polynomially slow (``^(x+x+)+y$`` takes about
50 ms on the 2,000-character probe) may pass it, and is then bounded by the timeout of each
match like every other. Framework-free, no I/O.
"""

from __future__ import annotations

from functools import lru_cache

import regex

from .messages import Message, _

TIMEOUT_S = 0.05  # per match
PROBE_LENGTH = 2000  # characters of each pathological probe

# Inputs a pathological pattern is slow on: long runs of one character then a mismatch.
_PROBES = tuple(c * PROBE_LENGTH + "!" for c in ("a", "x", "0", " ", "-")) + (("ab" * (PROBE_LENGTH // 2)) + "!",)
SLOW = _(
    "This pattern takes too long on some inputs (nested repetition such as (a+)+ backtracks exponentially); "
    "simplify it."
)


@lru_cache(maxsize=512)
def compiled(pattern: str, flags: int = 0):
    """``pattern`` compiled (VERSION0: the syntax of Python's ``re``); ``regex.error`` if invalid."""
    return regex.compile(pattern, flags | regex.VERSION0)


def search(pattern: str, text: str, *, flags: int = 0, timeout: float = TIMEOUT_S) -> bool:
    """Whether ``pattern`` matches anywhere in ``text``. Raises ``TimeoutError`` when the match
    runs longer than ``timeout`` and ``regex.error`` when the pattern does not compile."""
    return compiled(pattern, flags).search(text, timeout=max(timeout, 0.001)) is not None


def problem(pattern: str, *, flags: int = 0, max_length: int = 300) -> Message | None:
    """What is wrong with a pattern someone wants stored, or None."""
    if len(pattern) > max_length:
        return _("A pattern can be at most {max} characters long (this one has {n}).", max=max_length, n=len(pattern))
    try:
        found = compiled(pattern, flags)
    except regex.error as e:
        return _("This is not a valid regular expression: {error}.", error=str(e))
    for probe in _PROBES:
        try:
            found.search(probe, timeout=TIMEOUT_S)
        except TimeoutError:
            return SLOW
    return None
