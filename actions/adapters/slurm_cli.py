"""Slurm's command-line clients, with their failures sorted into temporary and permanent."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

from actions.adapters.settings import SlurmSettings
from actions.errors import PermanentError, TemporaryError

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
        fields: dict[str, str] = {}
        for line in self.run("scontrol", "show", "job", job_id).splitlines():
            # Values such as Comment= and StdOut= may hold spaces: one key per line owns the rest.
            for key, value in _pairs(line):
                fields.setdefault(key, value)
        return fields

    def nodes(self, nodes: list[str]) -> dict[str, tuple[str, str]]:
        """node → (state, reason) from sinfo (state like `idle`, `drained`, `draining`)."""
        out = self.run("sinfo", "-h", "-N", "-n", ",".join(nodes), "-o", "%N|%T|%E|%f")
        found: dict[str, tuple[str, str]] = {}
        for line in out.splitlines():
            name, state, reason, _ = line.split("|", 3)
            found[name] = (state.rstrip("*$~#!%@^-"), reason)
        missing = sorted(set(nodes) - set(found))
        if missing:
            raise PermanentError(f"unknown Slurm nodes: {', '.join(missing)}")
        return found

    def features(self, node: str) -> list[str]:
        out = self.run("sinfo", "-h", "-N", "-n", node, "-o", "%f").strip()
        return [] if out in ("", "(null)") else sorted(set(out.split(",")))


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
