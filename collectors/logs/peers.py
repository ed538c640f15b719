"""The peer an NCCL error line names as the other end that failed.

NCCL names the remote end of a broken connection by host or address, followed by its port in
angle brackets: `Got completion from peer 10.1.3.201<33057> with status=9 …` (NET/IB, and its
`NET/IBP` and `with error 12` variants), `Connection closed by remote peer node2<42830>`, `Call to
recv from 10.200.84.247<58355> failed : Broken pipe` (sockets). That peer is evidence against
its node, since the line comes from the other end. What PyTorch's watchdog prints (`[Rank 12]
Watchdog caught collective operation timeout`) names the rank that *reports*, never the one
that failed, so no rank is read as a peer here.
"""

from __future__ import annotations

import re

from schemas.limits import NODE_NAME

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"(?P<peer>{_LABEL}(?:\.{_LABEL})*)<\d+>"
_PEER = re.compile(
    rf"Got completion from peer {_HOST}"
    rf"|Connection closed by remote peer {_HOST.replace('peer>', 'closed>')}"
    rf"|Call to recv from {_HOST.replace('peer>', 'recv>')} failed"
)


def peer_of(body: str) -> str | None:
    """The host or address `body` (a line after its launcher prefixes) names as the failing
    peer, as written; None when it names none."""
    m = _PEER.search(body)
    if m is None:
        return None
    peer: str = m["peer"] or m["closed"] or m["recv"]
    return peer if len(peer) <= NODE_NAME else None  # no host name is longer
