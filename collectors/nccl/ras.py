"""What NCCL's RAS subsystem (2.24+) reports about a running job: `ncclras` output.

Three forms (NVIDIA's RAS guide, docs/userguide/source/troubleshooting/ras.rst of NVIDIA/nccl):

- the status report (`ncclras`, or `echo status | nc localhost 28028`): `Errors` and `Warnings`
  sections of blocks, a head line (`DEAD`, `INCOMPLETE`, `TIMEOUT`, `#0-0 (hash) MISMATCH`) then
  indented lines naming processes (`Process 3487984 on node 172.16.64.213 managing GPU 5`) or
  ranks (`Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124`);
- the JSON report (`ncclras -f json`, 2.28.7+): per communicator, `missing_ranks` with
  `unresponsive` / `considered_dead`;
- monitor mode (`ncclras -m`, 2.29+): `[time] PEER_DEAD: Process … on node … managing GPU 1`
  lines, or the same event as JSON.

A process RAS considers dead is `dead`; one that did not answer (INCOMPLETE, unresponsive) is
`unreachable`. MISMATCH and TIMEOUT are warnings: a busy job shows them and they clear on the
next query, so they name no process here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

_PROCESS = re.compile(r"Process (\d+) on node (\S+) managing GPUs? ([\d, ]+)")
_RANK = re.compile(r"Rank (\d+) -- GPU (\d+) managed by process (\d+) on node (\S+)")
_HEAD = re.compile(r"^(?:#\d+-\d+ \(\w+\) )?([A-Z][A-Z_,]+)$")
_EVENT = re.compile(r"^\[[^\]]+\] ([A-Z_]+): (.*)$")
_SECTIONS = ("Errors", "Warnings")


@dataclass(frozen=True)
class RasProcess:
    pid: int
    node: str
    gpus: tuple[int, ...]
    rank: int | None = field(default=None, compare=False)  # where RAS names it
    said: str = field(default="", compare=False)  # the report's own line about it


@dataclass
class RasReport:
    errors: list[str]  # block heads of the Errors section: DEAD, INCOMPLETE, …
    warnings: list[str]  # of the Warnings section: MISMATCH, TIMEOUT, …
    dead: list[RasProcess]
    unreachable: list[RasProcess]

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.dead)

    @property
    def nodes(self) -> list[str]:
        """The nodes of the processes RAS could not reach or declared dead."""
        return sorted({p.node for p in self.dead + self.unreachable})


def _add(found: list[RasProcess], process: RasProcess) -> None:
    if process not in found:
        found.append(process)


def _process(line: str) -> RasProcess | None:
    said = line.strip()
    if m := _PROCESS.search(line):
        gpus = tuple(int(g) for g in re.findall(r"\d+", m.group(3)))
        return RasProcess(int(m.group(1)), m.group(2), gpus, said=said)
    if m := _RANK.search(line):
        rank = int(m.group(1))
        return RasProcess(int(m.group(3)), m.group(4), (int(m.group(2)),), rank, said)
    return None


def read_ras(text: str) -> RasReport | None:
    """The RAS report in `text`, or None when it holds none."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return _from_json(orjson.loads(stripped))
        except orjson.JSONDecodeError:
            return None
    return _from_text(text)


def _from_text(text: str) -> RasReport | None:
    report = RasReport([], [], [], [])
    section: str | None = None
    head: str | None = None
    seen = False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"="}
        if line.strip() in _SECTIONS and underline:
            section, head, seen = line.strip(), None, True
        elif underline or set(line.strip()) == {"="}:
            section = None if underline else section  # another section (Job summary, …)
        elif m := _EVENT.match(line.strip()):
            seen = True
            if m.group(1) == "PEER_DEAD" and (p := _process(line)):
                _add(report.dead, p)
        elif section and line and not line[0].isspace() and (m := _HEAD.match(line.strip())):
            head = m.group(1)
            (report.errors if section == "Errors" else report.warnings).append(head)
        elif section == "Errors" and head and (p := _process(line)):
            _add(report.dead if head == "DEAD" else report.unreachable, p)
    if report.dead:  # a dead process is no longer merely unreachable
        report.unreachable = [p for p in report.unreachable if p not in report.dead]
    return report if seen else None


def _from_json(doc: dict[str, Any]) -> RasReport | None:
    report = RasReport([], [], [], [])
    if doc.get("event") == "PEER_DEAD":
        peer = doc.get("peer") or {}
        gpus = tuple(int(g) for g in peer.get("cuda_devs") or ())
        said = f"PEER_DEAD: process {peer['pid']} on node {peer['host']}"
        _add(report.dead, RasProcess(int(peer["pid"]), str(peer["host"]), gpus, said=said))
        return report
    if "communicators" not in doc:
        return None
    for comm in doc["communicators"] or []:
        for rank in comm.get("missing_ranks") or []:
            status = rank.get("status") or {}
            said = f"missing rank {rank.get('rank')}: process {rank['pid']} on node {rank['host']}"
            number = rank.get("rank")
            p = RasProcess(
                int(rank["pid"]),
                str(rank["host"]),
                (int(rank["cuda_dev"]),),
                int(number) if isinstance(number, int) else None,
                said,
            )
            _add(report.dead if status.get("considered_dead") else report.unreachable, p)
    if report.dead:
        report.errors.append("DEAD")
    if report.unreachable:
        report.errors.append("INCOMPLETE")
    if (doc.get("ras") or {}).get("timeouts_count"):
        report.warnings.append("TIMEOUT")
    return report
