"""The peer an error line names as the end that failed: NCCL's broken connections, the
launchers' reports of a crashed rank, and the nodes Ray's control plane marks dead.

NCCL names the remote end of a broken connection by host or address, followed by its port in
angle brackets: `Got completion from peer 10.1.3.201<33057> with status=9 …` (NET/IB, and its
`NET/IBP` and `with error 12` variants), `Connection closed by remote peer node2<42830>`, `Call to
recv from 10.200.84.247<58355> failed : Broken pipe` (sockets). That peer is evidence against
its node, since the line comes from the other end.

A launcher knows where each rank runs, and says it when one crashes: mpirun's `process rank 0
with PID 636815 on node fl98 exited on signal 11`, srun's `error: nid04277: task 1: Segmentation
fault`. That host is the peer (the launcher's own rank → host map, read where it speaks). So is
the node Ray's GCS marks dead: `The node with node id: 75b2… and ip: 10.4.4.107 has been marked
dead because the detector has missed too many heartbeats from it` (older Ray; newer ones say
`and address: 172.29.58.101 and node name: …`), and the process NCCL's RAS monitor declares
dead (`ncclras -m`'s `PEER_DEAD: Process 1524345 on node 172.16.64.245 managing GPU 1`). srun's
`Exited with exit code`, `Killed` and `Terminated` are not read: they follow the first failure on
every node. What PyTorch's watchdog prints (`[Rank 12] Watchdog caught collective operation
timeout`) names the rank that *reports*, never the one that failed, so it names no peer.
"""

from __future__ import annotations

import re

from schemas.limits import NODE_NAME

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"(?P<peer>{_LABEL}(?:\.{_LABEL})*)<\d+>"
_NAME = rf"{_LABEL}(?:\.{_LABEL})*"
_CRASH = r"Segmentation fault|Bus error|Aborted|Illegal instruction|Floating point exception"
_PEER = re.compile(
    rf"Got completion from peer {_HOST}"
    rf"|Connection closed by remote peer {_HOST.replace('peer>', 'closed>')}"
    rf"|Call to recv from {_HOST.replace('peer>', 'recv>')} failed"
    rf"|process rank \d+ with PID \d+ on node (?P<mpirun>{_NAME}) exited on signal"
    rf"|^srun: error: (?P<srun>{_NAME}): tasks? [\d,-]+: (?:{_CRASH})"
    rf"|The node with node id: \w+ and (?:ip|address): (?P<ray>{_NAME}) (?:and node name: \S+ )?"
    r"has been marked dead"
    rf"|^PEER_DEAD: Process \d+ on node (?P<ras>{_NAME})"
)


def peer_of(body: str) -> str | None:
    """The host or address `body` (a line after its launcher prefixes) names as the failing
    peer, as written; None when it names none."""
    m = _PEER.search(body)
    if m is None:
        return None
    found = (m[g] for g in ("peer", "closed", "recv", "mpirun", "srun", "ray", "ras"))
    peer: str = next(p for p in found if p)
    return peer if len(peer) <= NODE_NAME else None  # no host name is longer
