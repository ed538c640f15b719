"""`nvidia-smi` as the node tools use it: queries in CSV, and the one reset they make.

Runs on the target node (a job there), so it imports only the standard library. The CSV forms
are those of `--format=csv,noheader` (NVIDIA's `nvidia-smi --help-query-*`): one line per GPU
or process, fields separated by `, `, nothing at all when there is no row (no
process on a GPU). A GPU index the driver does not have answers "No devices were found" with
exit code 6.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass


def command() -> str:
    """The nvidia-smi to run: `CENTRALITY_NVIDIA_SMI` (a test's fake, a non-standard path)."""
    return os.environ.get("CENTRALITY_NVIDIA_SMI", "nvidia-smi")


TIMEOUT_S = 120.0


class SmiError(RuntimeError):
    """nvidia-smi is missing, timed out or answered an error."""


@dataclass(frozen=True)
class Answer:
    code: int
    out: str
    err: str


def run(*args: str, timeout_s: float = TIMEOUT_S) -> Answer:
    smi = command()
    try:
        done = subprocess.run(
            [smi, *args], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except FileNotFoundError:
        raise SmiError(f"{smi} is not installed on this node") from None
    except subprocess.TimeoutExpired:
        raise SmiError(f"{smi} {' '.join(args)} timed out after {timeout_s:g}s") from None
    return Answer(done.returncode, done.stdout, done.stderr)


def query(what: str, fields: list[str], *select: str) -> list[dict[str, str]]:
    """`nvidia-smi [select] --query-<what>=<fields> --format=csv,noheader` as one dict a row."""
    answer = run(*select, f"--query-{what}={','.join(fields)}", "--format=csv,noheader")
    if answer.code != 0:
        words = (answer.out + answer.err).strip() or f"exit code {answer.code}"
        raise SmiError(f"{command()} --query-{what}: {words}")
    return parse_csv(answer.out, fields)


def parse_csv(text: str, fields: list[str]) -> list[dict[str, str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(", ", len(fields) - 1)]
        if len(values) != len(fields):
            raise SmiError(f"unexpected nvidia-smi line {line!r} for {fields}")
        rows.append(dict(zip(fields, values, strict=True)))
    return rows


def gpu_indexes() -> list[int]:
    return [int(row["index"]) for row in query("gpu", ["index"])]


def processes_on(gpu: int) -> list[int]:
    """The processes with a compute context on GPU `gpu` (none: it may be reset)."""
    return [int(row["pid"]) for row in query("compute-apps", ["pid"], "-i", str(gpu))]


def node_name() -> str:
    named = os.environ.get("SLURMD_NODENAME") or os.environ.get("CENTRALITY_NODE")
    return named or socket.gethostname()
