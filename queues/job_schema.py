"""An optional JSON Schema for the data of a queue's jobs: what an admin may store
(``check_schema``) and what data passes it (``validate``). One home for the rule; adding a job,
duplicating one, and editing-and-retrying one or many all ask it before writing.

- Draft 2020-12 only (the ``jsonschema`` library's ``Draft202012Validator``); a ``$schema``
  naming another draft is refused rather than silently read as 2020-12. ``format`` is an
  annotation, as the draft says, not an assertion.
- At most ``MAX_SCHEMA_BYTES`` of JSON. References are local only (``$ref``/``$dynamicRef``
  starting with ``#``), and the validator's registry retrieves nothing: no schema is ever
  fetched over the network, whatever it says.
- Regular expressions (``pattern``, ``patternProperties``) run bounded, through
  ``queues.bounded_regex`` like the triage rules: each pattern is probed when the schema is
  stored, and every match runs with a timeout inside an overall budget per validation. A match
  that runs out of time fails the data (the schema could not vouch for it).
  ``unevaluatedProperties`` beside ``patternProperties`` is refused: the library would match
  those patterns itself, unbounded.
- What checking may cost: a schema whose references expand too far, or loop without going
  down into the data, is refused when stored (``queues.schema_cost``, which also makes
  ``uniqueItems`` one hashing pass); data is checked in a separate process, ``TIME_LIMIT_S`` of
  CPU per job, past which it is refused as too costly (``queues.schema_worker``).
- Messages name where (a JSON path, ``$.items[2].price``) and what failed, never the value
  found there (stored data can hold secrets), at most ``MAX_ERRORS`` of them.

Framework-free: no Django, no I/O.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from . import bounded_regex, schema_cost, schema_worker
from .messages import Joined, Message, _

INVALID_DATA = "invalid_data"  # an outcome: the data does not pass the queue's schema; nothing was written
MAX_SCHEMA_BYTES = 64 * 1024
MAX_ERRORS = 5
MAX_PATTERN = 1000  # characters of one pattern
BUDGET_S = 0.5  # regular-expression time per validation, all matches together
TIME_LIMIT_S = 1.0  # time one job's data may take to check, all of it (queues.schema_worker)
DRAFT = "https://json-schema.org/draft/2020-12/schema"
_NO_FETCH = Registry()  # retrieves nothing: an unknown URI is Unresolvable, never a request


class SchemaProblem(ValueError):
    """A schema that cannot be stored; the message (a ``Message``) says why."""


# --- checking a schema before it is stored ---------------------------------------------------


def _walk(node: Any) -> Iterator[dict]:
    """Every object in the schema document, depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def parse_schema(text: str) -> dict:
    """A schema typed into a form or sent to the API as text: JSON, then ``check_schema``."""
    if len(text.encode("utf-8")) > MAX_SCHEMA_BYTES:
        raise SchemaProblem(_("The schema is larger than {n} KB.", n=MAX_SCHEMA_BYTES // 1024))
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaProblem(
            _(
                "The schema is not valid JSON: {msg} at line {line}, column {col}.",
                msg=exc.msg,
                line=exc.lineno,
                col=exc.colno,
            )
        ) from None
    except RecursionError:
        raise SchemaProblem(_("The schema is nested too deeply.")) from None
    return check_schema(schema)


def check_schema(schema: Any) -> dict:
    """``schema`` if it may be stored, else ``SchemaProblem`` saying why."""
    if not isinstance(schema, dict):
        raise SchemaProblem(_("A job schema must be a JSON object, e.g. {example}.", example='{"type": "object"}'))
    try:
        size = len(json.dumps(schema, ensure_ascii=False).encode("utf-8"))
        if size > MAX_SCHEMA_BYTES:
            raise SchemaProblem(_("The schema is larger than {n} KB.", n=MAX_SCHEMA_BYTES // 1024))
        if schema.get("$schema", DRAFT).rstrip("#") != DRAFT:
            raise SchemaProblem(
                _('Only JSON Schema Draft 2020-12 is supported: remove "$schema" or set it to {draft}.', draft=DRAFT)
            )
        _check_patterns(schema)  # first: a bad pattern gets the clearer of the two messages
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            where = _path(exc.absolute_path)
            raise SchemaProblem(
                _(
                    "The schema is not a valid JSON Schema (Draft 2020-12) at {path}: {why}",
                    path=where,
                    why=exc.message[:300],
                )
            ) from None
        _check_references(schema)
        too_far = schema_cost.expansion_problem(schema)
        if too_far is not None:
            raise SchemaProblem(too_far)
    except RecursionError:
        raise SchemaProblem(_("The schema is nested too deeply.")) from None
    return schema


def _check_references(schema: dict) -> None:
    resolver = _NO_FETCH.resolver_with_root(DRAFT202012.create_resource(schema))
    for node in _walk(schema):
        for key in ("$ref", "$dynamicRef"):
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            if not ref.startswith("#"):
                raise SchemaProblem(
                    _(
                        "{key} {ref} points outside the schema: only local references (starting with #) "
                        "are allowed, and nothing is ever fetched.",
                        key=key,
                        ref=ref[:200],
                    )
                )
            if key == "$ref":
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    raise SchemaProblem(_("$ref {ref} names nothing in the schema.", ref=ref[:200])) from None


def _check_patterns(schema: dict) -> None:
    has_pattern_properties = has_unevaluated = False
    for node in _walk(schema):
        patterns = []
        if isinstance(node.get("pattern"), str):
            patterns.append(node["pattern"])
        if isinstance(node.get("patternProperties"), dict):
            has_pattern_properties = True
            patterns.extend(node["patternProperties"])
        has_unevaluated = has_unevaluated or "unevaluatedProperties" in node
        for pattern in patterns:
            problem = bounded_regex.problem(pattern, max_length=MAX_PATTERN)
            if problem:
                raise SchemaProblem(
                    _("Pattern {pattern}: {problem}", pattern=json.dumps(pattern[:200]), problem=problem)
                )
    if has_pattern_properties and has_unevaluated:
        raise SchemaProblem(
            _(
                '"unevaluatedProperties" cannot be used in a schema that has "patternProperties" '
                '(their patterns would then run unbounded); use "additionalProperties" instead.'
            )
        )


# --- validating data ----------------------------------------------------------------------------

_deadline: ContextVar[float] = ContextVar("job_schema_deadline", default=0.0)


class _OutOfTime(Exception):
    pass


def _matches(pattern: str, text: str) -> bool:
    """``pattern`` searched in ``text``, bounded; ``_OutOfTime`` when it cannot be told in time."""
    left = _deadline.get() - time.monotonic()
    if left <= 0:
        raise _OutOfTime
    try:
        return bounded_regex.search(pattern, text, timeout=min(bounded_regex.TIMEOUT_S, left))
    except (TimeoutError, regex.error):
        raise _OutOfTime from None


def _too_slow(pattern: str) -> ValidationError:
    return ValidationError("pattern timed out", validator="pattern-timeout", validator_value=pattern)


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string"):
        try:
            if not _matches(pattern, instance):
                yield ValidationError(f"does not match {pattern!r}")
        except _OutOfTime:
            yield _too_slow(pattern)


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            try:
                matched = _matches(pattern, key)
            except _OutOfTime:
                yield _too_slow(pattern)
                continue
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, additional, instance, schema):
    """jsonschema's ``additionalProperties``, with ``patternProperties`` matched bounded."""
    if not validator.is_type(instance, "object"):
        return
    known, patterns, extras = schema.get("properties", {}), list(schema.get("patternProperties", {})), []
    for key in instance:
        if key in known:
            continue
        try:
            if any(_matches(p, key) for p in patterns):
                continue
        except _OutOfTime:
            yield _too_slow("|".join(patterns))
            return
        extras.append(key)
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif not additional and extras:
        yield ValidationError(
            f"unexpected properties {extras!r}",
            validator="additionalProperties",
            validator_value=sorted(extras, key=str),
        )


_Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": schema_cost.unique_items,
    },
)


@lru_cache(maxsize=64)
def _validator_for(canonical: str):
    return _Validator(json.loads(canonical), registry=_NO_FETCH)


def canonical(schema: dict) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def validate(schema: dict | None, data: Any) -> list[Message]:
    """Why ``data`` does not pass ``schema`` (at most ``MAX_ERRORS`` reasons, by path), or ``[]``.
    No schema: everything passes. Checked in a separate process (``queues.schema_worker``)
    within ``TIME_LIMIT_S``: past it the data is refused as too costly to check."""
    if schema is None:
        return []
    return validate_many(schema, [json.dumps(data, ensure_ascii=False)])[0]


def validate_many(schema: dict | None, texts: list[str | bytes]) -> list[list[Message]]:
    """``validate`` for several jobs' data given as JSON text (a bulk edit's chunk), in one
    round trip to the checking process; each item gets ``TIME_LIMIT_S``."""
    if schema is None:
        return [[] for _ in texts]
    return schema_worker.validate_texts(canonical(schema), texts, limit_s=TIME_LIMIT_S)


def validate_here(schema: dict, data: Any) -> list[Message]:
    """``validate`` in this process, unbounded in time but for its patterns: the checking
    process runs it, under its alarm."""
    validator = _validator_for(canonical(schema))
    token = _deadline.set(time.monotonic() + BUDGET_S)
    found: list[ValidationError] = []
    try:
        for error in validator.iter_errors(data):
            found.append(error)
            if len(found) > MAX_ERRORS:
                break
    except Unresolvable as exc:
        return [
            _(
                "The queue's schema cannot be used: a reference in it cannot be resolved ({ref}).",
                ref=str(getattr(exc, "ref", ""))[:200],
            )
        ]
    except RecursionError:
        return [_("The data is nested too deeply to be checked against the queue's schema.")]
    finally:
        _deadline.reset(token)
    found.sort(key=lambda e: [str(p) for p in e.absolute_path])
    messages = [describe(e) for e in found[:MAX_ERRORS]]
    if len(found) > MAX_ERRORS:
        messages.append(_("… and more."))
    return messages


def refusal(reasons: list[Message]) -> Message:
    """One message for data the schema refuses, its reasons joined."""
    return _("The data does not pass the queue's schema: {reasons}", reasons=Joined(reasons, " "))


def _path(parts) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "…"


_BOUNDS = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def describe(error: ValidationError) -> Message:
    """Where and what, in words that never quote the value found (only the schema's side)."""
    path, keyword, expected = _path(error.absolute_path), error.validator, error.validator_value
    if keyword == "type":
        types = expected if isinstance(expected, list) else [expected]
        return _("{path}: should be of type {type}.", path=path, type=" or ".join(types))
    if keyword == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}
        missing = [name for name in expected if name not in instance] or list(expected)
        return _("{path}: the required property {name} is missing.", path=path, name=json.dumps(missing[0]))
    if keyword == "additionalProperties":
        names = ", ".join(json.dumps(k, ensure_ascii=False) for k in expected)[:200]
        return _("{path}: properties not allowed by the schema: {names}.", path=path, names=names)
    if keyword in _BOUNDS:
        return _("{path}: should be {op} {limit}.", path=path, op=_BOUNDS[keyword], limit=_short(expected))
    if keyword in ("minLength", "minItems", "minProperties"):
        return _("{path}: should have at least {n} {what}.", path=path, n=expected, what=_UNITS[keyword])
    if keyword in ("maxLength", "maxItems", "maxProperties"):
        return _("{path}: should have at most {n} {what}.", path=path, n=expected, what=_UNITS[keyword])
    if keyword == "enum":
        return _("{path}: should be one of {values}.", path=path, values=_short(expected))
    if keyword == "const":
        return _("{path}: should be {value}.", path=path, value=_short(expected))
    if keyword == "pattern":
        return _("{path}: should match the pattern {pattern}.", path=path, pattern=_short(expected))
    if keyword == "pattern-timeout":
        return _(
            "{path}: could not be checked against the pattern {pattern} in time, so it is refused.",
            path=path,
            pattern=_short(expected),
        )
    if keyword == "multipleOf":
        return _("{path}: should be a multiple of {n}.", path=path, n=_short(expected))
    if keyword == "uniqueItems":
        return _("{path}: should not repeat items.", path=path)
    if keyword in ("anyOf", "oneOf"):
        if keyword == "anyOf":
            return _('{path}: should match at least one of the schemas in "anyOf".', path=path)
        return _('{path}: should match exactly one of the schemas in "oneOf".', path=path)
    if keyword == "not":
        return _('{path}: should not match the schema in "not".', path=path)
    if keyword is False or expected is False:
        return _("{path}: the schema allows nothing here.", path=path)
    return _('{path}: fails "{keyword}" ({expected}).', path=path, keyword=keyword, expected=_short(expected))


_UNITS = {
    "minLength": _("characters"),
    "maxLength": _("characters"),
    "minItems": _("items"),
    "maxItems": _("items"),
    "minProperties": _("properties"),
    "maxProperties": _("properties"),
}


if __name__ == "__main__":  # the checking process (queues.schema_worker)
    schema_worker.serve(validate_here)
