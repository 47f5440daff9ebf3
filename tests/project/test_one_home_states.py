"""The small queue-state rules have one home each (docs/architecture.md, "Where each rule lives"):

* which states an operation accepts, and which key holds a state: ``queues/states.py`` only;
  every other module imports the tuples from there instead of writing its own list;
* the 1/5/15-minute rate windows: ``queues/rates.py`` (``RATE_WINDOWS``) only.

Checked on the source (AST), so a new copy anywhere in ``queues/`` or ``dashboard/`` fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from queues import states

ROOT = Path(__file__).resolve().parents[2]
STATE_NAMES = {s.name for s in states.STATES}
KEY_SUFFIXES = {s.key for s in states.STATES}
STATES_HOME = Path("queues", "states.py")
WINDOWS_HOME = Path("queues", "rates.py")


def sources(root: Path):
    for package in ("queues", "dashboard"):
        for path in (root / package).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(encoding="utf-8"))


def assigned_names(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)] + [
        t.attr for t in targets if isinstance(t, ast.Attribute)
    ]


def literal_strings(value: ast.AST | None) -> list[str] | None:
    """The strings of a tuple/list/set literal of string constants (None for anything else)."""
    if not isinstance(value, (ast.Tuple, ast.List, ast.Set)) or not value.elts:
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return None
    return [e.value for e in value.elts]


def state_lists_outside_home(root: Path = ROOT) -> list[str]:
    found = []
    for path, tree in sources(root):
        if path == root / STATES_HOME:
            continue
        for node in ast.walk(tree):
            names = assigned_names(node)
            if not any(n.endswith("_STATES") for n in names):
                continue
            value = node.value
            lists = (
                [literal_strings(v) for v in value.values] if isinstance(value, ast.Dict) else [literal_strings(value)]
            )
            if lists and all(
                strings and set(strings) <= STATE_NAMES for strings in lists
            ):  # also {"retry": (...), ...}
                found.append(f"{path.relative_to(root)}:{node.lineno} {names[0]}")
    return found


def state_key_maps_outside_home(root: Path = ROOT) -> list[str]:
    """A dict literal mapping job-state names to their keys (``{"waiting": "wait", ...}``)."""
    found = []
    for path, tree in sources(root):
        if path == root / STATES_HOME:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Dict)
                and len(node.keys) >= 2
                and all(
                    isinstance(k, ast.Constant)
                    and k.value in STATE_NAMES
                    and isinstance(v, ast.Constant)
                    and v.value in KEY_SUFFIXES
                    for k, v in zip(node.keys, node.values)
                )
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def is_rate_windows(value: ast.AST | None) -> bool:
    """``(1, 5, 15)`` written out: as numbers, as strings, or as a dict keyed or valued by them."""
    if isinstance(value, ast.Dict):
        return is_rate_windows(ast.Tuple(elts=value.keys)) or is_rate_windows(ast.Tuple(elts=value.values))
    if isinstance(value, ast.Constant) and isinstance(value.value, str):  # "1,5,15"
        parts = value.value.replace(" ", "").split(",")
        return len(parts) > 1 and parts == [str(w) for w in (1, 5, 15)]
    if not isinstance(value, (ast.Tuple, ast.List, ast.Set)) or not value.elts:
        return False
    if not all(isinstance(e, ast.Constant) for e in value.elts):
        return False
    return [str(e.value).removesuffix("m") for e in value.elts] == ["1", "5", "15"]


def rate_window_definitions(root: Path = ROOT) -> list[str]:
    found = []
    for path, tree in sources(root):
        for node in ast.walk(tree):
            values = [node.value] if isinstance(node, (ast.Assign, ast.AnnAssign)) else []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                values = [*node.args.defaults, *node.args.kw_defaults]
            if any(is_rate_windows(v) for v in values):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_state_lists_are_written_only_in_queues_states():
    assert state_lists_outside_home() == [], "import these from queues.states instead"


def test_which_key_holds_a_state_is_written_only_in_queues_states():
    assert state_key_maps_outside_home() == [], "use queues.states.STATE_KEYS (or QueueRef.state_key)"


def test_the_rate_windows_are_written_once_in_queues_rates():
    home = next(
        n
        for n, line in enumerate((ROOT / WINDOWS_HOME).read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("RATE_WINDOWS = ")
    )
    assert rate_window_definitions() == [f"{WINDOWS_HOME}:{home}"]


def test_the_checks_see_a_copy(tmp_path):
    # The checks must be able to fail: each finds the kinds of copy this one home replaced.
    (tmp_path / "queues").mkdir()
    (tmp_path / "dashboard").mkdir()
    (tmp_path / STATES_HOME).write_text(
        'BROWSABLE_STATES = ("waiting", "failed")\nKEYS = {"waiting": "wait", "failed": "failed"}\n'
    )
    (tmp_path / "queues" / "copy.py").write_text(
        'CLEANABLE_STATES = ("completed", "failed")\n'
        'ACTION_STATES = {"retry": ("failed", "completed"), "promote": ("delayed",)}\n'
        'STATE_SET = {"failed": "failed", "waiting": "wait"}\n'
    )
    (tmp_path / "dashboard" / "copy.py").write_text(
        'WINDOWS = ("1", "5", "15")\nTIMING = {"1m": 1, "5m": 5, "15m": 15}\n'
        'def rate_windows(per_min, windows="1,5,15"):\n    pass\n'
    )
    assert state_lists_outside_home(tmp_path) == ["queues/copy.py:1 CLEANABLE_STATES", "queues/copy.py:2 ACTION_STATES"]
    assert state_key_maps_outside_home(tmp_path) == ["queues/copy.py:3"]
    assert sorted(rate_window_definitions(tmp_path)) == [
        "dashboard/copy.py:1",
        "dashboard/copy.py:2",
        "dashboard/copy.py:3",
    ]


def test_the_table_answers_what_each_operation_accepts():
    assert states.CLEANABLE_STATES == ("waiting", "prioritized", "delayed", "completed", "failed")
    assert states.RETRYABLE_STATES == states.FINISHED_STATES == ("completed", "failed")
    assert states.PROMOTABLE_STATES == ("delayed",)
    assert states.STATE_KEYS["waiting"] == "wait" and states.LIST_STATES == ("waiting", "active", "paused")
    assert sorted(states.COUNT_STATES) == sorted(states.BROWSABLE_STATES)  # every state a job is counted in
    assert "paused" not in states.BROWSABLE_STATES and not states.state_allows("paused", states.CLEAN)
    assert not states.state_allows("no-such-state", states.BROWSE)
