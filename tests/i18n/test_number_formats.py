"""Numbers, rates and durations read the same whoever writes them: the server's filters
(dashboard/templatetags/qw.py) and the browser's formatters (static/queuewatch.js, used by
charts.js) give the same text for the same value, in English and in Arabic. The browser's
words come from the JSON the server renders once ({% format_rules %}), so the test feeds the
JS exactly that and runs it in Node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.utils import translation

from dashboard.templatetags import qw
from dashboard.web import formatting

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "static"

SECONDS = [
    0,
    0.0004,
    0.004,
    0.4,
    0.9996,
    1,
    4.25,
    9.96,
    59,
    59.9,
    60,
    61,
    599,
    600,
    3599,
    3600,
    3661,
    86399,
    86400,
    172800,
    86400 * 3,
    86400 * 3 + 3600 * 5,
    86400 * 1234,
    -5,
]
NUMBERS = [
    0,
    0.25,
    0.4,
    1,
    999,
    1000,
    9999,
    10_000,
    12_345,
    99_999,
    999_949,
    999_960,
    1_234_567,
    9_876_543_210,
    2_000_000_000_000,
    -5,
    -12_345,
    -0.04,
]
RATES_PER_MIN = [0, 0.004, 0.25, 0.4, 1, 1.25, 9.96, 12.5, 39, 999.4, 999.6, 1000, 1234, 12_345, 999_999, 4_200_000]

PYTHON = {
    "duration": formatting.duration_text,
    "durationMs": lambda ms: qw.duration(ms),
    "number": formatting.number_text,
    "count": lambda v: formatting.number_text(v, compact_from=formatting.COMPACT_COUNTS_FROM),
    "rate": formatting.rate_text,
    "perMinute": qw.per_min,
}
VALUES = {
    "duration": SECONDS,
    "durationMs": [s * 1000 for s in SECONDS],
    "number": NUMBERS,
    "count": NUMBERS,
    "rate": RATES_PER_MIN,
    "perMinute": RATES_PER_MIN,
}

# queuewatch.js is a browser script: run it in a bare context whose document holds the rules.
NODE_SCRIPT = r"""
const fs = require("fs"), vm = require("vm");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const rules = { textContent: input.rules };
const document = { getElementById: (id) => (id === "qw-format-rules" ? rules : null),
                   addEventListener() {}, querySelectorAll: () => [], documentElement: { lang: input.lang } };
const context = { window: {}, document, setInterval() {}, setTimeout() {}, console };
vm.createContext(context);
vm.runInContext(fs.readFileSync(input.script, "utf8"), context);
const text = context.window.qwText;
const out = {};
for (const [name, values] of Object.entries(input.values)) out[name] = values.map((v) => text[name](v));
process.stdout.write(JSON.stringify(out));
"""

pytestmark = [pytest.mark.node, pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]


def rules_json() -> str:
    """The JSON ``{% format_rules %}`` puts in the page, in the active language."""
    tag = str(qw.format_rules())
    return re.fullmatch(r'<script id="qw-format-rules" type="application/json">(.*)</script>', tag, re.S).group(1)


def js_outputs(language: str) -> dict:
    with translation.override(language):
        rules = rules_json()
    payload = {"rules": rules, "lang": language, "script": str(STATIC / "queuewatch.js"), "values": VALUES}
    proc = subprocess.run(
        ["node", "-e", NODE_SCRIPT], input=json.dumps(payload), capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(proc.stdout)


def python_outputs(language: str) -> dict:
    with translation.override(language):
        return {name: [str(PYTHON[name](v)) for v in values] for name, values in VALUES.items()}


@pytest.mark.parametrize("language", ["en", "ar"])
def test_python_and_js_write_the_same_text(language):
    python, js = python_outputs(language), js_outputs(language)
    for name, values in VALUES.items():
        differing = [(v, p, j) for v, p, j in zip(values, python[name], js[name]) if p != j]
        assert not differing, f"{language} {name}: (value, python, js) {differing}"


def test_english_reads_as_the_rules_say():
    en = python_outputs("en")
    durations = dict(zip(SECONDS, en["duration"]))
    assert [durations[s] for s in (0, 0.4, 1, 59, 60, 61, 3599, 3600, 86400 * 3)] == [
        "0 s",
        "400 ms",
        "1 s",
        "59 s",
        "1 min",
        "1 min 1 s",
        "59 min",
        "1 h",
        "3 d",
    ]
    assert durations[86400 * 3 + 3600 * 5] == "3 d 5 h" and durations[3661] == "1 h 1 min"
    counts = dict(zip(NUMBERS, en["count"]))
    assert (counts[9999], counts[12_345], counts[999_960], counts[1_234_567]) == ("9,999", "12.3K", "1M", "1.2M")
    per_min = dict(zip(RATES_PER_MIN, en["perMinute"]))
    assert (per_min[0.25], per_min[39], per_min[1234]) == ("0.25/min", "39/min", "1.2K/min")


def test_arabic_has_arabic_units_and_no_latin_letters():
    ar = python_outputs("ar")
    latin = [(name, text) for name, texts in ar.items() for text in texts if re.search(r"[A-Za-z]", text)]
    assert not latin, latin
    durations = dict(zip(SECONDS, ar["duration"]))
    # docs/arabic-glossary.md: min / s / h / d → د / ث / س / يوم; ms → م‌ث. Digits stay Latin, as on
    # every page (static/queuewatch.js formats with Latin digits in both languages).
    assert (durations[61], durations[3600], durations[86400 * 3], durations[0.4]) == (
        "1 د 1 ث",
        "1 س",
        "3 يوم",
        "400 م\u200cث",
    )
    assert dict(zip(RATES_PER_MIN, ar["perMinute"]))[1234] == "1.2 ألف/د"


def test_charts_write_no_units_of_their_own():
    """charts.js formats through window.qwText only: no unit word of its own to leave English."""
    source = (STATIC / "charts.js").read_text()
    assert "window.qwText" in source
    for literal in ('" s"', '" ms"', '" min"', '"/min"', '" h"', '" d"', '"k"', '"M"', '"{MMM}'):
        assert literal not in source, literal


@pytest.mark.parametrize(("lang", "words"), [("en", "at least "), ("ar", "ما لا يقل عن ")])
def test_an_age_that_is_a_bound_reads_at_least_in_either_language(lang, words):
    with translation.override(lang):
        exact, bound = qw.age_since(1_000_000, False), qw.age_since(1_000_000, True)
    assert exact.startswith("<time") and bound == words + exact
