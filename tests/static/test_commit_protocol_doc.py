"""docs/commit-protocol.md names code: every file, module, function, class, method, setting and
word it quotes exists, in our packages or in the Faust, mode and aiokafka it works around (a
renamed step leaves the protocol's description pointing at nothing)."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import aiokafka
import faust
import mode
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "commit-protocol.md"
OURS = ("schemas", "collectors", "streams", "actions", "centrality")
THEIRS = tuple(Path(m.__file__).parent for m in (faust, mode, aiokafka))
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def quoted(text: str) -> list[str]:
    return sorted(set(re.findall(r"`([^`\n]+)`", text)))


@cache
def definitions(roots: tuple[Path, ...]) -> frozenset[str]:
    """Every name defined in the sources under `roots`, alone and as `Class.member`."""
    names: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                names |= _defined(node)
    return frozenset(names)


def _defined(node: ast.AST) -> set[str]:
    if isinstance(node, ast.ClassDef):
        members = {n for child in node.body for n in _defined(child)}
        return {node.name} | members | {f"{node.name}.{m}" for m in members}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return {node.name}
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    return {t.id for t in targets if isinstance(t, ast.Name)} | {
        t.attr for t in targets if isinstance(t, ast.Attribute)
    }


def resolves(dotted: str) -> bool:
    """An importable module, and attributes of it, as far as the name goes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def exists(name: str) -> bool:
    ours = tuple(ROOT / package for package in OURS)
    if "/" in name:
        return (ROOT / name).exists()
    if name.startswith("CENTRALITY_"):
        return name in (ROOT / "docs" / "settings.md").read_text()
    if not IDENTIFIER.fullmatch(name):
        return False
    if name.split(".")[0] in OURS or name.split(".")[0] == "asyncio":
        return resolves(name)
    if name in definitions(ours) or name in definitions(THEIRS):
        return True
    # A word of the contract or the schema (a ledger state, a field, a table engine).
    sources = [*ours, ROOT / "streams" / "history" / "ddl"]
    return any(
        re.search(rf"\b{re.escape(name)}\b", p.read_text(encoding="utf-8"))
        for root in sources
        for p in root.rglob("*")
        if p.suffix in (".py", ".sql")
    )


def test_everything_the_commit_protocol_names_exists() -> None:
    missing = [name for name in quoted(DOC.read_text()) if not exists(name)]
    assert not missing, f"docs/commit-protocol.md names what is not there: {missing}"


@pytest.mark.parametrize(
    "name",
    [
        "streams.faust.commit.flush_before_commit",
        "StreamsApp._fold",
        "Consumer._commit_offsets",
        "broker_commit_every",
        "streams/faust/commit.py",
        "CENTRALITY_STREAMS_COMMIT_INTERVAL_S",
    ],
)
def test_what_is_there_is_found(name: str) -> None:
    assert exists(name)


@pytest.mark.parametrize(
    "name",
    [
        "streams.faust.commit.flush_after_commit",
        "StreamsApp._fold_twice",
        "Consumer._commit_everything",
        "streams/faust/commits.py",
        "CENTRALITY_STREAMS_COMMIT_NEVER",
        "unheard_of_word",
        "two words",
    ],
)
def test_what_is_not_there_is_not_found(name: str) -> None:
    assert not exists(name)
