"""The Arabic catalogues use the glossary's reviewed terms: for each row of “Reviewed terms” in
docs/arabic-glossary.md, every entry whose English matches the row's pattern holds the required
stem and none of the rejected renderings (compared without diacritics, which translators may or
may not write)."""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "arabic-glossary.md"
CATALOGUES = [ROOT / "locale" / "ar" / "LC_MESSAGES" / f"{domain}.po" for domain in ("django", "djangojs")]
TASHKEEL = re.compile("[\u064b-\u065f\u0670\u0640]")


def plain(text: str) -> str:
    """Arabic text without its diacritics and tatweel."""
    return TASHKEEL.sub("", text)


def reviewed_terms() -> list[dict]:
    """The rows of the glossary's “Reviewed terms” table."""
    section = GLOSSARY.read_text(encoding="utf-8").split("## Reviewed terms", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        english, arabic, required, rejected = (cells[0], cells[1], cells[2], cells[3])
        rows.append(
            {
                "english": english.strip("`"),
                "arabic": arabic,
                "required": required.strip("`"),
                "rejected": [r.strip().strip("`") for r in rejected.split("،") if r.strip()],
            }
        )
    return rows


def translations() -> list[tuple[str, list[str]]]:
    """(msgid, its translations) of every translated entry of the Arabic catalogues."""
    found = []
    for path in CATALOGUES:
        for entry in polib.pofile(str(path)):
            if entry.obsolete:
                continue
            texts = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
            found.append((entry.msgid, [t for t in texts if t]))
    return found


def misuses(term: dict, entries) -> list[str]:
    """The entries that break ``term``'s rule, each with why."""
    pattern = re.compile(term["english"])
    required = re.compile(term["required"])
    rejected = [re.compile(r) for r in term["rejected"]]
    wrong = []
    for msgid, texts in entries:
        if not pattern.search(msgid):
            continue
        for text in texts:
            shown = plain(text)
            if not required.search(shown):
                wrong.append(f"{msgid!r} → {text!r}: lacks {term['required']!r}")
            wrong += [f"{msgid!r} → {text!r}: uses {r.pattern!r}" for r in rejected if r.search(shown)]
    return wrong


def test_the_glossary_lists_the_reviewed_terms():
    terms = reviewed_terms()
    assert len(terms) >= 6
    for term in terms:
        assert term["arabic"] and term["rejected"], term
        assert re.search(term["required"], plain(term["arabic"])), term  # the row's own words pass it


@pytest.mark.parametrize("term", reviewed_terms(), ids=lambda t: t["english"][:30])
def test_the_catalogue_uses_the_glossary_term(term):
    entries = translations()
    assert any(re.search(term["english"], msgid) for msgid, _ in entries), "the pattern matches no entry"
    assert not misuses(term, entries)


def test_the_check_finds_a_rejected_rendering():
    dlq, firing = reviewed_terms()[0], reviewed_terms()[1]
    assert misuses(dlq, [("DLQ", ["طابور ميت"])]) == [
        "'DLQ' → 'طابور ميت': lacks 'معطل'",
        "'DLQ' → 'طابور ميت': uses 'ميت'",
    ]
    assert misuses(firing, [("firing", ["مُطلَق"])]) and not misuses(firing, [("firing", ["نشِط"])])
    # A word in another sense is not the term's: a cron pattern "never fires" (ينطلق).
    assert not misuses(firing, [("“{pattern}” never fires.", ["النمط «{pattern}» لا ينطلق أبدًا."])])
