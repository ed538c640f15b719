"""Whose authority the console carries, where it may listen, and its sessions."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from centrality.console.guard import Guard, loopback_host, same_origin
from centrality.console.settings import ConsoleSettings
from centrality.console.signer import signer
from schemas.operators import OperatorSettings
from schemas.runtime.settings import KafkaSettings
from tests.support.operators import ALICE, MALLORY, TRUSTED

KAFKA = KafkaSettings(bootstrap="127.0.0.1:9")


def settings_for(
    tmp_path: Path, key: object, trusted: dict[str, object] | None
) -> OperatorSettings:
    key_file = tmp_path / "operator.key"
    if key is not None:
        key.save(key_file)  # type: ignore[attr-defined]
    return OperatorSettings(
        operator_key_file=key_file,
        operators=trusted,
        operators_file=tmp_path / "none.json",
    )


def test_without_a_key_the_console_is_read_only_and_says_why(tmp_path: Path) -> None:
    found = signer(KAFKA, settings_for(tmp_path, None, None))
    assert not found.can_act
    assert found.why_read_only is not None
    assert found.why_read_only.startswith("read-only: no operator key at")


def test_a_key_the_trusted_operators_lack_is_read_only(tmp_path: Path) -> None:
    found = signer(KAFKA, settings_for(tmp_path, MALLORY, dict(TRUSTED)))
    assert not found.can_act and found.operator == "mallory"
    assert "operator mallory's key" in (found.why_read_only or "")
    assert "not among the operators trusted in CENTRALITY_OPERATORS" in (found.why_read_only or "")


def test_a_trusted_key_acts_and_one_with_nothing_to_check_against_says_so(tmp_path: Path) -> None:
    trusted = signer(KAFKA, settings_for(tmp_path, ALICE, dict(TRUSTED)))
    assert trusted.can_act and trusted.operator == "alice" and trusted.note is None
    unchecked = signer(KAFKA, settings_for(tmp_path / "b", ALICE, None))
    assert unchecked.can_act
    assert (unchecked.note or "").startswith("no operators trusted in")


def test_it_listens_beyond_loopback_only_with_tls_and_a_token(tmp_path: Path) -> None:
    assert ConsoleSettings().refusal() is None
    assert ConsoleSettings().address() == "http://127.0.0.1:8470/"
    assert ConsoleSettings(host="::1").address(9) == "http://[::1]:9/"
    assert ConsoleSettings(host="::1").refusal() is None
    bare = ConsoleSettings(host="0.0.0.0").refusal()
    assert bare == (
        "listening on 0.0.0.0 (not loopback) needs CENTRALITY_CONSOLE_TLS (CERT_FILE, KEY_FILE) "
        "and CENTRALITY_CONSOLE_TOKEN"
    )
    pem = tmp_path / "c.pem"
    tls = {"tls_cert_file": pem, "tls_key_file": pem}
    assert ConsoleSettings(host="10.0.0.5", **tls).refusal() == (
        "listening on 10.0.0.5 (not loopback) needs CENTRALITY_CONSOLE_TOKEN"
    )
    assert ConsoleSettings(host="10.0.0.5", token=SecretStr("t"), **tls).refusal() is None
    half = ConsoleSettings(tls_cert_file=pem).refusal()
    assert half == "CENTRALITY_CONSOLE_TLS_CERT_FILE and _TLS_KEY_FILE go together"


def test_sessions_and_csrf_tokens_hold_only_under_the_same_token() -> None:
    guard = Guard(SecretStr("secret"), 8470)
    session = guard.new_session()
    assert guard.session_ok(session) and guard.csrf_ok(session, guard.csrf(session))
    other = Guard(SecretStr("another"), 8470)
    assert not other.session_ok(session)
    assert not guard.session_ok(session.partition(".")[0] + ".forged")
    assert not guard.csrf_ok(session, guard.csrf(guard.new_session()))
    assert not guard.csrf_ok(None, guard.csrf(session))
    assert Guard(SecretStr("secret"), 8470).session_ok(session)  # a restart keeps sessions


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8470", True),
        ("localhost:8470", True),
        ("[::1]:8470", True),
        ("127.0.0.2", True),
        ("evil.example:8470", False),
        ("10.0.0.1:8470", False),
        (None, False),
    ],
)
def test_loopback_names(host: str | None, ok: bool) -> None:
    assert loopback_host(host) is ok


def test_same_origin_by_origin_or_fetch_metadata() -> None:
    assert same_origin({"Origin": "http://127.0.0.1:1"}, "http", "127.0.0.1:1")
    assert not same_origin({"Origin": "http://127.0.0.1:2"}, "http", "127.0.0.1:1")
    assert not same_origin({"Origin": "null"}, "http", "127.0.0.1:1")
    assert same_origin({}, "http", "127.0.0.1:1")  # curl, a script: no browser to forge it
    assert not same_origin({"Sec-Fetch-Site": "cross-site"}, "http", "127.0.0.1:1")
    assert not same_origin({"Sec-Fetch-Site": "same-site"}, "http", "127.0.0.1:1")
