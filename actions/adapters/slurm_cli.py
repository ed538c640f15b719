"""Slurm's command-line clients, with their failures sorted into temporary and permanent."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

import hostlist

from actions.adapters.settings import SlurmSettings
from actions.errors import PermanentError, TemporaryError
from schemas.slurm import slurm_job_word

# Messages of a controller that is down, restarting or overloaded: asking again later may work.
_TEMPORARY = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|"
    r"Resource temporarily unavailable|Slurm backup controller in standby|"
    r"Communication connection failure|try again|Zero Bytes were transmitted",
    re.IGNORECASE,
)


def classify(command: str, stderr: str) -> Exception:
    """The error a failed Slurm command stands for (unknown job/node, bad request: permanent)."""
    message = f"{command}: {stderr.strip() or 'failed'}"
    return TemporaryError(message) if _TEMPORARY.search(stderr) else PermanentError(message)


@dataclass(frozen=True)
class SlurmCli:
    settings: SlurmSettings

    def run(self, *argv: str, env: dict[str, str] | None = None) -> str:
        """Run one Slurm command; its stdout, or TemporaryError/PermanentError."""
        conf = self.settings.conf
        if conf is not None and not conf.is_file():
            # Slurm's clients retry a missing config for a minute before failing.
            raise PermanentError(f"SLURM_CONF {conf} does not exist")
        full_env = {**os.environ, **(env or {})}
        if conf is not None:
            full_env["SLURM_CONF"] = str(conf)
        try:
            done = subprocess.run(
                list(argv),
                env=full_env,
                capture_output=True,
                text=True,
                timeout=self.settings.command_timeout_s,
                check=False,
            )
        except FileNotFoundError as e:
            raise PermanentError(f"{argv[0]} is not installed here") from e
        except subprocess.TimeoutExpired as e:
            raise TemporaryError(f"{argv[0]} timed out after {e.timeout:.0f}s") from e
        if done.returncode != 0:
            raise classify(" ".join(argv[:3]), done.stderr)
        return done.stdout

    def job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job` as key → value (the controller forgets jobs after MinJobAge)."""
        return parse_job(self.run("scontrol", "show", "job", job_id))

    def nodes(self, nodes: list[str]) -> dict[str, tuple[str, str]]:
        """node → (state, reason) from sinfo (state like `idle`, `drained`, `draining`)."""
        out = self.run("sinfo", "-h", "-N", "-n", hostlist_of(nodes), "-o", "%N|%T|%E|%f")
        found = parse_nodes(out)
        missing = sorted(set(expand_nodes(nodes)) - set(found))
        if missing:
            raise PermanentError(f"unknown Slurm nodes: {', '.join(missing)}")
        return found

    def gpus(self, nodes: list[str]) -> dict[str, int]:
        """node → GPUs configured on it (its GRES), as `--gres=gpu:N` counts them."""
        out = self.run("sinfo", "-h", "-N", "-n", hostlist_of(nodes), "-o", "%N|%G")
        return {
            name: gpus_in_gres(gres)
            for name, _, gres in (line.partition("|") for line in out.splitlines() if line)
        }

    def features(self, node: str) -> list[str]:
        out = self.run("sinfo", "-h", "-N", "-n", node, "-o", "%f").strip()
        return [] if out in ("", "(null)") else sorted(set(out.split(",")))


def parse_job(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        # Values such as Comment= and StdOut= may hold spaces: one key per line owns the rest.
        for key, value in _pairs(line):
            fields.setdefault(key, value)
    return fields


def exit_status(job: dict[str, str]) -> int:
    """A finished job's `ExitCode=code:signal` as a shell would report it; never 0 for a job
    that Slurm did not end COMPLETED (a NODE_FAIL says `0:0` on 22.05)."""
    code, _, signal = job.get("ExitCode", "1:0").partition(":")
    status = 128 + int(signal) if signal.isdigit() and int(signal) else int(code or 1)
    if status == 0 and slurm_job_word(job.get("JobState")) != "COMPLETED":
        return 1
    return status


def parse_nodes(out: str) -> dict[str, tuple[str, str]]:
    """`sinfo -h -N -o %N|%T|%E|%f` lines; the state without sinfo's suffixes (`idle*`)."""
    found: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        name, state, reason, _ = line.split("|", 3)
        found[name] = (state.rstrip("*$~#!%@^-"), reason)
    return found


_GRES_SUFFIX = re.compile(r"\([^)]*\)")
_MULTIPLIERS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_COUNT = re.compile(r"(\d+)([KMG]?)")


def gpus_in_gres(gres: str) -> int:
    """GPUs in a GRES string as sinfo prints it: `gpu:4`, `gpu:a100:8(S:0-1)`,
    `gpu:p100:2(S:0-1),gpu:v100:2(S:0-1)` (types add up), `tmp:844G` or `(null)` (none)."""
    total = 0
    # Index and socket lists in parentheses may hold commas of their own.
    for entry in _GRES_SUFFIX.sub("", gres.strip()).split(","):
        name, *rest = entry.strip().split(":")
        count = _COUNT.fullmatch(rest[-1]) if name == "gpu" and rest else None
        if count:
            total += int(count[1]) * _MULTIPLIERS[count[2]]
    return total


_NODE_NAME = re.compile(r"[\w.\-]+")


def expand_nodes(nodes: Sequence[str]) -> list[str]:
    """Node names and hostlists (`gpu-[01-04]`, `rack[0-1]_blade[0-3]`) as Slurm expands them,
    each once: Slurm keeps a name given twice, a set of nodes to act on does not."""
    try:
        names: list[str] = hostlist.expand_hostlist(",".join(nodes)) if nodes else []
    except hostlist.BadHostlist as e:
        raise PermanentError(f"bad node names {list(nodes)}: {e}") from e
    if not names or any(not _NODE_NAME.fullmatch(n) for n in names):
        raise PermanentError(f"bad node names: {list(nodes)}")
    return names


def hostlist_of(nodes: Sequence[str]) -> str:
    """The compact hostlist Slurm's commands take (`node[1-3]`), checked name by name."""
    collected: str = hostlist.collect_hostlist(expand_nodes(nodes))
    return collected


def _pairs(line: str) -> list[tuple[str, str]]:
    """Split `A=1 B=x y C=2`; a token without `=` continues the previous value."""
    pairs: list[tuple[str, str]] = []
    for token in line.split(" "):
        key, eq, value = token.partition("=")
        if eq and key and key[0].isupper():
            pairs.append((key, value))
        elif pairs and token:
            pairs[-1] = (pairs[-1][0], f"{pairs[-1][1]} {token}")
    return pairs
