"""pyarrow.flight against a real flightd: logging in, and Arrow's Flight benchmark protocol."""

import pyarrow.flight as flight
import pytest

from conftest import AUTH_PASSWORD


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def perf_command(streams, rows_per_stream, rows_per_batch):
    """A serialised perf.proto Perf (fields 2, 3 and 4 are varints)."""
    return (b"\x10" + _varint(streams) + b"\x18" + _varint(rows_per_stream)
            + b"\x20" + _varint(rows_per_batch))


def test_login_then_benchmark_streams(auth_server):
    client = flight.FlightClient(auth_server.uri)
    cmd = flight.FlightDescriptor.for_command(perf_command(2, 10000, 4096))

    with pytest.raises(flight.FlightUnauthenticatedError, match="wrong user name or password"):
        client.authenticate_basic_token(b"alice", b"wrong")
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.get_flight_info(cmd)  # no token

    header = client.authenticate_basic_token(b"alice", AUTH_PASSWORD.encode())
    opts = flight.FlightCallOptions(headers=[header])
    assert [r.body.to_pybytes() for r in client.do_action(flight.Action("ping", b""), opts)] == [b"pong"]
    info = client.get_flight_info(cmd, opts)
    assert info.total_records == 20000
    assert info.schema.names == ["a", "b", "c", "d"]
    assert len(info.endpoints) == 2
    tables = [client.do_get(ep.ticket, opts).read_all() for ep in info.endpoints]
    assert [t.num_rows for t in tables] == [10000, 10000]
    assert tables[0].column("a").to_pylist()[:3] == [0, 1, 2]
