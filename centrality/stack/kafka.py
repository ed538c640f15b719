"""The local Kafka broker: real Apache Kafka in KRaft mode, one node as broker and controller.

Jars come from Maven Central through `maven/pom.xml` (package data) and are cached per version;
the broker runs detached under a pid file, so `up`, `down` and `status` work from any shell.

Several such nodes form one cluster when they share a `Quorum` (the tests' three-broker cluster,
`tests/support/kafka_cluster.py`): each is broker and controller, the controllers vote, and the
cluster's own topics get three replicas and a minimum of two in sync, as on a real cluster.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog

from centrality.stack.process import ManagedProcess, ServiceError, port_open
from centrality.stack.settings import StackSettings
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings

# Must match `kafka.version` in maven/pom.xml; it names the cache dir so an upgrade refetches.
KAFKA_VERSION = "4.1.1"
DEFAULT_POM = Path(__file__).resolve().parent / "maven" / "pom.xml"

# 4.x keeps the storage formatter in the Scala core jar, under its old name.
_STORAGE_TOOL = "kafka.tools.StorageTool"
_MAIN = "kafka.Kafka"
_NODE_ID = 1
_MAVEN_TIMEOUT_S = 600.0
_FORMAT_TIMEOUT_S = 120.0
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

log = structlog.get_logger(__name__)
T = TypeVar("T")

# Broker output lands in the ManagedProcess log; WARN keeps it readable, while the server's own
# start/stop lines stay so the log still shows when the broker came up and went down. Log4j's
# shutdown hook is off: the broker's hook still logs while the JVM exits, and log4j would complain
# that it cannot register its hook then (the console appender flushes every line anyway).
_LOG4J2 = """\
status = warn
shutdownHook = disable
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = INFO
"""


@dataclass(frozen=True)
class Quorum:
    """The controllers of a cluster of local nodes, and the cluster id they all share."""

    cluster_id: str
    controllers: Mapping[int, int]
    """Node id → controller port; every node is broker and controller."""

    @classmethod
    def of(cls, controller_ports: list[int]) -> Quorum:
        """Nodes 1, 2, … on these controller ports, with a new cluster id."""
        return cls(_new_cluster_id(), dict(enumerate(controller_ports, start=1)))


class LocalKafka:
    """A KRaft node, broker and controller: data in `state_dir/kafka`, jars in `cache_dir`.
    Alone by default; one node of `quorum`'s cluster when given one."""

    def __init__(
        self,
        settings: StackSettings,
        *,
        pom: Path = DEFAULT_POM,
        node_id: int = _NODE_ID,
        quorum: Quorum | None = None,
    ) -> None:
        self.settings = settings
        self.pom = pom
        self.node_id = node_id
        self._quorum = quorum
        if quorum is not None and quorum.controllers.get(node_id) != settings.kafka_controller_port:
            raise ValueError(f"node {node_id} is not a controller of {quorum}")
        self.process = ManagedProcess("kafka", settings.state_dir / "run")

    @property
    def quorum(self) -> Quorum:
        """The cluster's, or this node alone on its controller port (settings may change it
        between starts)."""
        if self._quorum is not None:
            return self._quorum
        return Quorum("", {self.node_id: self.settings.kafka_controller_port})

    # -- paths ---------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{self.settings.host}:{self.settings.kafka_port}"

    @property
    def jar_dir(self) -> Path:
        return self.settings.cache_dir / f"kafka-{KAFKA_VERSION}"

    @property
    def libs_dir(self) -> Path:
        return self.jar_dir / "libs"

    @property
    def home(self) -> Path:
        return self.settings.state_dir / "kafka"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    @property
    def log4j_file(self) -> Path:
        return self.home / "log4j2.properties"

    # -- lifecycle -----------------------------------------------------------------------------

    def running(self) -> bool:
        return self.process.pid() is not None

    def pid(self) -> int | None:
        return self.process.pid()

    def start(self) -> None:
        """Fetch jars, format storage once, launch the broker and wait until it serves metadata.

        A no-op when the broker already runs (it is then only checked for readiness).
        """
        started = time.monotonic()
        self.launch()
        self.wait_ready(started)

    def launch(self) -> None:
        """`start` without the wait: the nodes of a cluster are all launched before any of them
        can be ready (a controller needs a majority of the quorum)."""
        if self.running():
            return
        self.ensure_jars()
        self.write_config()
        self._format_once()
        pid = self.process.start(self._java_argv(_MAIN, str(self.config_file)))
        log.info(
            "kafka.starting", pid=pid, bootstrap=self.bootstrap, log=str(self.process.log_file)
        )

    def wait_ready(self, since: float | None = None) -> None:
        started = time.monotonic() if since is None else since
        self.process.wait_until(self._ready, self.settings.start_timeout_s)
        log.info(
            "kafka.ready", bootstrap=self.bootstrap, wait_s=round(time.monotonic() - started, 2)
        )

    def stop(self, timeout_s: float = 60.0) -> bool:
        """SIGTERM: the broker runs its controlled shutdown and flushes; True if one was running."""
        stopped = self.process.stop(timeout_s)
        if stopped:
            log.info("kafka.stopped", bootstrap=self.bootstrap)
        return stopped

    # -- jars ----------------------------------------------------------------------------------

    def ensure_jars(self) -> Path:
        """Copy the broker's runtime jars from Maven into the cache once; returns the libs dir."""
        marker = self.jar_dir / ".complete"
        wanted = hashlib.sha256(self.pom.read_bytes()).hexdigest()
        if _read(marker) == wanted and self.libs_dir.is_dir():
            return self.libs_dir
        self.jar_dir.mkdir(parents=True, exist_ok=True)
        # Two `up`s at once (or parallel test sessions) must not interleave the copy.
        with _flock(self.jar_dir / ".lock"):
            if _read(marker) == wanted and self.libs_dir.is_dir():
                return self.libs_dir
            self._fetch_jars()
            marker.write_text(wanted)
        return self.libs_dir

    def _fetch_jars(self) -> None:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ServiceError("Maven (`mvn`) is not on PATH; it fetches the Kafka broker jars")
        staging = self.jar_dir / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        maven_log = self.jar_dir / "maven.log"
        started = time.monotonic()
        log.info("kafka.fetching_jars", version=KAFKA_VERSION, into=str(self.libs_dir))
        argv = [
            mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(self.pom),
            "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        with maven_log.open("wb") as out:
            try:
                result = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self.jar_dir,
                    timeout=_MAVEN_TIMEOUT_S,
                    check=False,
                )
                failed = result.returncode != 0
            except subprocess.TimeoutExpired:
                failed = True
        if failed or not any(staging.glob(f"kafka_2.13-{KAFKA_VERSION}.jar")):
            raise ServiceError(
                f"Maven could not fetch Kafka jars; log {maven_log}:\n{_tail(maven_log)}"
            )
        # Swap in whole, so a half-finished copy is never mistaken for a usable classpath.
        shutil.rmtree(self.libs_dir, ignore_errors=True)
        staging.rename(self.libs_dir)
        log.info("kafka.jars_fetched", seconds=round(time.monotonic() - started, 1))

    # -- config and storage --------------------------------------------------------------------

    def cluster_id(self) -> str:
        """Stable per state dir, so a re-format after a lost data dir keeps the same identity;
        a cluster's nodes share the quorum's."""
        if self.quorum.cluster_id:
            return self.quorum.cluster_id
        path = self.home / "cluster.id"
        existing = _read(path)
        if existing and not existing.startswith("-"):
            return existing
        self.home.mkdir(parents=True, exist_ok=True)
        new = _new_cluster_id()
        path.write_text(new)
        return new

    def write_config(self) -> None:
        """Rewritten on every start because ports may have changed since the last one."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # It may hold the keystore and SASL users' passwords: readable by its owner only.
        fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(_server_properties(self.settings, self.data_dir, self.node_id, self.quorum))
        self.log4j_file.write_text(_LOG4J2)

    def _format_once(self) -> None:
        if (self.data_dir / "meta.properties").exists():
            return
        argv = self._java_argv(
            _STORAGE_TOOL, "format", "-t", self.cluster_id(), "-c", str(self.config_file),
            *_scram_users(self.settings),
        )  # fmt: skip
        format_log = self.process.run_dir / "kafka-format.log"
        self.process.run_dir.mkdir(parents=True, exist_ok=True)
        with format_log.open("wb") as out:
            result = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                timeout=_FORMAT_TIMEOUT_S,
                check=False,
            )
        if result.returncode != 0:
            raise ServiceError(
                f"formatting Kafka storage failed; log {format_log}:\n{_tail(format_log)}"
            )
        log.info("kafka.formatted", data_dir=str(self.data_dir))

    def _java_argv(self, main: str, *args: str) -> list[str]:
        java = _java()
        heap = self.settings.kafka_heap_mb
        run_dir = self.process.run_dir
        return [
            java,
            f"-Xmx{heap}m",
            f"-Xms{heap}m",
            # A small heap on a small box: the serial collector has the least footprint and threads.
            "-XX:+UseSerialGC",
            # C1 only: on two cores C2's compiler threads compete with start-up itself. Measured
            # ~0.6 s faster warm start and ~50 MB less RSS; a local broker is never the bottleneck.
            "-XX:TieredStopAtLevel=1",
            "-XX:+ExitOnOutOfMemoryError",
            # No hsperfdata in /tmp and no crash files in whatever cwd `up` ran from.
            "-XX:-UsePerfData",
            f"-XX:ErrorFile={run_dir / 'kafka-hs_err_%p.log'}",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.log4j_file}",
            # Kafka's own defaults would point at ./logs; keep any stray file in the state dir.
            f"-Dkafka.logs.dir={run_dir}",
            "-cp",
            str(self.libs_dir / "*"),
            main,
            *args,
        ]

    def _ready(self) -> bool:
        if not port_open(self.settings.host, self.settings.kafka_port):
            return False
        plaintext = KafkaSettings(bootstrap=self.bootstrap, security_protocol="PLAINTEXT")
        return _run_sync(lambda: _probe(plaintext, timeout_s=5.0))


async def wait_ready(kafka: KafkaSettings, timeout_s: float) -> None:
    """Wait until the broker(s) `kafka` names answer a metadata request and list a live broker.

    An open port is not enough: a KRaft broker accepts connections before it is unfenced.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if await _probe(kafka, timeout_s=max(0.5, min(5.0, remaining))):
            return
        if time.monotonic() >= deadline:
            raise ServiceError(f"Kafka at {kafka.bootstrap} not ready after {timeout_s:.0f}s")
        await asyncio.sleep(0.25)


