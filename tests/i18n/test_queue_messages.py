"""What single-job actions and scheduler edits say reaches an Arabic page in Arabic.

``queues/`` marks its text with ``queues.messages._`` (translated at the edge by
``dashboard.core.i18n.translate``). Two checks: every message id written in those modules has an
Arabic entry in the compiled catalogue, and the results the actions really return (each outcome
code) read as Arabic sentences once translated."""
# Literal `bull:` keys kept: a job key as a message's parameter (no Redis).

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation

from dashboard.core.i18n import translate
from queues import actions, cron, scheduler_edit
from queues.messages import Joined, Message
from queues.redis import actions as redis_actions
from queues.redis import scheduler_edit as redis_scheduler_edit
from queues.redis.bullmq_scripts import NOT_A_JOB as NOT_A_JOB_CODE

ROOT = Path(__file__).resolve().parents[2]
MODULES = [ROOT / "queues" / "actions.py", ROOT / "queues" / "scheduler_edit.py"]
# Cron errors reach the scheduler pages through ``SchedulerError`` (its other ValueErrors are a
# programmer's: aware datetimes, a Periodic job's own definition).
CATALOGUED = [*MODULES, ROOT / "queues" / "cron.py"]
# A result's message (ActionResult(job_id, outcome, message), SchedulerResult(outcome, message))
# and an error's text: where the user reads what happened.
MESSAGE_ARGUMENT = {"ActionResult": 2, "SchedulerResult": 1, "SchedulerError": 0, "CronError": 0, "ValueError": 0}
MARKERS = {"_", "gettext_noop"}
# Three Latin words in a row is an English phrase; option and key names (endDate, meta) and lists
# of codes ("completed, failed") are not.
ENGLISH_PHRASE = re.compile(r"[A-Za-z]+ [A-Za-z]+ [A-Za-z]+")


def _name(func) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _calls(path: Path):
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_messages_are_marked(path):
    """No literal text (a string or an f-string) where a result or an error carries its message."""
    unmarked = []
    for call in _calls(path):
        position = MESSAGE_ARGUMENT.get(_name(call.func))
        if position is None or len(call.args) <= position:
            continue
        arg = call.args[position]
        if isinstance(arg, (ast.Constant, ast.JoinedStr, ast.BinOp)):
            unmarked.append(f"{path.name}:{call.lineno}")
    assert not unmarked, unmarked


@pytest.mark.parametrize("path", CATALOGUED, ids=lambda p: p.name)
def test_every_message_id_has_an_arabic_entry(path):
    msgids = [
        call.args[0].value
        for call in _calls(path)
        if _name(call.func) in MARKERS and call.args and isinstance(call.args[0], ast.Constant)
    ]
    assert msgids
    with translation.override("ar"):
        untranslated = [m for m in msgids if translation.gettext(m) in ("", m)]
    assert not untranslated, untranslated


def _action_results() -> list:
    note = Joined(
        [
            actions._("Its {n} child job(s) were removed with it (unless a worker held one).", n=2),
            actions._(
                "It was also taken off its parent {parent}'s dependencies; the parent moves to waiting "
                "if this was its last pending child.",
                parent="bull:q:1",
            ),
        ],
        " ",
    )
    results = [
        redis_actions.retry_outcome("42", code, state=state)
        for code in (1, -1, -3)
        for state in ("failed", "completed")
    ]
    results += [redis_actions.remove_outcome("42", code) for code in (NOT_A_JOB_CODE, 1, 0, -8, -3)]
    results += [redis_actions.remove_outcome("42", 1, children_note=note), actions.not_a_job("meta")]
    results += [redis_actions.promote_outcome("42", code) for code in (0, -3)]
    results += [redis_scheduler_edit.refusal(code, "nightly") for code in (*redis_scheduler_edit._REFUSED, -999)]
    return results


def _refusals() -> list[str]:
    """Errors a scheduler edit raises for bad input, as the edge reads them (``str(exc)``)."""
    bad = [
        dict(scheduler_id="", name="n"),
        dict(scheduler_id="s", name="n", pattern="* * * * *", every=5),
        dict(scheduler_id="s", name="n"),
        dict(scheduler_id="s", name="n", every=0),
        dict(scheduler_id="s", name="n", pattern="* *"),
        dict(scheduler_id="s", name="n", pattern="0 0 31 2 *"),
        dict(scheduler_id="s", name="n", every=5, start_date=-1),
        dict(scheduler_id="s", name="n", every=5, start_date=10, end_date=5),
        dict(scheduler_id="s", name="n", every=5, limit=0),
        dict(scheduler_id="s", name="n", every=5, opts="x"),
        dict(scheduler_id="s", name="n", every=5, opts={"jobId": "x"}),
        dict(scheduler_id="s", name="n", every=5, tz="Mars/Olympus"),
    ]
    texts = []
    for kwargs in bad:
        with pytest.raises(scheduler_edit.SchedulerError) as caught:
            scheduler_edit.check_spec(**kwargs)
        texts.append(str(caught.value))
    for expr in ("", "* * *", "99 * * * *", "0 0 30 2 *"):
        with pytest.raises(cron.CronError) as caught:
            cron.cron_validate(expr)
        texts.append(str(caught.value))
    with pytest.raises(ValueError) as caught:
        redis_actions.queue_clean(None, queue=None, state="active", older_than_ms=0)
    return [*texts, str(caught.value)]


def test_action_results_read_in_arabic():
    messages = [r.message for r in _action_results()] + _refusals()
    assert all(isinstance(m, (Message, Joined)) for m in messages), [
        m for m in messages if not isinstance(m, (Message, Joined))
    ]
    with translation.override("ar"):
        shown = [translate(m) for m in messages]
    english = [
        (str(m), s) for m, s in zip(messages, shown) if not re.search(r"[\u0600-\u06ff]", s) or ENGLISH_PHRASE.search(s)
    ]
    assert not english, english
    with translation.override("en"):
        assert [translate(m) for m in messages] == [str(m) for m in messages]
