"""Short functions in the shipped packages: none over 60 lines, its decorators aside, its
signature and docstring included (a typer command's options count: they are what it reads).
Functions over 60 lines had grown from 5 to 17 (issue 42); a long one is a function with more
than one job, and a reader of the worker or a command follows it in pieces it names. Tests
tell stories end to end and are not held to it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("actions", "centrality", "collectors", "schemas", "streams")
MAX_LINES = 60


def long_functions(source: str, path: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_LINES:
                yield f"{path}:{node.lineno} {node.name}: {lines} lines"


def test_no_function_of_the_packages_is_over_60_lines() -> None:
    found = [
        long
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for long in long_functions(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert not found, "split these into functions that each do one thing:\n" + "\n".join(found)


def test_a_long_function_is_found() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))
    assert list(long_functions(f"def short():\n{body}", "a.py")) == []
    found = list(long_functions(f"async def long():\n{body}    return x0\n", "a.py"))
    assert found == ["a.py:1 long: 61 lines"]
