"""What a JSON Schema may cost to check data against (``queues.job_schema`` asks): the bound on
how far its references expand, checked when it is stored, and a ``uniqueItems`` that takes one
hashing pass where jsonschema's compares objects pair by pair.

Framework-free.
"""

from __future__ import annotations

from typing import Any

from jsonschema import ValidationError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from .messages import Message, _

MAX_EXPANSION = 20_000  # schema nodes one value of the data may be checked against
_NO_FETCH = Registry()  # retrieves nothing


class _Refused(Exception):
    pass


# Keywords whose subschemas apply to the same place in the data as their parent (so their cost
# adds up there), and those that apply to a part of it (a property, an item: recursion through
# them ends with the data's depth).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_BELOW_ONE = ("additionalProperties", "items", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_BELOW_MAP = ("properties", "patternProperties")


def expansion_problem(schema: dict) -> Message | None:
    """Refuse a schema whose references expand too far: a 2 KB schema of nested ``allOf`` and
    ``$ref`` is 2**22 checks of every value, minutes of CPU. Counts the schema's nodes with each
    reference replaced by what it names (each reference target counted once per path through
    it; a reference back to a schema being expanded counts once), and refuses a reference that
    leads back to where it started without going down into the data (it would never end).
    Returns why it is refused, or None."""
    resolver = _NO_FETCH.resolver_with_root(DRAFT202012.create_resource(schema))
    memo: dict[int, int] = {}
    open_at: dict[int, int] = {}  # node being expanded -> how many steps down into the data it was opened at

    def target(ref: str) -> Any:
        try:
            return resolver.lookup(ref).contents
        except Unresolvable:
            return None  # _check_references has said so for $ref; a $dynamicRef may resolve at run time

    def cost(node: Any, depth: int) -> int:
        if not isinstance(node, dict):
            return 1
        key = id(node)
        if key in open_at:
            if open_at[key] == depth:
                raise _Refused(
                    _(
                        "The schema refers back to itself without going down into the data (a $ref loop "
                        "through allOf, anyOf, oneOf, not or if), so checking data against it would never end."
                    )
                )
            return 1
        if key in memo:
            return memo[key]
        open_at[key] = depth
        total = 1
        subs: list[tuple[Any, int]] = [(node.get(k), depth) for k in _IN_PLACE_ONE]
        subs += [(item, depth) for k in _IN_PLACE_MANY if isinstance(node.get(k), list) for item in node[k]]
        if isinstance(node.get("dependentSchemas"), dict):
            subs += [(item, depth) for item in node["dependentSchemas"].values()]
        subs += [(node.get(k), depth + 1) for k in _BELOW_ONE]
        subs += [(item, depth + 1) for k in _BELOW_MAP if isinstance(node.get(k), dict) for item in node[k].values()]
        if isinstance(node.get("prefixItems"), list):
            subs += [(item, depth + 1) for item in node["prefixItems"]]
        for k in ("$ref", "$dynamicRef"):
            if isinstance(node.get(k), str):
                subs.append((target(node[k]), depth))
        for sub, at in subs:
            if sub is not None:
                total += cost(sub, at)
                if total > MAX_EXPANSION:
                    raise _Refused(
                        _(
                            "The schema expands to more than {n} checks of one value once its references "
                            "are followed (nested allOf, anyOf, oneOf or $ref multiply): validating data "
                            "against it would take too long. Share fewer references, or flatten it.",
                            n=MAX_EXPANSION,
                        )
                    )
        del open_at[key]
        memo[key] = total
        return total

    try:
        cost(schema, 0)
    except _Refused as refused:
        return refused.args[0]
    return None


def unique_items(validator, unique, instance, schema):
    """jsonschema's ``uniqueItems`` compares objects pair by pair (30,000 of them: minutes);
    here each item is reduced to a hashable form equal where JSON Schema says the values are
    equal (1 and 1.0, objects whatever their key order; never true and 1), in one pass."""
    if unique and validator.is_type(instance, "array"):
        seen = set()
        for item in instance:
            key = _same(item)
            if key in seen:
                yield ValidationError("has non-unique elements")
                return
            seen.add(key)


_TRUE, _FALSE = object(), object()  # JSON's true and false are not 1 and 0, as Python's are


def _same(value: Any) -> Any:
    """A hashable form of a JSON value, equal to another's exactly when JSON Schema calls the two
    values equal (Python's numbers already compare so: 1 == 1.0)."""
    kind = type(value)
    if kind is dict:
        return frozenset({(k, _same(v)) for k, v in value.items()})
    if kind is list:
        return tuple([_same(v) for v in value])
    if kind is bool:
        return _TRUE if value else _FALSE
    return value  # str, int, float, None
