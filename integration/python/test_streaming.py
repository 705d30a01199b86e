"""Streaming reads of t$rt and t$changelog through pyarrow.flight and ADBC."""

import threading
import time
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from conftest import metric, wait_for
from test_pyarrow_flight import _varint


def _field(num, data):
    return bytes([num << 3 | 2]) + _varint(len(data)) + data


def statement(sql):
    """A Flight SQL CommandStatementQuery in its google.protobuf.Any."""
    cmd = _field(1, sql.encode())
    any_ = _field(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + _field(2, cmd)
    return flight.FlightDescriptor.for_command(any_)


class CookieJar(flight.ClientMiddlewareFactory):
    """Keeps the cookies a server sets and sends them back, as browsers do."""

    def __init__(self):
        self.cookies = {}

    def start_call(self, info):
        return _CookieMiddleware(self)


class _CookieMiddleware(flight.ClientMiddleware):
    def __init__(self, jar):
        self.jar = jar

    def sending_headers(self):
        if not self.jar.cookies:
            return {}
        return {"cookie": "; ".join(f"{k}={v}" for k, v in self.jar.cookies.items())}

    def received_headers(self, headers):
        for line in headers.get("set-cookie", []):
            name, _, rest = line.partition("=")
            value = rest.split(";")[0]
            if "Max-Age=0" in line or not value:
                self.jar.cookies.pop(name, None)
            else:
                self.jar.cookies[name] = value


def rows(batch):
    return [tuple(r.values()) for r in batch.to_pylist()]


def test_pyarrow_flight_streams_rows_then_changes_and_resumes(server):
    server.sql("CREATE DATABASE s")
    server.sql("CREATE TABLE s.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
    server.sql("INSERT INTO s.t VALUES (1, 'a'), (2, 'b')")
    client = flight.FlightClient(server.uri, middleware=[CookieJar()])
    for ep in client.get_flight_info(statement("SET streaming = true")).endpoints:
        client.do_get(ep.ticket).read_all()
    info = client.get_flight_info(statement('SELECT _log_offset, _bucket, id, v FROM s."t$rt"'))
    assert info.schema.names == ["_change_type", "_log_offset", "_bucket", "id", "v"]
    reader = client.do_get(info.endpoints[0].ticket)
    current = []
    while True:  # the current rows, then an empty batch
        chunk = reader.read_chunk()
        if chunk.data.num_rows == 0:
            break
        current += rows(chunk.data)
    assert sorted((k, i, v) for k, _, _, i, v in current) == [("+I", 1, "a"), ("+I", 2, "b")]
    pos = {b: o for _, o, b, _, _ in current}

    # Writes from another client arrive as changes, within moments.
    took = []
    for i, (sql, want) in enumerate([
            ("INSERT INTO s.t VALUES (3, 'c')", [("+I", 3, "c")]),
            ("INSERT INTO s.t VALUES (1, 'x')", [("-U", 1, "a"), ("+U", 1, "x")])]):
        start = time.monotonic()
        server.sql(sql)
        got = []
        while len(got) < len(want):
            got += rows(reader.read_chunk().data)
        took.append(time.monotonic() - start)
        assert [(k, i, v) for k, _, _, i, v in got] == want
        for _, o, b, _, _ in got:
            pos[b] = o
    reader.cancel()

    # Written while no reader is there; then resume from the position.
    server.sql("INSERT INTO s.t VALUES (2, 'y'), (4, 'd')")
    where = " OR ".join(f"(_bucket = {b} AND _log_offset > {o})" for b, o in pos.items())
    info = client.get_flight_info(statement(f'SELECT id, v FROM s."t$rt" WHERE {where}'))
    reader = client.do_get(info.endpoints[0].ticket)
    got = []
    while len(got) < 3:
        got += rows(reader.read_chunk().data)
    reader.cancel()
    assert sorted(got) == sorted([("-U", 2, "b"), ("+U", 2, "y"), ("+I", 4, "d")]), got

    # Other queries are refused while the session streams; SET turns it off.
    with pytest.raises(pa.ArrowInvalid, match="the session streams"):
        client.get_flight_info(statement('SELECT count(*) FROM s."t$rt"'))
    for ep in client.get_flight_info(statement("SET streaming = false")).endpoints:
        client.do_get(ep.ticket).read_all()
    info = client.get_flight_info(statement('SELECT count(*) AS n FROM s."t$rt"'))
    assert client.do_get(info.endpoints[0].ticket).read_all().to_pylist() == [{"n": 4}]
    print("change latency (s):", took)


def test_adbc_streams_changes(server):
    server.sql("CREATE DATABASE s")
    server.sql("CREATE TABLE s.ev (id BIGINT, v STRING)")  # an append table: every row +I
    server.sql("INSERT INTO s.ev VALUES (1, 'a')")
    from adbc_driver_flightsql import DatabaseOptions
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conn = flight_sql.connect(server.uri, db_kwargs={DatabaseOptions.WITH_COOKIE_MIDDLEWARE.value: "true"})
    cur = conn.cursor()
    cur.execute("SET streaming = true")
    cur.execute('SELECT id, v FROM s."ev$rt" WHERE id > 0')
    reader = cur.fetch_record_batch()
    got = []

    def write():
        server.sql("INSERT INTO s.ev VALUES (2, 'b'), (-1, 'filtered')")
        server.sql("INSERT INTO s.ev VALUES (3, 'c')")

    writer = threading.Thread(target=write)
    writer.start()
    while len(got) < 3:
        got += [tuple(r.values()) for r in reader.read_next_batch().to_pylist()]
    writer.join()
    assert got == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    cur.adbc_cancel()
    cur.close()
    conn.close()


def test_open_streams_are_counted(metrics_server):
    server = metrics_server
    server.sql("CREATE DATABASE m")
    server.sql("CREATE TABLE m.t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    client = flight.FlightClient(server.uri, middleware=[CookieJar()])
    for ep in client.get_flight_info(statement("SET streaming = true")).endpoints:
        client.do_get(ep.ticket).read_all()
    assert metric(server, "flightd_streams_open") == 0
    info = client.get_flight_info(statement('SELECT id FROM m."t$rt"'))
    reader = client.do_get(info.endpoints[0].ticket)
    assert reader.read_chunk().data.num_rows == 0  # the (empty) current rows end
    assert metric(server, "flightd_streams_open") == 1
    # A stream holds no statement slot (the SET's slot is freed as its DoGet ends).
    wait_for(lambda: metric(server, "flightd_statements_running") == 0, what="no statement running")
    assert metric(server, "flightd_streams_open") == 1
    reader.cancel()
    wait_for(lambda: metric(server, "flightd_streams_open") == 0, what="the stream closed")
