"""A silence as `silence add` and the console make it, and what they refuse before sending."""

from __future__ import annotations

import pytest

from centrality.errors import UserError
from centrality.silence_cli import new_silence, silence_expiry
from tests.support.operators import ALICE


def test_a_silence_names_its_scope_operator_and_end() -> None:
    added = new_silence(ALICE, "a", "driver upgrade", "gpu-[01-04]", None, None, "1h30m", None)
    p = added.payload
    assert added.subject == p.silence_id and p.silence_id.startswith("s-")
    assert (p.nodes, p.operator, p.duration_s, p.reason) == (
        "gpu-[01-04]",
        "alice",
        5400.0,
        "driver upgrade",
    )
    ended = silence_expiry(ALICE, added, "done")
    assert (ended.subject, ended.cluster, ended.payload.reason) == (added.subject, "a", "done")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("a", " ", None, None, None, "1h", None), "a silence needs a reason"),
        (("a", "r", None, None, None, None, None), "give --for or --until"),
        (("a", "r", "gpu-[01", None, None, "1h", None), "neither a hostlist nor a glob"),
        (("a", "r", None, None, None, "2y", None), "is not a duration"),
        (("a", "r", None, None, "Reboot", "1h", None), "unknown action 'Reboot'"),
    ],
)
def test_what_is_refused_before_sending(args: tuple[object, ...], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        new_silence(ALICE, *args)  # type: ignore[arg-type]
