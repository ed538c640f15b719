"""The contract never imports the shared runtime: no module of `schemas/` outside
`schemas/runtime/` imports `schemas.runtime` (schemas/__init__.py), so what a producer in another
language must match is the contract alone, never the code that runs it. Read with `ast`: every
`import`, `from ... import` (relative ones resolved) and `importlib.import_module("...")`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "schemas"
RUNTIME = CONTRACT / "runtime"


def _package(path: Path, root: Path) -> list[str]:
    """The package a module at `path` under `root` is in (an `__init__.py`: its own)."""
    return list(path.relative_to(root).parent.parts)


def imported(path: Path, root: Path = ROOT) -> set[str]:
    """Every module `path` names in an import, as a dotted name (`from a import b`: `a.b` too,
    since `b` may be a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package(path, root)
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def runtime_imports(path: Path, root: Path = ROOT) -> list[str]:
    """What of the runtime the module at `path` imports."""
    names = imported(path, root)
    return sorted(n for n in names if n == "schemas.runtime" or n.startswith("schemas.runtime."))


def test_no_module_of_the_contract_imports_the_runtime() -> None:
    contract = [p for p in sorted(CONTRACT.rglob("*.py")) if RUNTIME not in p.parents]
    assert (
        len(contract) > 20 and RUNTIME.is_dir()
    )  # the walk saw the contract; the runtime is there
    violations = [
        f"{path.relative_to(ROOT)} imports {', '.join(names)}"
        for path in contract
        if (names := runtime_imports(path))
    ]
    assert not violations, "\n".join(violations)


def test_checker_sees_every_form_of_import(tmp_path: Path) -> None:
    package = tmp_path / "schemas"
    package.mkdir()
    forms = {
        "import schemas.runtime.tracing\n": ["schemas.runtime.tracing"],
        "from schemas.runtime import kafka_clients\n": [
            "schemas.runtime",
            "schemas.runtime.kafka_clients",
        ],
        "from schemas import runtime\n": ["schemas.runtime"],
        "from .runtime.settings import KafkaSettings\n": [
            "schemas.runtime.settings",
            "schemas.runtime.settings.KafkaSettings",
        ],
        "import importlib\nimportlib.import_module('schemas.runtime.logs')\n": [
            "schemas.runtime.logs"
        ],
        "from schemas.codec import decode\nimport schemas.events\n": [],
    }
    for source, expected in forms.items():
        module = package / "m.py"
        module.write_text(source)
        assert runtime_imports(module, tmp_path) == expected, source
