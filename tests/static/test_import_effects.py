"""Importing any module of the project has no effect: in a fresh process with no environment,
every module is imported and nothing is read from the environment, no settings are built, no
file or directory is created and no attribute of Faust, mode or aiokafka is replaced. What a
worker does, it does when it is built (`streams.faust.app.create_app`) or run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "collectors", "streams", "actions", "centrality")
_CHILD = """
import importlib, os, pkgutil, sys, orjson

import pydantic_settings
from streams.faust.canary import EXPECTED

# What the project patches lives in these modules: imported first, so their state is before.
for name in {key.partition(":")[0] for key in EXPECTED if not key.startswith("streams.")}:
    importlib.import_module(name)
THIRD = ("faust", "mode", "aiokafka")
def attributes():
    seen = {}
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] not in THIRD or module is None:
            continue
        for attr, value in list(vars(module).items()):
            seen[f"{name}:{attr}"] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    seen[f"{name}:{attr}.{member}"] = id(inner)
    return seen
before = attributes()

built = []
init = pydantic_settings.BaseSettings.__init__
def recording(self, *args, **kwargs):
    built.append(type(self).__qualname__)
    init(self, *args, **kwargs)
pydantic_settings.BaseSettings.__init__ = recording

# A read of the environment by the project's own code (the standard library's wsgiref, say,
# copies it when imported: not ours), or of any CENTRALITY_ variable by anyone.
OURS = tuple(os.path.join(os.environ["PYTHONPATH"], p, "") for p in sys.argv[1].split(","))
asked = []
def ask(key):
    frame = sys._getframe(2)
    while frame is not None and not frame.f_code.co_filename.startswith(sys.prefix) \
            and not frame.f_code.co_filename.startswith(OURS):
        frame = frame.f_back  # the mapping's own frames (<frozen ...>)
    mine = frame is not None and frame.f_code.co_filename.startswith(OURS)
    if mine or "CENTRALITY" in key:
        asked.append(key)
class Recording(type(os.environ)):
    def __getitem__(self, key):
        ask(key)
        return super().__getitem__(key)
    def __contains__(self, key):
        ask(key)
        return super().__contains__(key)
    def __iter__(self):
        ask("*")
        return super().__iter__()
env = os.environ
os.environ = Recording(env._data, env.encodekey, env.decodekey, env.encodevalue, env.decodevalue)

imported = []
for package in sys.argv[1].split(","):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
            imported.append(info.name)

os.environ = env
after = attributes()
patched = sorted(k for k, v in before.items() if k in after and after[k] != v)
seen = {"imported": imported, "built": built, "asked": asked, "patched": patched}
print(orjson.dumps(seen).decode())
"""


def test_importing_every_module_reads_builds_creates_and_patches_nothing(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, ",".join(PACKAGES)],
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = orjson.loads(done.stdout.splitlines()[-1])
    assert "streams.faust.app" in seen["imported"] and len(seen["imported"]) > 100
    assert seen["built"] == []  # no settings class was built
    assert seen["asked"] == []
    assert seen["patched"] == []
    assert [*home.rglob("*"), *cwd.rglob("*")] == []
