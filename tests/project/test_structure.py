"""The structure rules of docs/architecture.md, checked on every run:

* `queues/` is framework-free: no module there imports Django or `dashboard`;
* no module outside migrations is over 400 lines unless docs/architecture.md lists it with its reason;
* there are no import cycles between our modules (imports inside functions count too: they hide
  cycles rather than remove them, so each one must be listed with its reason).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.import_graph import ROOT, find_cycles, imported_names, python_modules, resolve

PACKAGES = ("queues", "dashboard")
MAX_LINES = 400


def modules() -> dict[str, Path]:
    return python_modules(*PACKAGES)


def architecture_doc() -> str:
    return (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_queues_is_framework_free():
    for dotted, path in modules().items():
        if dotted.startswith("queues"):
            source = path.read_text(encoding="utf-8")
            assert not re.search(r"^\s*(from|import)\s+(django|channels|dashboard)\b", source, re.M), dotted


def listed_long_modules() -> set[str]:
    """The paths listed in docs/architecture.md's "Modules over 400 lines:" paragraph (one
    backticked path per entry, with its reason; "none" lists nothing)."""
    match = re.search(r"^Modules over 400 lines:(.*?)(?:\n\s*\n|\Z)", architecture_doc(), re.M | re.S)
    assert match, 'docs/architecture.md has no "Modules over 400 lines:" paragraph'
    return set(re.findall(r"`([\w/.]+\.py)`", match.group(1)))


def test_no_module_over_the_limit_unless_documented():
    listed = listed_long_modules()
    for path in modules().values():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            rel = str(path.relative_to(ROOT))
            assert rel in listed, (
                f"{rel} has {lines} lines: split it or list it with its reason in docs/architecture.md"
            )


def test_no_import_cycles():
    mods = modules()
    known = set(mods)
    graph = {m: {r for n in imported_names(p, m) if (r := resolve(n, known)) and r != m} for m, p in mods.items()}
    # A package's __init__ importing its own submodules is how packages expose a registry; a
    # submodule importing its package then only reaches what __init__ already finished.
    graph = {
        m: {d for d in deps if not (m.startswith(d + ".") and mods[d].name == "__init__.py")}
        for m, deps in graph.items()
    }
    cycles = find_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_tests_share_helpers_through_support_only():
    """Shared test helpers live in tests/support/: a test module importing another test module
    couples two features' tests (and runs the other's module-level set-up)."""
    offenders = []
    for path in (ROOT / "tests").rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"\s*(from|import)\s+tests\.(\w+\.)*(test_\w+|conftest)\b", line):
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