async def _probe(kafka: KafkaSettings, timeout_s: float) -> bool:
    admin = kafka_clients.admin(kafka, request_timeout_ms=max(500, int(timeout_s * 1000)))
    try:
        async with asyncio.timeout(timeout_s):
            await admin.start()
            cluster: dict[str, Any] = await admin.describe_cluster()
        return bool(cluster.get("brokers"))
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


def _server_properties(s: StackSettings, data_dir: Path, node_id: int, quorum: Quorum) -> str:
    host = s.host
    clients: dict[str, int] = {"PLAINTEXT": s.kafka_port}
    clients |= {str(name): port for name, port in s.kafka_secure_listeners.items()}
    advertised = ",".join(f"{name}://{host}:{port}" for name, port in clients.items())
    # The cluster's own topics (offsets, transactions) and topics created without a layout: as
    # many replicas as there are nodes, up to 3, and 2 in sync once there are 3.
    replicas = min(3, len(quorum.controllers))
    in_sync = 2 if replicas >= 3 else 1
    props: dict[str, str | int] = {
        "process.roles": "broker,controller",
        "node.id": node_id,
        # A static voter set, not `controller.quorum.bootstrap.servers` + `format --standalone`:
        # the dynamic quorum writes the controller's endpoint into the metadata log, which would
        # then disagree with this file when the controller port changes between starts.
        "controller.quorum.voters": ",".join(
            f"{voter}@{host}:{port}" for voter, port in sorted(quorum.controllers.items())
        ),
        "listeners": f"{advertised},CONTROLLER://{host}:{s.kafka_controller_port}",
        "advertised.listeners": advertised,
        "listener.security.protocol.map": ",".join(
            [*(f"{name}:{name}" for name in clients), "CONTROLLER:PLAINTEXT"]
        ),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(data_dir),
        # The topic catalog creates every topic with its own partitions and retention; a typo'd
        # topic name must fail loudly instead of silently creating a one-partition topic.
        "auto.create.topics.enable": "false",
        "num.partitions": 1,
        "default.replication.factor": replicas,
        "min.insync.replicas": in_sync,
        "offsets.topic.replication.factor": replicas,
        # 50 partitions (the default) cost seconds of start-up on the first consumer group.
        "offsets.topic.num.partitions": 8,
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": in_sync,
        "transaction.state.log.num.partitions": 4,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": in_sync,
        "share.coordinator.state.topic.num.partitions": 4,
        # After a kill -9 the restarted broker cannot register until its previous session expires
        # (9 s by default); loopback heartbeats are cheap, so a shorter session costs nothing.
        "broker.heartbeat.interval.ms": 1000,
        "broker.session.timeout.ms": 4000,
        # One member joins at a time here; the 3 s default only delays every test and `up`.
        "group.initial.rebalance.delay.ms": 0,
        "log.retention.hours": 168,
        "log.segment.bytes": 128 * 1024 * 1024,
        "log.retention.check.interval.ms": 300_000,
        # Sized for a laptop-class machine rather than a broker host.
        "num.network.threads": 2,
        "num.io.threads": 4,
        "num.recovery.threads.per.data.dir": 2,
        "background.threads": 4,
        **_security_properties(s),
    }
    lines = ["# Written by centrality on every start; edits are overwritten."]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def _security_properties(s: StackSettings) -> dict[str, str | int]:
    """TLS and SASL of the extra client listeners; the PLAINTEXT listener, the controller and
    the broker's own traffic stay as they are (one loopback broker talks only to itself)."""
    props: dict[str, str | int] = {}
    listeners = set(s.kafka_secure_listeners)
    if listeners & {"SSL", "SASL_SSL"}:
        assert s.kafka_tls_keystore is not None and s.kafka_tls_store_password is not None
        password = s.kafka_tls_store_password.get_secret_value()
        props |= {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(s.kafka_tls_keystore),
            "ssl.keystore.password": password,
            "ssl.key.password": password,
        }
        if s.kafka_tls_truststore is not None:
            props |= {
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": str(s.kafka_tls_truststore),
                "ssl.truststore.password": password,
                # Clients of the SSL listener prove who they are with a certificate instead of a
                # password; SASL_SSL clients use their SASL user.
                "listener.name.ssl.ssl.client.auth": "required",
            }
    sasl = sorted(listeners & {"SASL_PLAINTEXT", "SASL_SSL"})
    if sasl:
        props["sasl.enabled.mechanisms"] = ",".join(_SASL_MECHANISMS)
        plain_users = " ".join(
            f'user_{name}="{password.get_secret_value()}"'
            for name, password in s.kafka_sasl_users.items()
        )
        for name in sasl:
            prefix = f"listener.name.{name.lower()}"
            props[f"{prefix}.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
            )
            for scram in _SASL_MECHANISMS[1:]:
                props[f"{prefix}.{scram.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
    return props


def _scram_users(s: StackSettings) -> list[str]:
    """`format` arguments that store the SASL users' SCRAM credentials in the metadata log.
    KRaft takes them only when the storage is formatted, so users added later need a new state
    dir (or `kafka-configs --alter --add-config SCRAM-...` against the running broker)."""
    argv: list[str] = []
    for name, password in s.kafka_sasl_users.items():
        for scram in _SASL_MECHANISMS[1:]:
            argv += ["--add-scram", f"{scram}=[name={name},password={password.get_secret_value()}]"]
    return argv


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ServiceError("Java 17+ (`java`) is not on PATH; the local Kafka broker needs it")
    return java


def _run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even when called inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def _new_cluster_id() -> str:
    """Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding. Like Kafka's
    own `Uuid.randomUuid`, never one that starts with "-": the storage tool would read
    `-t -xyz…` as two options and refuse to format (one start in 64 failed so)."""
    while True:
        new = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not new.startswith("-"):
            return new


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
