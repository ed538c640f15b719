"""What `dcgmi diag` and `dcgmi health -c` say, as health-check findings.

Read forms (see tests/fixtures/realworld/dcgm/PROVENANCE.md):

- `dcgmi diag -j`: `{"DCGM GPU Diagnostic": …}` (DCGM 1.7-3.x: results per `gpu_ids`, a string
  list or a number; warnings as strings or `{"warning": …}`) or `{"DCGM Diagnostic": …}` (4.x:
  results per `entity_group`/`entity_id`, a `test_summary` per test, the version in the
  document's `metadata`); `null` entries in test lists, text before the document,
  `runtime_error`;
- `dcgmi diag` text: a box of `| name | result |` rows under section rows
  (`|-----  Hardware  ---…`), results `Pass`, `Fail - All`, `Fail - GPU 2`, `Skip - All`, per-GPU
  rows `GPU0: Fail` (4.x), and `Warning`/`Error` rows whose text wraps over rows with no name;
- `dcgmi health -c` text: `Overall Health`, an entity row `-> 1` per GPU with incidents, its
  systems `-> Memory system | Failure`, each followed by the incident's wrapped text.

A failure is CRITICAL, a warning WARN; passes, skips and informational rows are no finding.
Every test's result per GPU, passes and skips included, is kept too (`DcgmResult`): a GPU that
passed is evidence as much as one that failed. A result the test gives as a whole (`Pass`,
`Fail - All`, a 4.x test row above its `GPUn:` rows) names no GPU.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from collectors.health.registry import CheckResult
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
_RESULT_BYTES = 3500  # the results as details, within a details value's 4,096 bytes
_RANK = {"Pass": 0, "Skip": 1, "Warn": 2, "Fail": 3}  # the worst of a test's GPUs' results
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
class DcgmResult:
    test: str
    result: str  # DCGM's word, capitalized: Pass, Fail, Warn, Skip, …
    gpus: tuple[int, ...]  # () when the result is the test's as a whole


@dataclass(frozen=True)
class DcgmReport:
    findings: tuple[DcgmFinding, ...]
    version: str | None = None
    runtime_error: str | None = None
    results: tuple[DcgmResult, ...] = ()

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
            counts = Counter(self.per_test().values())
            said = ", ".join(f"{n} {word.lower()}" for word, n in sorted(counts.items()))
            return "dcgm: no failures" + (f" (tests: {said})" if said else "")
        gpus: dict[tuple[str, HealthStatus], set[int]] = {}
        for f in self.findings:
            gpus.setdefault((f.test, f.status), set()).update(f.gpus)
        parts = [
            f"{test} {status.value}" + (f" on GPUs {sorted(ids)}" if ids else "")
            for (test, status), ids in gpus.items()
        ]
        return ("dcgm: " + "; ".join(parts))[:_MESSAGE_CHARS]

    def per_test(self) -> dict[str, str]:
        """Each test's result: the one it gives as a whole, else the worst of its GPUs'."""
        whole = {r.test: r.result for r in self.results if not r.gpus}
        worst: dict[str, str] = {}
        for r in self.results:
            if _RANK.get(r.result, 0) >= _RANK.get(worst.get(r.test, ""), -1):
                worst[r.test] = r.result
        return {**worst, **whole}

    def details(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "results": self._results_within_bounds(),
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

    def _results_within_bounds(self) -> list[list[Any]]:
        """`[test, result, GPUs]` per test and result; the passes left out if all of them do not
        fit a details value."""
        grouped: dict[tuple[str, str], list[int]] = {}
        for r in self.results:
            grouped.setdefault((r.test, r.result), []).extend(r.gpus)
        rows = [[test, result, gpus] for (test, result), gpus in grouped.items()]
        if len(orjson.dumps(rows)) > _RESULT_BYTES:
            rows = [row for row in rows if row[1] != "Pass"]
        return rows if len(orjson.dumps(rows)) <= _RESULT_BYTES else []


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
    findings: list[DcgmFinding] = []
    results: list[DcgmResult] = []
    for category in root.get("test_categories") or []:
        for test in (category or {}).get("tests") or []:
            _json_test(test or {}, findings, results)
    error = root.get("runtime_error") or doc.get("runtime_error")
    version = root.get("version") or (doc.get("metadata") or {}).get("version")
    return DcgmReport(tuple(findings), version, str(error) if error else None, tuple(results))


def _json_test(test: dict[str, Any], findings: list[DcgmFinding], out: list[DcgmResult]) -> None:
    """One test's results per GPU (only a 4.x `test_summary` when it has none)."""
    name = str(test.get("name", ""))
    per_gpu = [r for r in test.get("results") or [] if r and r.get("entity_group", "GPU") == "GPU"]
    summary = test.get("test_summary") or {}
    if not per_gpu and summary.get("status"):
        per_gpu = [{**summary, "gpu_ids": []}]
    for result in per_gpu:
        word = str(result.get("status", ""))
        ids = _gpus(result.get("gpu_ids", result.get("gpu_id", result.get("entity_id"))))
        out.append(DcgmResult(name, word.capitalize(), ids))
        status = _STATUS.get(word.upper())
        if status is not None:
            message = _warning_text(result.get("warnings"))[:_MESSAGE_CHARS]
            findings.append(DcgmFinding(name, status, ids, message))


