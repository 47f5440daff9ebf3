"""The protocols in ``queues.sources`` are enforced by mypy, not only documented.

A fake jobs facet is written from ``JobsFacet``'s own text (so it follows the protocol as it
changes), once as it is and once with ``detail`` taking other parameters; mypy must accept the
first and reject the second where it is used as a ``JobsFacet``. The Redis source must type as
a ``Source``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]
FACETS = ROOT / "queues" / "sources" / "facets.py"


def fake_jobs_module(*, break_detail: bool) -> str:
    """A module with ``FakeJobs``: ``JobsFacet``'s methods copied into a plain class (the
    imports made absolute), optionally with ``detail`` lacking its keyword parameters, and an
    instance assigned to a ``JobsFacet`` variable."""
    tree = ast.parse(FACETS.read_text())
    package = ["queues", "sources"]
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If):  # the TYPE_CHECKING imports, needed by the annotations
            body.extend(node.body)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            body.append(node)
        elif isinstance(node, ast.ClassDef) and node.name == "JobsFacet":
            node.name, node.bases = "FakeJobs", []
            body.append(node)
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            node.module, node.level = ".".join(base + ([node.module] if node.module else [])), 0
        if isinstance(node, ast.ClassDef) and break_detail:
            detail = next(m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "detail")
            detail.args.kwonlyargs, detail.args.kw_defaults = [], []
    source = ast.unparse(ast.Module(body=body, type_ignores=[]))
    return source + "\n\nfrom queues.sources.facets import JobsFacet\n\nfacet: JobsFacet = FakeJobs()\n"


SOURCE_CONFORMS = """
from queues.sources.base import Source
from queues.sources.redis_node import RedisNodeSource
from queues.sources.spec import ConnectionSpec


def as_source(spec: ConnectionSpec) -> Source:
    return RedisNodeSource(spec, socket_timeout=1.0)
"""


def test_mypy_rejects_a_facet_with_another_signature_and_accepts_the_right_ones(tmp_path, monkeypatch):
    (tmp_path / "right_facet.py").write_text(fake_jobs_module(break_detail=False))
    (tmp_path / "wrong_facet.py").write_text(fake_jobs_module(break_detail=True))
    (tmp_path / "source_conforms.py").write_text(SOURCE_CONFORMS)
    monkeypatch.chdir(ROOT)  # the project's [tool.mypy] settings, and `queues` importable
    report, errors, status = api.run(
        [
            "--disable-error-code",
            "empty-body",  # the fake's methods keep the protocol's `...` bodies
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(tmp_path / "right_facet.py"),
            str(tmp_path / "wrong_facet.py"),
            str(tmp_path / "source_conforms.py"),
        ]
    )
    lines = [line for line in report.splitlines() if ": error:" in line or ": note:" in line]
    wrong = [line for line in lines if "wrong_facet.py" in line]
    assert status == 1, report + errors
    assert any(
        'Incompatible types in assignment (expression has type "FakeJobs", variable has type "JobsFacet")' in line
        for line in wrong
    ), report
    assert any("detail" in line for line in wrong), report
    assert [line for line in lines if "wrong_facet.py" not in line] == [], report
