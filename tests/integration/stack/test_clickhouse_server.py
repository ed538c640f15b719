"""The local ClickHouse server answers plain ClickHouse clients as a ClickHouse server would."""

from __future__ import annotations

import gzip
import multiprocessing
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import clickhouse_connect
import pytest
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import DatabaseError
from pydantic import SecretStr

from centrality.stack.clickhouse import LocalClickHouse
from centrality.stack.settings import StackSettings
from tests.ports import free_ports

pytestmark = pytest.mark.integration


def _settings(state_dir: Path, password: str | None = None) -> StackSettings:
    return StackSettings(
        state_dir=state_dir,
        cache_dir=state_dir / "cache",
        host="127.0.0.1",
        clickhouse_port=free_ports(1)[0],
        clickhouse_password=SecretStr(password) if password else None,
        start_timeout_s=60,
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClickHouse]:
    ch = LocalClickHouse(_settings(tmp_path_factory.mktemp("ch")))
    ch.start()
    try:
        yield ch
    finally:
        ch.stop()


def _client(server: LocalClickHouse, **kwargs: Any) -> Client:
    host, port = urllib.parse.urlsplit(server.url).netloc.split(":")
    return clickhouse_connect.get_client(host=host, port=int(port), **kwargs)


def _http(
    url: str, params: dict[str, str], body: bytes | None = None
) -> tuple[int, bytes, dict[str, str]]:
    """What curl would do: GET with `?query=`, or POST the query as the body."""
    req = urllib.request.Request(f"{url}/?{urllib.parse.urlencode(params)}", data=body)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


def test_ping_and_root(server: LocalClickHouse) -> None:
    for path in ("/ping", "/"):
        with urllib.request.urlopen(server.url + path, timeout=5) as resp:
            assert resp.status == 200
            assert resp.read() == b"Ok.\n"
    assert server.running()
    server.start()  # idempotent


def test_create_insert_select(server: LocalClickHouse) -> None:
    client = _client(server)
    client.command(
        "CREATE TABLE basic (id UInt32, name String, at DateTime64(3, 'UTC')) "
        "ENGINE = MergeTree ORDER BY id"
    )
    # The server's timezone is UTC, so clickhouse-connect hands back naive UTC datetimes.
    now = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    summary = client.insert("basic", [[1, "a", now], [2, "b", now]], ["id", "name", "at"])
    assert summary.written_rows == 2
    rows = client.query("SELECT id, name, at FROM basic ORDER BY id").result_rows
    assert rows == [(1, "a", now), (2, "b", now)]


def test_server_side_parameters(server: LocalClickHouse) -> None:
    client = _client(server)
    result = client.query(
        "SELECT {s:String} AS s, {n:UInt64} + 1 AS n, {a:Array(String)} AS a",
        parameters={"s": "it's\ta\\b", "n": 41, "a": ["x'y", "z"]},
    )
    assert result.result_rows == [("it's\ta\\b", 42, ["x'y", "z"])]


def test_parameters_too_long_for_a_url_come_in_a_form(server: LocalClickHouse) -> None:
    """clickhouse-connect posts a multipart/form-data body (the query and its `param_*` as
    fields) when the parameters would not fit a URL."""
    client = _client(server)
    ids = [str(uuid.UUID(int=i)) for i in range(2000)]
    result = client.query(
        "SELECT count() FROM (SELECT arrayJoin({ids:Array(UUID)}) AS id) "
        "WHERE id IN {ids:Array(UUID)}",
        parameters={"ids": ids},
    )
    assert result.result_rows == [(2000,)]
    text = client.raw_query(
        "SELECT length({ids:Array(UUID)}), {tag:String}",
        parameters={"ids": ids, "tag": "form"},
        fmt="TabSeparated",
    )
    assert text == b"2000\tform\n"


def test_errors_carry_the_clickhouse_message(server: LocalClickHouse) -> None:
    client = _client(server)
    with pytest.raises(DatabaseError, match=r"Code: 60\. DB::Exception: .*UNKNOWN_TABLE"):
        client.query("SELECT * FROM no_such_table")
    status, body, headers = _http(server.url, {"query": "SELECT * FROM no_such_table"})
    assert status == 404
    assert headers["X-ClickHouse-Exception-Code"] == "60"
    assert body.startswith(b"Code: 60. DB::Exception:")
    status, body, headers = _http(server.url, {"query": "SELEC 1"})
    assert (status, headers["X-ClickHouse-Exception-Code"]) == (400, "62")
    assert b"SYNTAX_ERROR" in body


def test_session_keeps_state_but_not_url_settings(server: LocalClickHouse) -> None:
    client = _client(server, session_id="session-test")
    client.command("CREATE TEMPORARY TABLE tmp (x UInt8)")
    client.command("INSERT INTO tmp VALUES (7)")
    assert client.command("SELECT x FROM tmp") == 7
    client.command("SET max_threads = 1")
    assert client.command("SELECT getSetting('max_threads')") == 1

    params = {"session_id": "raw-session"}
    status, body, _ = _http(
        server.url,
        {**params, "max_block_size": "1234", "query": "SELECT getSetting('max_block_size')"},
    )
    assert (status, body) == (200, b"1234\n")
    status, body, _ = _http(server.url, {**params, "query": "SELECT getSetting('max_block_size')"})
    assert (status, body) == (200, b"65409\n")


