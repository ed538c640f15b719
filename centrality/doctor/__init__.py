"""`centrality doctor`: checks registered by decorator, one module per concern, each saying what
to fix. A check that raises is reported with the one-line explanation every command gives."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from centrality.errors import explain, one_line

Status = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    detail: str
    fix: str = ""


Check = Callable[[], Iterator[Finding]]
_CHECKS: dict[str, tuple[Check, str | None]] = {}

# One module per concern; each registers its checks with `@check(name)`.
CHECK_MODULES: tuple[str, ...] = (
    "centrality.doctor.kafka",
    "centrality.doctor.clickhouse",
    "centrality.doctor.local",
    "centrality.doctor.rules",
)


def check(name: str, needs: str | None = None) -> Callable[[Check], Check]:
    """Register a check; one that `needs` another is skipped when that one failed."""

    def register(fn: Check) -> Check:
        _CHECKS[name] = (fn, needs)
        return fn

    return register


def run_checks() -> list[Finding]:
    for module in CHECK_MODULES:
        importlib.import_module(module)
    findings: list[Finding] = []
    failed: set[str] = set()
    for name, (fn, needs) in _CHECKS.items():
        if needs in failed:
            findings.append(Finding(name, "skip", f"not checked: {needs} failed"))
            failed.add(name)
            continue
        try:
            found = list(fn())
        except Exception as exc:  # a check that cannot run is itself the finding
            failure = explain(exc)
            found = [
                Finding(name, "fail", failure.problem, failure.fix)
                if failure
                else Finding(name, "fail", f"{type(exc).__name__}: {one_line(str(exc), 200)}")
            ]
        findings.extend(found)
        if any(f.status == "fail" for f in found):
            failed.add(name)
    return findings
