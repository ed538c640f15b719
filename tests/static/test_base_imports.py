"""The base install imports nothing of the extras: what a producer imports (the contract, the
Emitter, the checkpoint SDK, the CLI) is imported here in a child process that cannot see any
library only an extra brings, worked out from pyproject.toml and the installed metadata.
(tests/e2e/test_wheel.py does the same in a real base install; this is the fast check.)"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PRODUCER_MODULES = (
    "schemas.*",
    "schemas.runtime.emitter",
    "collectors.checkpoints.notify",
    "collectors.checkpoints.callbacks",
    "centrality.cli",
)
_CHILD = """
import importlib, importlib.abc, pkgutil, sys
hidden = set(sys.argv[1].split(","))

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in hidden:
            raise ModuleNotFoundError(f"{name} (only an extra installs it)", name=name)
        return None

sys.meta_path.insert(0, Hide())
for name in sys.argv[2:]:
    if name == "schemas.*":  # all of schemas (contract, runtime) but the Faust codec
        import schemas
        walked = [m.name for m in pkgutil.walk_packages(schemas.__path__, "schemas.")]
        for module in [m for m in walked if m != "schemas.runtime.faust_codec"]:
            importlib.import_module(module)
    else:
        importlib.import_module(name)
"""


def _closure(requirements: Iterable[Requirement], extras: set[str]) -> set[str]:
    """Distribution names `requirements` install, transitively, as installed here."""
    seen: set[str] = set()
    todo = [(r, extras) for r in requirements]
    while todo:
        req, wanted = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in wanted or {""}):
            continue
        name = _norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        todo += [(Requirement(r), set(req.extras)) for r in metadata.requires(req.name) or []]
    return seen


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def hidden_imports() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = _closure((Requirement(r) for r in project["dependencies"]), set())
    extras = {
        e: [Requirement(r) for r in reqs if not r.startswith("centrality[")]
        for e, reqs in project["optional-dependencies"].items()
        if e != "test"
    }
    only_extras = _closure((r for reqs in extras.values() for r in reqs), set()) - base
    return {
        module
        for module, dists in metadata.packages_distributions().items()
        if {_norm(d) for d in dists} <= only_extras
    }


def test_what_producers_import_needs_no_extra() -> None:
    hidden = hidden_imports()
    # The heavy ones the issue named are among what the base must do without.
    assert {"chdb", "kubernetes", "faust", "pynvml", "clickhouse_connect", "ray"} <= hidden
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, ",".join(sorted(hidden)), *PRODUCER_MODULES],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_hiding_works() -> None:
    """A module that does need an extra fails in the child: the check can fail."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, ",".join(sorted(hidden_imports())), "streams.faust.app"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode != 0 and "only an extra installs it" in done.stderr
