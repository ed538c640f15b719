"""What `dcgmi diag` and `dcgmi health -c` say, as health-check findings.

Read forms (see tests/fixtures/realworld/dcgm/PROVENANCE.md):

- `dcgmi diag -j`: `{"DCGM GPU Diagnostic": …}` (DCGM 1.7-3.x: results per `gpu_ids`, a string
  list or a number; warnings as strings or `{"warning": …}`) or `{"DCGM Diagnostic": …}` (4.x:
  results per `entity_group`/`entity_id`); `null` entries in test lists, text before the
  document, `runtime_error`;
- `dcgmi diag` text: a box of `| name | result |` rows under section rows
  (`|-----  Hardware  ---…`), results `Pass`, `Fail - All`, `Fail - GPU 2`, `Skip - All`, per-GPU
  rows `GPU0: Fail` (4.x), and `Warning`/`Error` rows whose text wraps over rows with no name;
- `dcgmi health -c` text: `Overall Health`, an entity row `-> 1` per GPU with incidents, its
  systems `-> Memory system | Failure`, each followed by the incident's wrapped text.

A failure is CRITICAL, a warning WARN; passes, skips and informational rows are no finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from schemas.events.nodes import HealthStatus

_STATUS = {
    "FAIL": HealthStatus.CRITICAL,
    "FAILURE": HealthStatus.CRITICAL,
    "ERROR": HealthStatus.CRITICAL,
    "WARN": HealthStatus.WARN,
    "WARNING": HealthStatus.WARN,
}
_GPU_NAMED = re.compile(r"\bGPU ?(\d+)\b")
_RESULT = re.compile(r"^(Pass|Fail|Warn|Skip)\w*(?: - (.*))?$", re.IGNORECASE)
_PER_GPU = re.compile(r"^GPU(\d+): (\w+)")
_ENTITY = re.compile(r"^-> (\d+)$")
_SYSTEM = re.compile(r"^-> (.+)$")
_SECTION = re.compile(r"^[|+]-+\s+(\w[\w ]*?)\s+-+[+|]")
_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class DcgmFinding:
    test: str  # the diagnostic or health system that found it ("GPU Memory", "Memory system")
    status: HealthStatus  # WARN or CRITICAL
    gpus: tuple[int, ...]  # () when DCGM says all GPUs or names none
    message: str = ""


@dataclass(frozen=True)
class DcgmReport:
    findings: tuple[DcgmFinding, ...]
    version: str | None = None
    runtime_error: str | None = None

    @property
    def status(self) -> HealthStatus:
        if self.runtime_error:
            return HealthStatus.UNKNOWN
        worst = {f.status for f in self.findings}
        for status in (HealthStatus.CRITICAL, HealthStatus.WARN):
            if status in worst:
                return status
        return HealthStatus.OK

    def summary(self) -> str:
        """`sm_stress CRITICAL on GPUs [0, 2, 3]; …`: one part per test and status."""
        if self.runtime_error:
            return f"dcgm: {self.runtime_error}"[:_MESSAGE_CHARS]
        if not self.findings:
            return "dcgm: no failures"
        gpus: dict[tuple[str, HealthStatus], set[int]] = {}
        for f in self.findings:
            gpus.setdefault((f.test, f.status), set()).update(f.gpus)
        parts = [
            f"{test} {status.value}" + (f" on GPUs {sorted(ids)}" if ids else "")
            for (test, status), ids in gpus.items()
        ]
        return ("dcgm: " + "; ".join(parts))[:_MESSAGE_CHARS]

    def details(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "findings": [
                {
                    "test": f.test,
                    "status": f.status.value,
                    "gpus": list(f.gpus),
                    "message": f.message,
                }
                for f in self.findings
            ],
        }


def read_dcgm(text: str) -> DcgmReport:
    """A `dcgmi diag` or `dcgmi health -c` output, JSON (`-j`) or text, as findings."""
    start = text.find("{")
    if start >= 0 and not text[:start].lstrip().startswith(("|", "+")):
        try:
            return _from_json(orjson.loads(text[start:]))
        except orjson.JSONDecodeError:
            pass
    return _from_text(text)


def _gpus(value: Any) -> tuple[int, ...]:
    return tuple(int(g) for g in re.findall(r"\d+", str(value)))


def _warning_text(warnings: Any) -> str:
    texts = [w.get("warning", "") if isinstance(w, dict) else str(w) for w in warnings or []]
    return " ".join(t for t in texts if t)


def _from_json(doc: dict[str, Any]) -> DcgmReport:
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic") or {}
    findings = []
    for category in root.get("test_categories") or []:
        for test in (category or {}).get("tests") or []:
            for result in (test or {}).get("results") or []:
                status = _STATUS.get(str(result.get("status", "")).upper())
                if status is None:
                    continue
                ids = result.get("gpu_ids", result.get("gpu_id", result.get("entity_id")))
                findings.append(
                    DcgmFinding(
                        test["name"],
                        status,
                        _gpus(ids),
                        _warning_text(result.get("warnings"))[:_MESSAGE_CHARS],
                    )
                )
    error = root.get("runtime_error") or doc.get("runtime_error")
    return DcgmReport(tuple(findings), root.get("version"), str(error) if error else None)


@dataclass
class _Open:
    test: str
    status: HealthStatus
    gpus: tuple[int, ...]
    parts: list[str] = field(default_factory=list)  # the text, as the box cut it


class _TextReader:
    """One pass over the box's rows; a row with no name continues the one above it."""

    def __init__(self) -> None:
        self.found: list[_Open] = []
        self.version: str | None = None
        self.entity: tuple[int, ...] = ()
        self.open: _Open | None = None  # the finding that wrapped text belongs to
        self.health = False  # health reports wrap at words; diag boxes cut at a width
        self.widest = 0  # that width: the longest chunk of text seen

    def line(self, line: str) -> None:
        raw = line.strip()
        if _SECTION.match(raw) or raw.startswith("+"):
            self.open = None
            return
        if not raw.startswith("|"):
            return
        # `| name | value |`: a value is padded by one space on the left and at least one on
        # the right; a chunk of wrapped text keeps a space it starts with (a new word).
        segments = raw[1:].split("|")
        name = segments[0].strip()
        values = [seg for seg in segments[1:] if seg.strip()]
        if not values:  # a row of text alone: how the health report wraps an incident
            if _ENTITY.match(name) or name.startswith("Overall Health"):
                self.row(name, "")
            else:
                self.wrap(segments[0][1:].rstrip())
            return
        chunk = values[0][1:].rstrip()
        self.widest = max(self.widest, len(chunk))
        if name:
            self.row(name, chunk)
        elif (m := _PER_GPU.match(chunk.strip())) and self.found:
            if _STATUS.get(m.group(2).upper()) is not None:
                self.found[-1].gpus = (*self.found[-1].gpus, int(m.group(1)))
        else:
            self.wrap(chunk)

    def row(self, name: str, value: str) -> None:
        word = value.strip()
        if name.startswith("Overall Health"):
            self.health = True  # the entities below say what is wrong
        elif name == "DCGM Version":
            self.version = word
        elif m := _ENTITY.match(name):
            self.health = True
            self.entity = (int(m.group(1)),)
            self.add("GPU", word)
        elif (m := _SYSTEM.match(name)) and self.entity:
            last = self.found[-1] if self.found else None
            if last is not None and last.test == "GPU" and not last.parts:
                self.found.pop()  # the entity's systems tell it in detail
            self.add(m.group(1), word)
        elif name in ("Warning", "Error"):
            if name == "Error" or self.open is None:
                self.add(name, name)
            self.wrap(" " + value if self.open and self.open.parts else value)
        elif m := _RESULT.match(word):
            where = (m.group(2) or "").strip()
            self.add(name, m.group(1), _gpus(where) if where != "All" else ())
        else:
            self.open = None

    def add(self, test: str, word: str, gpus: tuple[int, ...] = ()) -> None:
        status = _STATUS.get(word.upper())
        self.open = _Open(test, status, self.entity or gpus) if status else None
        if self.open is not None:
            self.found.append(self.open)

    def wrap(self, text: str) -> None:
        if self.open is not None:
            self.open.parts.append(text)

    def report(self) -> DcgmReport:
        findings = []
        for f in self.found:
            message = self._joined(f.parts)
            gpus = f.gpus
            if f.test in ("Warning", "Error") and not gpus:
                gpus = _gpus(",".join(_GPU_NAMED.findall(message)))
            findings.append(DcgmFinding(f.test, f.status, gpus, message))
        return DcgmReport(tuple(findings), self.version)

    def _joined(self, parts: list[str]) -> str:
        text, last = "", ""
        for part in parts:
            boundary = self.health or len(last.rstrip()) < self.widest
            text += (" " if text and boundary else "") + part
            last = part
        return " ".join(text.split())[:_MESSAGE_CHARS]


def _from_text(text: str) -> DcgmReport:
    reader = _TextReader()
    for line in text.splitlines():
        reader.line(line)
    return reader.report()
