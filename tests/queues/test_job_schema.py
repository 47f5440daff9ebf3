"""A queue's job schema, framework-free (queues.job_schema): what may be stored (Draft 2020-12,
64 KB, local references only, no fetch, no regular expression that backtracks for ever) and
what data passes it, with messages that say where and what and never quote the value."""

from __future__ import annotations

import socket

import pytest

from queues import job_schema as js

ORDER = {
    "type": "object",
    "required": ["to", "amount"],
    "additionalProperties": False,
    "properties": {
        "to": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
        "amount": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
    },
    "$defs": {"item": {"type": "object", "properties": {"price": {"type": "number"}}}},
}


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("the schema code tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_valid_data_passes_and_no_schema_passes_everything(no_network):
    assert js.validate(js.check_schema(ORDER), {"to": "a@b.c", "amount": 3, "items": [{"price": 1.5}]}) == []
    assert js.validate(None, "anything") == []


def test_invalid_data_gets_paths_and_reasons_without_the_values(no_network):
    secret = "hunter2-not-an-address"
    reasons = js.validate(ORDER, {"to": secret, "amount": -1, "items": [{"price": "free"}], "extra": 1})
    assert reasons == [
        '$: properties not allowed by the schema: "extra".',
        "$.amount: should be ≥ 0.",
        "$.items[0].price: should be of type number.",
        '$.to: should match the pattern "^[^@]+@[^@]+$".',
    ]
    assert not any(secret in r or "free" in r for r in reasons)
    assert js.validate(ORDER, {"amount": 1}) == ['$: the required property "to" is missing.']


def test_at_most_a_few_reasons():
    many = {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(20)}}
    reasons = js.validate(many, {f"k{i}": i for i in range(20)})
    assert len(reasons) == js.MAX_ERRORS + 1 and reasons[-1] == "… and more."


@pytest.mark.parametrize(
    "schema, says",
    [
        ([1], "must be a JSON object"),
        ({"type": "nope"}, "not a valid JSON Schema (Draft 2020-12) at $.type"),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "Only JSON Schema Draft 2020-12"),
        ({"$ref": "https://example.com/order.json"}, "points outside the schema"),
        ({"properties": {"a": {"$ref": "other.json#/x"}}}, "points outside the schema"),
        ({"$dynamicRef": "https://example.com/x"}, "points outside the schema"),
        ({"$ref": "#/$defs/missing"}, "names nothing in the schema"),
        ({"properties": {"a": {"pattern": "(a+)+$"}}}, "takes too long"),
        ({"patternProperties": {"(x+x+)+y": {}}}, "takes too long"),  # not ^…$: anchored, it is only quadratic
        ({"properties": {"a": {"pattern": "("}}}, "not a valid regular expression"),
        ({"patternProperties": {"^a": {}}, "unevaluatedProperties": False}, "unevaluatedProperties"),
        ({"enum": ["x" * 70_000]}, "larger than 64 KB"),
    ],
)
def test_schemas_that_cannot_be_stored_are_refused_with_a_reason(no_network, schema, says):
    with pytest.raises(js.SchemaProblem, match=None) as refused:
        js.check_schema(schema)
    assert says in str(refused.value)


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"type": ', "not valid JSON: Expecting value at line 1, column 10"),
        ("[" * 20_000 + "]" * 20_000, "nested too deeply"),
        (" " * (64 * 1024 + 1), "larger than 64 KB"),
    ],
)
def test_schema_text_is_parsed_with_clear_messages(text, says):
    with pytest.raises(js.SchemaProblem) as refused:
        js.parse_schema(text)
    assert says in str(refused.value)


def test_a_remote_id_never_makes_a_local_ref_fetch_anything(no_network):
    schema = js.check_schema(
        {
            "$id": "https://example.com/order",
            "properties": {"a": {"$ref": "#/$defs/s"}},
            "$defs": {"s": {"type": "string"}},
        }
    )
    assert js.validate(schema, {"a": "x"}) == []
    assert js.validate(schema, {"a": 1}) == ["$.a: should be of type string."]


def test_a_catastrophic_pattern_that_got_stored_anyway_cannot_hang_a_validation():
    """Stored before the check existed, say: every match is bounded, and all of them together
    by the validation's budget; data that cannot be checked in time is refused."""
    evil = "(x+x+)+y"
    schema = {
        "type": "object",
        "properties": {"a": {"pattern": evil}},
        "patternProperties": {evil: {}},
        "additionalProperties": False,
        "anyOf": [{"properties": {"b": {"pattern": evil}}}] * 30,
    }
    reasons = js.validate(schema, {"a": "x" * 5000, "b": "x" * 5000, "x" * 3000: 1})
    assert reasons and all("in time, so it is refused" in r or "anyOf" in r or r == "… and more." for r in reasons)


def test_messages_keep_their_id_for_translation():
    reason = js.validate(ORDER, {"to": "a@b", "amount": "3"})[0]
    assert reason.msgid == "{path}: should be of type {type}." and reason.params == {
        "path": "$.amount",
        "type": "number",
    }
    refusal = js.refusal([reason])
    assert refusal.msgid.startswith("The data does not pass the queue's schema")
