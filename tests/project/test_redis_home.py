"""Every Redis reader and command of ``queues/`` lives under ``queues/redis/``, checked on every run:

* outside ``queues/redis/`` and the Redis kinds ``queues/sources/redis_node.py``,
  ``redis_cluster.py`` and ``redis_sentinel.py`` (which build their facets from it), no module
  of ``queues/`` imports ``redis`` (imports inside functions and under ``TYPE_CHECKING`` count
  too);
* the rest of ``queues/`` (the types and rules every source kind shares) imports nothing from
  ``queues/redis/``: a second kind reuses them without pulling Redis in.
"""

from __future__ import annotations

from tests.support.import_graph import imported_names, python_modules

REDIS_HOMES = (
    "queues.redis",
    "queues.sources.redis_node",
    "queues.sources.redis_cluster",
    "queues.sources.redis_sentinel",
)
# Modules that may still name the Redis package, and why. Keep this tiny.
ALLOWED: dict[str, str] = {}


def is_under(dotted: str, prefixes: tuple[str, ...]) -> bool:
    return any(dotted == p or dotted.startswith(p + ".") for p in prefixes)


def neutral_modules():
    return {d: p for d, p in python_modules("queues").items() if not is_under(d, REDIS_HOMES) and d not in ALLOWED}


def test_only_queues_redis_imports_redis():
    offenders = [
        dotted
        for dotted, path in sorted(neutral_modules().items())
        if any(is_under(name, ("redis",)) for name in imported_names(path, dotted))
    ]
    assert not offenders, f"import redis outside queues/redis/ and the Redis kinds: {offenders}"


def test_shared_modules_import_nothing_of_queues_redis():
    offenders = [
        dotted
        for dotted, path in sorted(neutral_modules().items())
        if any(is_under(name, ("queues.redis",)) for name in imported_names(path, dotted))
    ]
    assert not offenders, f"shared modules of queues/ importing queues.redis: {offenders}"


def test_the_check_sees_a_function_level_import(tmp_path):
    """A function-level ``import redis`` and a relative ``from ..redis import`` both count."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import redis\n    from ..redis.snapshot import read_snapshots\n", encoding="utf-8")
    names = imported_names(module, "queues.health.m")
    assert "redis" in names
    assert "queues.redis.snapshot" in names
