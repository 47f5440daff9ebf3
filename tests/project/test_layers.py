"""The layers of ``dashboard/`` (docs/architecture.md, "Layers"), checked on every run:

* a module imports nothing from a higher layer (imports inside functions and under
  ``TYPE_CHECKING`` count too: they hide a dependency rather than remove it);
* no two packages of ``dashboard/`` import each other, even within one layer;
* only ``dashboard.core.dash_redis`` imports ``redis``: everything else reaches the dashboard
  Redis through it (and catches its ``DashboardRedisError``), and the monitored Redis through
  ``queues.sources``.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.import_graph import ROOT, find_cycles, imported_names, python_modules, resolve

# Lowest first. A module belongs to the longest prefix listed; modules of the same rank may
# import each other's packages (but not both ways).
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("dashboard.core",)),
    (1, ("dashboard.web", "dashboard.connections", "dashboard.audit", "dashboard.demo")),
    (2, ("dashboard.accounts",)),
    (3, ("dashboard.live",)),
    # Below browse and health: /metrics (health) reports the open alerts, and alerts need
    # nothing of browse, health or actions.
    (4, ("dashboard.alerts",)),
    (5, ("dashboard.browse", "dashboard.health")),
    (6, ("dashboard.actions",)),
    (7, ("dashboard.monitor",)),
    # The project's edges: settings, the root URLconf, routing, asgi, apps, admin, models,
    # template tags and manage.py commands.
    (8, ("dashboard", "dashboard.templatetags", "dashboard.management")),
]

REDIS_MODULE = "dashboard.core.dash_redis"
# The demo workload is a producer of the *monitored* Redis (BullMQ jobs, a stalling worker): it
# talks to that Redis as any BullMQ client does, not to Queuewatch's own.
REDIS_EXEMPT = ("dashboard.demo",)


def dashboard_modules() -> dict[str, Path]:
    return python_modules("dashboard")


def layer_of(dotted: str) -> tuple[int, str]:
    """(rank, prefix) of the longest listed prefix ``dotted`` falls under."""
    best: tuple[int, str] | None = None
    for rank, prefixes in LAYERS:
        for prefix in prefixes:
            if (dotted == prefix or dotted.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (rank, prefix)
    assert best is not None, f"{dotted} is in no layer: add it to LAYERS and to docs/architecture.md"
    return best


def package_of(dotted: str) -> str:
    """The package of ``dashboard/`` a module is part of (``dashboard`` for the root modules)."""
    parts = dotted.split(".")
    modules = dashboard_modules()
    if len(parts) > 2 or (len(parts) == 2 and modules[dotted].name == "__init__.py"):
        return ".".join(parts[:2])
    return "dashboard"


def dependencies() -> dict[str, set[str]]:
    modules = dashboard_modules()
    known = set(modules)
    graph = {}
    for dotted, path in modules.items():
        deps = {resolve(n, known) for n in imported_names(path, dotted) if n.startswith("dashboard")}
        # A module's own packages (``from dashboard.x import y`` also names ``dashboard.x``)
        # are no dependency of it.
        graph[dotted] = {d for d in deps if d and d != dotted and not dotted.startswith(d + ".")}
    return graph


def test_every_module_has_a_layer():
    for dotted in dashboard_modules():
        layer_of(dotted)


def test_no_module_imports_a_higher_layer():
    offenders = []
    for dotted, deps in sorted(dependencies().items()):
        rank, prefix = layer_of(dotted)
        for dep in sorted(deps):
            dep_rank, dep_prefix = layer_of(dep)
            if dep_rank > rank:
                offenders.append(f"{dotted} ({prefix}, layer {rank}) imports {dep} ({dep_prefix}, layer {dep_rank})")
    assert not offenders, "imports of a higher layer:\n" + "\n".join(offenders)


def test_no_two_packages_import_each_other():
    edges: dict[str, set[str]] = {}
    for dotted, deps in dependencies().items():
        for dep in deps:
            a, b = package_of(dotted), package_of(dep)
            if a != b:
                edges.setdefault(a, set()).add(b)
    cycles = find_cycles(edges)
    assert not cycles, "package cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_only_the_core_module_imports_redis():
    offenders = []
    for dotted, path in sorted(dashboard_modules().items()):
        if dotted == REDIS_MODULE or any(dotted == p or dotted.startswith(p + ".") for p in REDIS_EXEMPT):
            continue
        if any(n == "redis" or n.startswith("redis.") for n in imported_names(path, dotted)):
            offenders.append(dotted)
    assert not offenders, f"import redis outside {REDIS_MODULE}: {offenders}"


def test_the_checks_see_a_violation(tmp_path):
    """The helpers find an upward import, a function-level one included (so the tests above can fail)."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from dashboard.monitor.loop import Monitor\n    import redis\n", encoding="utf-8")
    names = imported_names(module, "dashboard.core.m")
    assert resolve("dashboard.monitor.loop.Monitor", set(dashboard_modules())) == "dashboard.monitor.loop"
    assert {"dashboard.monitor.loop", "redis"} <= names
    assert layer_of("dashboard.monitor.loop")[0] > layer_of("dashboard.core.m")[0]


def test_the_layers_are_documented():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for _rank, prefixes in LAYERS:
        for prefix in prefixes:
            if prefix != "dashboard":
                assert f"{prefix.replace('.', '/')}/" in doc, f"{prefix} is not in docs/architecture.md"
