"""The translation catalogs are complete: every string marked in the code has an Arabic entry
that is neither missing nor fuzzy, the compiled .mo files match the .po files, and templates
mark every word they show (a string left unmarked fails here, not in front of a user).

Needs GNU gettext (xgettext, msgmerge, msgfmt), as ``makemessages`` does: ``./dev test`` and
``.ci/run`` (which runs ``./dev test``) install it."""

from __future__ import annotations

import gettext as stdlib_gettext
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale" / "ar" / "LC_MESSAGES"
DOMAINS = ("django", "djangojs")
# Words that are the same in every language: names of products, formats and protocols.
UNTRANSLATED_WORDS = {"Queuewatch", "JSONL", "CSV", "JSON", "UTC", "BullMQ", "Redis"}

pytestmark = pytest.mark.skipif(shutil.which("xgettext") is None, reason="GNU gettext is not installed")


def _catalog_problems(po: polib.POFile) -> list[str]:
    return [f"missing: {e.msgid!r}" for e in po.untranslated_entries()] + [
        f"fuzzy: {e.msgid!r}" for e in po.fuzzy_entries()
    ]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> Path:
    """``makemessages -l ar`` run on a copy of the project: the catalogs as they would be if
    someone ran it now (new strings untranslated, changed ones fuzzy)."""
    copy = tmp_path_factory.mktemp("project")
    for name in ("dashboard", "queues", "templates", "locale"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "static", copy / "static", ignore=shutil.ignore_patterns("vendor"))
    shutil.copy(ROOT / "manage.py", copy / "manage.py")
    env = {
        "QUEUEWATCH_INSECURE_DEV": "1",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    for domain in DOMAINS:
        subprocess.run(
            [sys.executable, "manage.py", "makemessages", "-l", "ar", "-d", domain, "--no-location"],
            cwd=copy,
            env=env,
            check=True,
            capture_output=True,
        )
    return copy / "locale" / "ar" / "LC_MESSAGES"


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_marked_string_has_an_arabic_entry(extracted, domain):
    problems = _catalog_problems(polib.pofile(str(extracted / f"{domain}.po")))
    assert not problems, (
        f"{domain}.po is not complete for the code as it is: run "
        f"`./dev manage makemessages -l ar` and translate (docs/arabic-glossary.md):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_committed_catalog_has_no_missing_or_fuzzy_entry(domain):
    po = polib.pofile(str(LOCALE / f"{domain}.po"))
    assert not _catalog_problems(po)
    assert po.metadata["Language"] == "ar" and "nplurals=6" in po.metadata["Plural-Forms"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_compiled_catalog_matches_the_po_file(domain, tmp_path):
    """The .mo files are committed (a fresh clone needs no gettext to run); they must be the
    compilation of the .po files, or a translation fixed in the .po would not show."""
    fresh = tmp_path / f"{domain}.mo"
    subprocess.run(["msgfmt", "--check", "-o", str(fresh), str(LOCALE / f"{domain}.po")], check=True)
    with open(fresh, "rb") as a, open(LOCALE / f"{domain}.mo", "rb") as b:
        expected, committed = stdlib_gettext.GNUTranslations(a), stdlib_gettext.GNUTranslations(b)
    assert committed._catalog == expected._catalog, f"run `./dev manage compilemessages` and commit {domain}.mo"


# --- templates mark every word they show ------------------------------------------------------

_TRANSLATED_BLOCK = re.compile(r"{%\s*blocktrans(?:late)?\b.*?{%\s*endblocktrans(?:late)?\s*%}", re.S)
_TAG = re.compile(r"{%.*?%}|{{.*?}}|{#.*?#}", re.S)
_WORD = re.compile(r"[A-Za-z]{2,}")
_SHOWN_ATTRIBUTES = ("placeholder", "title", "aria-label", "alt", "label")


class _ShownText(HTMLParser):
    """Text nodes and shown attribute values of a template with its tags removed."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._skip = 0

    # <code> holds code and option names (`removeOnComplete`), which stay as they are in every language.
    _NOT_WORDS = ("script", "style", "code")

    def handle_starttag(self, tag, attrs):
        if tag in self._NOT_WORDS:
            self._skip += 1
        self.found += [value for name, value in attrs if name in _SHOWN_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        if tag in self._NOT_WORDS:
            self._skip = max(0, self._skip - 1)

    def handle_data(self, data):
        if not self._skip:
            self.found.append(data)


def unmarked_words(source: str) -> list[str]:
    """Words a template shows that are not inside a translation tag."""
    source = _TAG.sub(" ", _TRANSLATED_BLOCK.sub(" ", source))
    parser = _ShownText()
    parser.feed(source)
    return [
        text.strip() for text in parser.found if any(word not in UNTRANSLATED_WORDS for word in _WORD.findall(text))
    ]


def test_unmarked_words_are_found():
    assert unmarked_words('<p title="Hello">{% translate "Fine" %} Not marked</p>') == ["Hello", "Not marked"]
    assert unmarked_words("<p>{% blocktranslate %}Fine {{ x }}{% endblocktranslate %} {{ data }} CSV</p>") == []
    assert unmarked_words('<label><code>removeOnComplete</code> <input placeholder="ms"></label>') == ["ms"]


@pytest.mark.parametrize(
    "template",
    sorted(
        p.relative_to(ROOT / "templates").as_posix()
        for p in (ROOT / "templates").rglob("*")
        if p.suffix in (".html", ".txt")
    ),
)
def test_templates_mark_every_word_they_show(template):
    words = unmarked_words((ROOT / "templates" / template).read_text(encoding="utf-8"))
    assert not words, f"{template} shows words not marked for translation: {words}"