def test_curl_style_get_and_post(server: LocalClickHouse) -> None:
    status, body, headers = _http(server.url, {"query": "SELECT 1"})
    assert (status, body) == (200, b"1\n")
    assert headers["X-ClickHouse-Format"] == "TabSeparated"
    status, body, _ = _http(server.url, {}, b"SELECT 1 + 1 AS two FORMAT JSONEachRow")
    assert (status, body) == (200, b'{"two":2}\n')
    status, body, _ = _http(server.url, {"default_format": "CSV"}, b"SELECT 'a', 2")
    assert (status, body) == (200, b'"a",2\n')
    _http(server.url, {}, b"CREATE TABLE curl_t (a UInt8, b String) ENGINE = Memory")
    status, _, _ = _http(server.url, {"query": "INSERT INTO curl_t FORMAT CSV"}, b"1,x\n2,y\n")
    assert status == 200
    status, _, _ = _http(server.url, {}, b"INSERT INTO curl_t FORMAT TSV\n3\tz\n")
    assert status == 200
    assert _http(server.url, {"query": "SELECT sum(a) FROM curl_t"})[1] == b"6\n"


def test_compressed_request_and_response(server: LocalClickHouse) -> None:
    query = b"SELECT number FROM numbers(2000) FORMAT TSV"
    req = urllib.request.Request(
        f"{server.url}/?enable_http_compression=1",
        data=gzip.compress(query),
        headers={"Content-Encoding": "gzip", "Accept-Encoding": "gzip"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["Content-Encoding"] == "gzip"
        lines = gzip.decompress(resp.read()).splitlines()
    assert lines[:2] == [b"0", b"1"] and len(lines) == 2000


def _insert_worker(url: str, worker: int) -> None:
    host, port = urllib.parse.urlsplit(url).netloc.split(":")
    client = clickhouse_connect.get_client(host=host, port=int(port))
    for batch in range(5):
        ids = list(range(worker * 100_000 + batch * 2_000, worker * 100_000 + (batch + 1) * 2_000))
        client.insert(
            "concurrent", [ids, [f"w{worker}"] * len(ids)], ["id", "w"], column_oriented=True
        )
        mine = client.command(
            "SELECT count() FROM concurrent WHERE w = {w:String}", {"w": f"w{worker}"}
        )
        assert mine == (batch + 1) * 2_000


def test_four_client_processes_at_once(server: LocalClickHouse) -> None:
    _client(server).command(
        "CREATE TABLE concurrent (id UInt64, w String) ENGINE = MergeTree ORDER BY id"
    )
    # spawn, not fork: a forked child would share the parent's pooled HTTP connections.
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_insert_worker, args=(server.url, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert _client(server).command("SELECT count() FROM concurrent") == 4 * 5 * 2_000


def test_one_million_rows(server: LocalClickHouse) -> None:
    client = _client(server)
    client.command(
        "CREATE TABLE million (id UInt64, node String, value Float64, gpu UInt8, at DateTime) "
        "ENGINE = MergeTree ORDER BY id"
    )
    now = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    batch = 250_000
    nodes = [f"node-{i % 64}" for i in range(batch)]
    values = [i * 0.5 for i in range(batch)]
    gpus = [i % 8 for i in range(batch)]
    ats = [now] * batch
    for start in range(0, 1_000_000, batch):
        ids = list(range(start, start + batch))
        summary = client.insert(
            "million",
            [ids, nodes, values, gpus, ats],
            ["id", "node", "value", "gpu", "at"],
            column_oriented=True,
        )
        assert summary.written_rows == batch
    assert client.command("SELECT count() FROM million") == 1_000_000
    assert client.command("SELECT uniqExact(id) FROM million") == 1_000_000


def test_password_is_enforced(tmp_path: Path) -> None:
    ch = LocalClickHouse(_settings(tmp_path, password="s3cret"))
    ch.start()
    try:
        with pytest.raises(DatabaseError, match="516"):
            _client(ch, password="wrong")
        with pytest.raises(DatabaseError, match="516"):
            _client(ch)
        assert _client(ch, password="s3cret").command("SELECT 1") == 1
        status, _, headers = _http(ch.url, {"query": "SELECT 1"})
        assert (status, headers["X-ClickHouse-Exception-Code"]) == (403, "516")
        ok = {"query": "SELECT 1", "user": "default", "password": "s3cret"}
        assert _http(ch.url, ok)[:2] == (200, b"1\n")
        with urllib.request.urlopen(ch.url + "/ping", timeout=5) as resp:
            assert resp.read() == b"Ok.\n"
    finally:
        ch.stop()


def test_data_persists_across_restart(server: LocalClickHouse) -> None:
    client = _client(server)
    client.command("CREATE TABLE durable (x UInt32) ENGINE = MergeTree ORDER BY x")
    client.insert("durable", [[1], [2], [3]], ["x"])
    assert server.stop()
    assert not server.running()
    server.start()
    assert _client(server).command("SELECT sum(x) FROM durable") == 6
