"""`streams/` by role (docs/architecture.md): each part imports only the parts below it, and no
module of the contract, the collectors, the streams or the actions imports itself back through
others, `TYPE_CHECKING` and function-level imports included (a circle hides one module's meaning
inside another's)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = ("schemas", "collectors", "streams", "actions", "centrality")

# Each part of streams, and the parts it may import. The root's own modules (`__main__`, the
# public `testing`) sit above them all.
BELOW: dict[str, set[str]] = {
    "state": set(),  # the folds, and how an event finds its entity: pure
    "rules": {"state"},  # the rule registry and the built-in rules: pure
    "brain": {"state", "rules"},  # folds and rules over a batch, views: pure
    "settings": {"state", "rules"},
    "history": set(),  # the sink, and reading ClickHouse back
    "faust": {"state", "rules", "brain", "settings"},  # the live worker
    "analysis": {"state", "rules", "brain", "settings", "history"},  # replay, what-if, reports
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[str]:
    """Every module of ours `path` names in an import, wherever the import statement is."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for pkg in OURS for p in (ROOT / pkg).rglob("*.py")}
    return {
        name: {m for m in imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def part(module: str) -> str:
    parts = module.split(".")
    return "root" if len(parts) == 1 or parts[1] in ("__main__", "testing") else parts[1]


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            v, rest = work[-1]
            w = next(rest, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while (w := stack.pop()) != v:
                    component.append(w)
                component.append(v)
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_each_part_of_streams_imports_only_the_parts_below_it() -> None:
    wrong = []
    for module, imported in sorted(graph().items()):
        if not module.startswith("streams.") or part(module) == "root":
            continue
        mine = part(module)
        assert mine in BELOW, f"{module}: a part of streams the layers do not name"
        for other in sorted(imported):
            theirs = part(other) if other.startswith("streams.") else None
            if theirs is not None and theirs != mine and theirs not in BELOW[mine]:
                wrong.append(f"{module} imports {other}")
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_back() -> None:
    # The front door (`centrality`) registers its console's routes from modules that import the
    # app they register with: not held to this yet.
    assert [c for c in circles(graph()) if not c[0].startswith("centrality.")] == []


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_a_circle_is_found(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert sorted(circles(edges)) == expected
