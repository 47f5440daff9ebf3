"""Parsing JSON written by producers we do not control: the one place that does it.

Two things in such JSON break naive code further down:
- non-finite numbers (``Infinity``, ``NaN``, ``1e400``): Python parses them to ``inf``/``nan``,
  which then raise in ``int()`` or leave as invalid JSON in an API response. They are kept as
  the text the producer wrote (a string), so they show as written and serialise as strict JSON;
- deep nesting: a value nested hundreds deep parses, but every recursive walk after it
  (redaction, pretty-printing) raises ``RecursionError``. Beyond ``MAX_DEPTH`` the value counts
  as not JSON, and callers show the raw text instead.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Real payloads are rarely nested more than a dozen levels; recursive walks stay far below
# Python's recursion limit (1000) at this depth, whatever the caller's own stack depth.
MAX_DEPTH = 100


def _float_or_text(literal: str) -> float | str:
    value = float(literal)
    return value if math.isfinite(value) else literal


def _decoder_kwargs() -> dict:
    return {"parse_constant": str, "parse_float": _float_or_text}


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` has containers nested more than ``limit`` deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def parse_json(raw: str | bytes) -> tuple[bool, Any]:
    """``(True, value)`` for JSON we can safely walk, else ``(False, raw)``. Never raises."""
    try:
        value = json.loads(raw, **_decoder_kwargs())
    except (ValueError, RecursionError, TypeError):
        return False, raw
    if nested_deeper_than(value, MAX_DEPTH):
        return False, raw
    return True, value


def loads_or(raw: str | bytes, default: Any) -> Any:
    """The parsed value, or ``default`` if ``raw`` is not JSON we can safely walk."""
    ok, value = parse_json(raw)
    return value if ok else default


class JsonTooDeep(ValueError):
    """JSON an operator sent is nested more than ``MAX_DEPTH`` deep."""


class NonFiniteNumber(ValueError):
    """JSON an operator sent holds ``NaN``, ``Infinity`` or a number too big for a float."""


def _refuse_constant(name: str) -> Any:
    raise NonFiniteNumber(name)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise NonFiniteNumber(literal)
    return value


def strict_loads(text: str | bytes) -> Any:
    """JSON an operator typed or sent (a form field, an API body), refused rather than bent:
    ``json.JSONDecodeError`` when it is not JSON, ``NonFiniteNumber`` for a number no JSON
    reader agrees on, ``JsonTooDeep`` beyond ``MAX_DEPTH`` (a 5,000-deep body would otherwise
    exhaust the parser's recursion)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise JsonTooDeep(MAX_DEPTH) from None
    if nested_deeper_than(value, MAX_DEPTH):
        raise JsonTooDeep(MAX_DEPTH)
    return value
