"""What launchers, log shippers and runtimes put in front of a line: the rank and time it names.

A line is read one prefix at a time, as long as one matches its start:

- ranks: torchrun's `[rank3]:` and `--tee`'s `[default0]:`, mpirun/prterun `--tag-output`'s
  `[1,3]<stderr>:` (`[prterun-host-1@1,3]<stdout>:`), horovodrun's `[1]<stdout>:`, MPICH's and
  Intel MPI's `[3] ` (`-prepend-rank`, `-l`), srun `--label`'s `3: `;
- Ray's `(RayTrainWorker pid=…, ip=…)` (a Ray Data operator's name may hold parentheses: `(Map
  Batches(f)->Write pid=…)`), its own processes' `(raylet, ip=…)`, the autoscaler's
  `(autoscaler +1m2s)` and `(scheduler +2h, ip=…)`, SkyPilot's `(head, rank=0, pid=…)` (the rank of
  a node, not of a process: not read);
- times, to the precision written (seconds to nanoseconds, kept to microseconds), with or without
  a zone: ISO 8601 with `T` or a space, `.` or `,` before the fraction, in brackets or not, ended
  by a space, a tab or `: ` (XLA's and TensorFlow's `2024-10-09 15:47:38.568412: E …`); a Kubernetes
  container log file's `2024-03-05T07:01:51.123456789Z stdout F `; Ray's C++ header
  `[2023-06-14 23:54:11,900 E 869 1530] `; journald's `short-iso` with its host and
  `ident[pid]: `; `dmesg -T`'s and Open MPI `--timestamp-output`'s `Sun Jan 11 09:52:01 2026`;
  journald's `short`/`short-precise` and syslog's `Feb  2 09:51:48 host slurmd[12912]: `.

The first time read is the line's; one without a zone is the node's local time (the tailer runs
where the job writes, and reads it at the offset its zone has when it reads). A date without a
year (syslog, journald `short`) is not guessed: no time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import NamedTuple

_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?"
_ZONE = r"Z|[+-]\d\d:?\d\d"
_IDENT = r"[\w.-]+[ ][\w./@-]+(?:\[\d+\])?:[ ]"  # journald's and syslog's `host ident[pid]: `
_IP = r"[ ]ip=[\w.:-]+"

_ONE = re.compile(
    r"\[(?:rank|default)(?P<torch>\d+)\]:[ ]?"
    r"|\[(?:[\w.-]+@)?\d+,(?P<mpi>\d+)\]<std(?:out|err)>:[ ]?"
    r"|\[(?P<horovod>\d+)\]<std(?:out|err)>:[ ]?"
    r"|\[(?P<hydra>\d+)\][ ]"
    r"|[ ]*(?P<srun>\d+):[ ]"
    rf"|\((?:(?:[\w.>-]|\([^()]*\))+[ ])?pid=\d+(?:,{_IP})?\)[ ]?"
    rf"|\([\w.-]+,{_IP}\)[ ]?"
    rf"|\((?:autoscaler|scheduler)[ ]\+[\dhms]+(?:,{_IP})?\)[ ]?"
    r"|\([\w.-]+,[ ]rank=\d+,[ ]pid=\d+\)[ ]?"
    rf"|(?P<jiso>{_ISO})(?P<jzone>{_ZONE})[ ]{_IDENT}"
    rf"|\[(?P<ray>{_ISO})[ ][DIWEFC][ ]\d+[ ]\d+\][ ]"
    rf"|\[?(?P<iso>{_ISO})(?P<zone>{_ZONE})?\]?:?[ \t](?:std(?:out|err)[ ][FP][ ])?"
    r"|\[?(?P<ctime>[A-Z][a-z]{2}[ ][A-Z][a-z]{2}[ ]+\d+[ ]\d\d:\d\d:\d\d[ ]\d{4})\]?[ ]?"
    rf"|[A-Z][a-z]{{2}}[ ]+\d+[ ]\d\d:\d\d:\d\d(?:\.\d+)?[ ]{_IDENT}"
)
_RANK_GROUPS = frozenset({"torch", "mpi", "horovod", "hydra", "srun"})
_ISO_PARTS = re.compile(r"(\d+)-(\d+)-(\d+)[T ](\d+):(\d+):(\d+)(?:[.,](\d+))?")


class Prefixed(NamedTuple):
    rank: int | None  # the rank a launcher names; None where none does
    body: str  # the line after every prefix
    at: datetime | None  # the first time a prefix names, timezone-aware


def read_prefix(line: str, local: tzinfo | None = None) -> Prefixed:
    """The rank and time `line`'s prefixes name, and what follows them. `local`: the zone of a
    time written without one (default: this host's)."""
    rank: int | None = None
    at: datetime | None = None
    pos = 0
    while (m := _ONE.match(line, pos)) is not None and m.end() > pos:
        pos = m.end()
        group = m.lastgroup  # a branch's one rank group, or its time's last group
        if group is None:
            continue
        if group in _RANK_GROUPS:
            rank = int(m[group]) if rank is None else rank
        elif at is None:
            at = _time(m, local)
    return Prefixed(rank, line[pos:], at)


def split_prefix(line: str) -> tuple[int | None, str]:
    """The rank a launcher prefix names (None where none does) and the line after prefixes."""
    found = read_prefix(line)
    return found.rank, found.body


def _time(m: re.Match[str], local: tzinfo | None) -> datetime | None:
    if m["ctime"]:
        naive = datetime.strptime(" ".join(m["ctime"].split()), "%a %b %d %H:%M:%S %Y")
        return _zoned(naive, None, local)
    text = m["iso"] or m["jiso"] or m["ray"]
    if text is None:
        return None
    parts = _ISO_PARTS.fullmatch(text)
    if parts is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in parts.groups()[:6])
    micros = int((parts[7] or "0")[:6].ljust(6, "0"))
    try:
        naive = datetime(year, month, day, hour, minute, second, micros)
    except ValueError:  # 24:00, the 31st of a short month, a leap second
        return None
    return _zoned(naive, m["zone"] or m["jzone"], local)


def _zoned(naive: datetime, zone: str | None, local: tzinfo | None) -> datetime:
    if zone is None:
        return naive.replace(tzinfo=local) if local is not None else naive.astimezone()
    if zone == "Z":
        return naive.replace(tzinfo=UTC)
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return naive.replace(tzinfo=timezone(sign * offset))