@dataclass
class _Open:
    test: str
    status: HealthStatus
    gpus: tuple[int, ...]
    # the text as the box cut it; True where a part begins a new message (a new Warning row)
    parts: list[tuple[str, bool]] = field(default_factory=list)


class _TextReader:
    """One pass over the box's rows; a row with no name continues the one above it."""

    def __init__(self) -> None:
        self.found: list[_Open] = []
        self.results: list[DcgmResult] = []
        self.test: str | None = None  # the test whose `GPUn: …` rows (4.x) follow
        self.version: str | None = None
        self.entity: tuple[int, ...] = ()
        self.open: _Open | None = None  # the finding that wrapped text belongs to
        self.health = False  # health reports wrap at words; diag boxes cut at a width
        self.widest = 0  # that width: the longest chunk of wrapped text seen

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
        if name in ("", "Warning", "Error"):  # metadata rows are cut at another width
            self.widest = max(self.widest, len(chunk))
        if name:
            self.row(name, chunk)
        elif m := _PER_GPU.match(chunk.strip()):
            self.per_gpu(int(m.group(1)), m.group(2))
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
            self.wrap(value, new=True)
        elif m := _RESULT.match(word):
            where = (m.group(2) or "").strip()
            gpus = _gpus(where) if where != "All" else ()
            self.test = name
            self.results.append(DcgmResult(name, m.group(1).capitalize(), gpus))
            self.add(name, m.group(1), gpus)
        else:
            self.open = None

    def per_gpu(self, gpu: int, word: str) -> None:
        """A 4.x `GPUn: Fail` row: the test above it, on that GPU."""
        if self.test is None:
            return
        self.results.append(DcgmResult(self.test, word.capitalize(), (gpu,)))
        if _STATUS.get(word.upper()) is None:
            return
        mine = [f for f in self.found if f.test == self.test]
        if mine:
            mine[-1].gpus = (*mine[-1].gpus, gpu)
        else:
            self.add(self.test, word, (gpu,))

    def add(self, test: str, word: str, gpus: tuple[int, ...] = ()) -> None:
        status = _STATUS.get(word.upper())
        self.open = _Open(test, status, self.entity or gpus) if status else None
        if self.open is not None:
            self.found.append(self.open)

    def wrap(self, text: str, new: bool = False) -> None:
        if self.open is not None:
            self.open.parts.append((text, new))

    def report(self) -> DcgmReport:
        findings = []
        for f in self.found:
            message = self._joined(f.parts)
            gpus = f.gpus
            if f.test in ("Warning", "Error") and not gpus:
                gpus = _gpus(",".join(_GPU_NAMED.findall(message)))
            findings.append(DcgmFinding(f.test, f.status, gpus, message))
        return DcgmReport(tuple(findings), self.version, results=tuple(self.results))

    def _joined(self, parts: list[tuple[str, bool]]) -> str:
        text, last = "", ""
        for part, new in parts:
            boundary = new or self.health or len(last.rstrip()) < self.widest
            text += (" " if text and boundary else "") + part
            last = part
        return " ".join(text.split())[:_MESSAGE_CHARS]


def _from_text(text: str) -> DcgmReport:
    reader = _TextReader()
    for line in text.splitlines():
        reader.line(line)
    return reader.report()


async def dcgmi_check(*args: str) -> CheckResult:
    """Run `dcgmi ARGS` and say what it found; no dcgmi, or a dcgmi that fails without saying
    anything readable, is UNKNOWN with its reason."""
    if shutil.which("dcgmi") is None:
        return CheckResult(HealthStatus.UNKNOWN, "dcgmi not found (is DCGM installed?)")
    proc = await asyncio.create_subprocess_exec(
        "dcgmi",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    report = read_dcgm(out.decode(errors="replace"))
    if proc.returncode and not report.findings:
        reason = (err or out).decode(errors="replace").strip().splitlines()
        message = f"dcgmi exited {proc.returncode}: {reason[0] if reason else 'no output'}"
        return CheckResult(HealthStatus.UNKNOWN, message[:_MESSAGE_CHARS])
    return CheckResult(report.status, report.summary(), report.details())
