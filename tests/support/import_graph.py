"""Our modules and what each imports, read with ``ast`` (imports inside functions and under
``TYPE_CHECKING`` count: they hide a dependency rather than remove it), and the cycles of such
a graph: what the structure and layers tests judge."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_modules(*packages: str) -> dict[str, Path]:
    """Dotted name -> file of every module under ``packages`` (migrations left out)."""
    found = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[dotted.removesuffix(".__init__")] = path
    return found


def imported_names(path: Path, dotted: str) -> set[str]:
    """Every module name ``path`` imports (``from a import b`` gives ``a.b`` and ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def resolve(name: str, known: set[str]) -> str | None:
    """The longest known module ``name`` starts with (a name may be a class or function in it)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle met by a depth-first walk, as the path that closes it."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles
