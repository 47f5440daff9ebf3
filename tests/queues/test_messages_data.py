"""Text from ``queues/`` kept as JSON (a bulk task's progress) keeps its message id and
parameters, so it is translated when shown; a huge parameter is cut, a stored form that does
not fit its message id falls back to that id, and an older row's plain string stays itself."""

from __future__ import annotations

import json

from queues.messages import Joined, Message, _, as_data, from_data


def round_trip(text):
    return from_data(json.loads(json.dumps(as_data(text))))


def test_a_message_with_nested_and_joined_parameters_comes_back_whole():
    reasons = Joined([_("{path}: should be {op} {limit}.", path="$.amount", op="≥", limit="1"), _("… and more.")], " ")
    text = _(
        "Job {id} was left failed: {why}",
        id="7",
        why=_("The data does not pass the queue's schema: {reasons}", reasons=reasons),
    )
    back = round_trip(text)
    assert isinstance(back, Message) and back == text and back.msgid == text.msgid
    assert isinstance(back.params["why"], Message) and isinstance(back.params["why"].params["reasons"], Joined)
    assert [p.msgid for p in back.params["why"].params["reasons"].parts] == [
        "{path}: should be {op} {limit}.",
        "… and more.",
    ]


def test_a_huge_parameter_is_cut_and_numbers_stay_numbers():
    back = round_trip(_("Job {id} was left failed: {why}", id="x" * 100_000, why=_("{n} items", n=3)))
    assert len(back) < 400 and back.startswith("Job " + "x" * 300 + "… was left failed")
    assert back.params["why"].params["n"] == 3


def test_a_stored_form_that_does_not_fit_and_an_older_plain_string():
    assert (
        from_data({"msgid": "Job {id} was left failed: {why}", "params": {"id": "1"}})
        == "Job {id} was left failed: {why}"
    )
    assert from_data("Job 1 was left failed: bad data") == "Job 1 was left failed: bad data"
    assert from_data(["not", "a", "message"]) == "['not', 'a', 'message']"
