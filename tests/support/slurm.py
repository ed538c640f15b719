"""A real local Slurm cluster (Debian's slurm-wlm) for integration tests.

One `slurmctld` and one `slurmd -N nodeK` per node run on this host, all on loopback with their
own ports, under a private state directory; `auth/none` (no munge daemon to manage). Every node
has fake GPUs (`gres/gpu`, character devices made by mknod), so `--gres=gpu:N` works, and hangs
off a leaf switch of a `topology/tree` topology (`leaf_switches`: two nodes a switch). The
daemons are started in the foreground by the fixture, and `stop()` cancels every job and ends only
those daemons (and the job steps they spawned). Nothing is installed here: `.ci/run` installs
`slurmctld slurmd slurm-client munge`.

Clients reach the cluster through `SLURM_CONF`: use `cluster.env()` for subprocesses, or
`cluster.adapter_env()` for the `CENTRALITY_SLURM_*` settings of the Slurm adapter.

Reboots are the test's: the `RebootProgram` only writes down which node slurmd was asked to
reboot (`reboots()`); the node stays down (`REBOOT_ISSUED`) until the test `boot`s it, which
restarts its slurmd with `-b` (slurmd's "report node rebooted now"), so slurmctld sees the
node back from a reboot, or never does.

    from tests.support.slurm import SlurmCluster, slurm_cluster_fixture  # noqa: F401

    def test_x(slurm_cluster: SlurmCluster) -> None:
        job = slurm_cluster.sbatch("--wrap", "hostname")
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from centrality.stack.process import ManagedProcess, ServiceError, port_open
from schemas.hostnames import collect
from tests.ports import free_port

_BINARIES = ("slurmctld", "slurmd", "scontrol", "sbatch")
# The prologs the project ships: requeued jobs see CENTRALITY_RESUME_FROM through them.
SLURM_SCRIPTS = Path(__file__).resolve().parents[2] / "infra" / "slurm"
PROLOGS = {"Prolog": "prolog.sh", "TaskProlog": "task-prolog.sh", "Epilog": "epilog.sh"}


@dataclass
class SlurmCluster:
    """`nodes` nodes named node1..nodeN with `gpus_per_node` fake GPUs each, in `run_dir`."""

    run_dir: Path
    name: str = "ctest"
    nodes: int = 3
    gpus_per_node: int = 2
    cpus_per_node: int = 2
    start_timeout_s: float = 5.0
    extra_conf: str = ""  # more slurm.conf lines (e.g. accounting, for the capture tool)
    # topology/tree with a topology.conf: `nodes_per_switch` nodes in a row per leaf switch
    # (s1: node[1-2], s2: node3), the leaves under one top switch. False: no topology plugin.
    topology: bool = True
    nodes_per_switch: int = 2
    _ctld_port: int = field(default_factory=free_port)
    _node_ports: list[int] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.run_dir / "slurm.conf"

    @property
    def node_names(self) -> list[str]:
        return [f"node{i}" for i in range(1, self.nodes + 1)]

    @property
    def leaf_switches(self) -> dict[str, str]:
        """node → the leaf switch topology.conf puts it under (empty without a topology)."""
        if not self.topology:
            return {}
        return {n: f"s{i // self.nodes_per_switch + 1}" for i, n in enumerate(self.node_names)}

    @property
    def output_dir(self) -> Path:
        """Where tests and the adapter put job output (the 'shared filesystem')."""
        return self.run_dir / "out"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def adapter_env(self) -> dict[str, str]:
        return {
            "CENTRALITY_SLURM_CLUSTER": self.name,
            "CENTRALITY_SLURM_CONF": str(self.conf),
            "CENTRALITY_SLURM_OUTPUT_DIR": str(self.output_dir),
        }

    @property
    def reboot_log(self) -> Path:
        return self.run_dir / "log" / "reboots.log"

    def reboots(self) -> list[str]:
        """The nodes whose slurmd ran the RebootProgram, in order."""
        if not self.reboot_log.exists():
            return []
        return [line.split()[1] for line in self.reboot_log.read_text().splitlines() if line]

    def rebooting(self) -> list[str]:
        """Nodes Slurm rebooted and waits for (`REBOOT_ISSUED`)."""
        states = self._run("sinfo", "-h", "-N", "-o", "%N %T").splitlines()
        return sorted({n for n, state in (s.split() for s in states) if state.endswith("^")})

    def boot(self, node: str) -> None:
        """The node comes back from its reboot: its slurmd, restarted as after a boot."""
        daemon = self._slurmd(node)
        daemon.stop(timeout_s=10)
        daemon.start(["slurmd", "-D", "-b", "-N", node, "-f", str(self.conf)], env=self.env())
        port = self._node_ports[self.node_names.index(node)]
        daemon.wait_until(lambda: port_open("127.0.0.1", port), 5.0)

    def start(self) -> None:
        missing = [d for d in _BINARIES if shutil.which(d) is None]
        if missing:
            raise ServiceError(
                f"Slurm is not installed ({', '.join(missing)} missing): run .ci/run or "
                "apt-get install slurmctld slurmd slurm-client munge"
            )
        self._node_ports = [free_port() for _ in self.node_names]
        for sub in ("state", "spool", "log", "dev", "out"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        self._make_gpus()
        self._wrap_prologs()
        self._reboot_program()
        self.conf.write_text(self._slurm_conf())
        (self.run_dir / "gres.conf").write_text(self._gres_conf())
        if self.topology:
            (self.run_dir / "topology.conf").write_text(self._topology_conf())
        self._ctld().start(["slurmctld", "-D", "-i", "-f", str(self.conf)], env=self.env())
        self._ctld().wait_until(lambda: port_open("127.0.0.1", self._ctld_port), 5.0)
        for node, port in zip(self.node_names, self._node_ports, strict=True):
            daemon = self._slurmd(node)
            daemon.start(["slurmd", "-D", "-N", node, "-f", str(self.conf)], env=self.env())
            daemon.wait_until(lambda port=port: port_open("127.0.0.1", port), 5.0)
        self._ctld().wait_until(self._all_idle, self.start_timeout_s)

    def tidy(self, timeout_s: float = 30.0) -> None:
        """The cluster as the session found it: no job, no reservation, every node idle. An action
        worker stopped mid-benchmark leaves its job and its maintenance reservation behind."""
        self._cancel_all()
        for line in self.scontrol("show", "reservation", "-o").splitlines():
            name = line.split()[0].removeprefix("ReservationName=") if line.strip() else ""
            if name and "No reservations" not in line:
                self.scontrol("delete", f"reservation={name}")
        for node in self.node_names:
            if "DRAIN" in self.node_field(node, "%T").upper():
                self.scontrol("update", f"nodename={node}", "state=resume")
        self._ctld().wait_until(self._all_idle, timeout_s)

    def stop(self) -> None:
        if self._ctld().pid() is not None:
            self._cancel_all()
        for node in self.node_names:
            self._slurmd(node).stop(timeout_s=10)
        self._ctld().stop(timeout_s=10)

    def _cancel_all(self) -> None:
        subprocess.run(
            # No --clusters: without slurmdbd it fails and cancels nothing.
            ["scancel", f"--user={getpass.getuser()}"],
            env=self.env(),
            capture_output=True,
            timeout=10,
            check=False,
        )
        deadline = time.monotonic() + 10
        while self.squeue("%i") and time.monotonic() < deadline:
            time.sleep(0.2)

    def scontrol(self, *args: str) -> str:
        return self._run("scontrol", *args)

    def sbatch(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Submit; returns the numeric job id. Output goes to `output_dir` unless `args` say
        where (Slurm's default is the submitting directory: the checkout)."""
        told = any(a.startswith(("--output", "-o")) for a in args)
        where = () if told else (f"--output={self.output_dir}/slurm-%j.out",)
        return self._run("sbatch", "--parsable", *where, *args, env=env).strip().split(";")[0]

    def squeue(self, fmt: str, job_id: str | None = None) -> list[str]:
        args = ["-h", "-o", fmt] + (["-j", job_id] if job_id else [])
        return self._run("squeue", *args).splitlines()

    def job_state(self, job_id: str) -> str:
        """The job's state from `scontrol show job` (still known after it ends)."""
        return self.job_field(job_id, "JobState")

    def job_field(self, job_id: str, key: str) -> str:
        for token in self.scontrol("show", "job", job_id).split():
            name, _, value = token.partition("=")
            if name == key:
                return value
        raise KeyError(key)

    def node_field(self, node: str, fmt: str) -> str:
        """One `sinfo -N -n node -o fmt` value (e.g. %T state, %E reason, %f features)."""
        return self._run("sinfo", "-h", "-N", "-n", node, "-o", fmt).strip()

    def wait_job(self, job_id: str, states: set[str], timeout_s: float = 30.0) -> str:
        deadline = time.monotonic() + timeout_s
        state = ""
        while time.monotonic() < deadline:
            state = self.job_state(job_id)
            if state in states:
                return state
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} stayed {state}, wanted one of {sorted(states)}")

    def _run(self, *argv: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            list(argv),
            env={**self.env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise ServiceError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")
        return done.stdout

    def _all_idle(self) -> bool:
        done = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T"],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
        return all(states.get(n) == "idle" for n in self.node_names)

    def _ctld(self) -> ManagedProcess:
        return ManagedProcess("slurmctld", self.run_dir / "log")

    def _slurmd(self, node: str) -> ManagedProcess:
        return ManagedProcess(f"slurmd-{node}", self.run_dir / "log")

    def _make_gpus(self) -> None:
        for i in range(self.gpus_per_node):
            dev = self.run_dir / "dev" / f"nvidia{i}"
            if not dev.exists():
                # gres/gpu rejects plain files; a char device with NVIDIA's major looks real.
                os.mknod(dev, 0o600 | 0o020000, os.makedev(195, i))

    def _wrap_prologs(self) -> None:
        """The shipped scripts, each node keeping its per-job files in its own directory (on a
        real cluster every node is its own host and the default /run/centrality-slurm serves)."""
        (self.run_dir / "prolog").mkdir(exist_ok=True)
        for script in PROLOGS.values():
            wrapper = self.run_dir / "prolog" / script
            spool = f"{self.run_dir}/prolog/$SLURMD_NODENAME"
            wrapper.write_text(
                f'#!/bin/sh\nCENTRALITY_SLURM_PROLOG_DIR="{spool}" exec /bin/sh '
                f"{SLURM_SCRIPTS / script}\n"
            )
            wrapper.chmod(0o755)

    def _reboot_program(self) -> None:
        """Writes down the node (slurmd's `-N`, from the grandparent of the script: slurmd runs
        it through `sh -c`) and returns: the reboot itself is `boot`, the test's call."""
        program = self.run_dir / "prolog" / "reboot.sh"
        program.write_text(
            "#!/bin/sh\n"
            "slurmd=$(cut -d' ' -f4 /proc/$PPID/stat)\n"
            "node=$(tr '\\0' '\\n' < /proc/$slurmd/cmdline | sed -n '/^-N$/{n;p}')\n"
            f'echo "$(date +%s) ${{node:-unknown}}" >> {self.reboot_log}\n'
        )
        program.chmod(0o755)

    def _slurm_conf(self) -> str:
        d = self.run_dir
        host = socket.gethostname().split(".")[0]
        nodes = "\n".join(
            f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={host} Port={p} "
            f"CPUs={self.cpus_per_node} Gres=gpu:{self.gpus_per_node} State=UNKNOWN"
            for n, p in zip(self.node_names, self._node_ports, strict=True)
        )
        prologs = "\n".join(f"{key}={d / 'prolog' / script}" for key, script in PROLOGS.items())
        return f"""\
ClusterName={self.name}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={self._ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/log/slurmctld.pidfile
SlurmdPidFile={d}/log/slurmd-%n.pidfile
SlurmctldLogFile={d}/log/slurmctld.daemon.log
SlurmdLogFile={d}/log/slurmd-%n.daemon.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
JobRequeue=1
ReturnToService=2
SlurmdTimeout=10
InactiveLimit=0
KillWait=2
MinJobAge=600
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
{prologs}
RebootProgram={d / "prolog" / "reboot.sh"}
ResumeTimeout=120
{"TopologyPlugin=topology/tree" if self.topology else ""}
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
{self.extra_conf}"""

    def _topology_conf(self) -> str:
        """slurm.conf's directory holds it (topology.conf(5)); a leaf's nodes as a hostlist."""
        leaves: dict[str, list[str]] = {}
        for node, switch in self.leaf_switches.items():
            leaves.setdefault(switch, []).append(node)
        lines = [f"SwitchName={s} Nodes={collect(nodes)}" for s, nodes in leaves.items()]
        return "\n".join([*lines, f"SwitchName=top Switches={collect(list(leaves))}", ""])

    def _gres_conf(self) -> str:
        last = self.gpus_per_node - 1
        return f"AutoDetect=off\nName=gpu File={self.run_dir}/dev/nvidia[0-{last}]\n"


@pytest.fixture(scope="session", name="slurm_cluster")
def slurm_cluster_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One 3-node cluster for the session; tests must not leave nodes drained."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
