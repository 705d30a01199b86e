"""Reads a query's whole result from a flightd cluster, for integration/cluster_reads_test.go.

Usage:
  cluster_read.py adbc URI SQL READS
      The ADBC Flight SQL driver (DB-API) runs SQL READS times on URI; the
      driver fetches every endpoint where its locations say. One JSON line a
      read: {"rows": N, "checksum": C}.
  cluster_read.py flight URI SQL
      pyarrow.flight, which follows no locations by itself: GetFlightInfo of
      the statement on URI, then each endpoint's ticket fetched from every
      node its locations name, and through the connection it has. One JSON
      line: {"endpoints": [{"locations": [...], "reads": {where: {"rows": N,
      "checksum": C}}}]}.

The checksum is the sum (mod 2**64) of the CRC-32 of each row rendered as its
values' strings joined by "|" (NULL for a null), in any row order: what
JdbcRead and the Go test compute. A failure ends the script with status 1
and the error on stderr.
"""

import json
import sys
import warnings
import zlib

import pyarrow.flight as flight

REUSE = "arrow-flight-reuse-connection://?"


def checksum(table):
    rows, total = 0, 0
    for row in table.to_pylist():
        text = "|".join("NULL" if v is None else str(v) for v in row.values())
        total = (total + zlib.crc32(text.encode())) % 2**64
        rows += 1
    return {"rows": rows, "checksum": str(total)}


def read_adbc(uri, sql, reads):
    import adbc_driver_flightsql.dbapi as flight_sql

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conn = flight_sql.connect(uri)
    try:
        cur = conn.cursor()
        for _ in range(reads):
            cur.execute(sql)
            print(json.dumps(checksum(cur.fetch_arrow_table())), flush=True)
        cur.close()
    finally:
        conn.close()


def _field(number, payload):
    """A length-delimited protobuf field."""
    key, n, size = bytes([number << 3 | 2]), len(payload), bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        size.append(b | (0x80 if n else 0))
        if not n:
            break
    return key + bytes(size) + payload


def statement_query(sql):
    """Flight SQL's CommandStatementQuery in a protobuf Any, as a command."""
    cmd = _field(1, sql.encode())
    return _field(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + _field(2, cmd)


def read_flight(uri, sql):
    client = flight.connect(uri)
    info = client.get_flight_info(flight.FlightDescriptor.for_command(statement_query(sql)))
    out = []
    for ep in info.endpoints:
        locations = [loc.uri.decode() for loc in ep.locations]
        reads = {"reuse": checksum(client.do_get(ep.ticket).read_all())}
        for loc in locations:
            if loc != REUSE and loc not in reads:
                with flight.connect(loc) as other:
                    reads[loc] = checksum(other.do_get(ep.ticket).read_all())
        out.append({"locations": locations, "reads": reads})
    client.close()
    print(json.dumps({"endpoints": out}), flush=True)


def main():
    mode, uri, sql = sys.argv[1:4]
    if mode == "adbc":
        read_adbc(uri, sql, int(sys.argv[4]))
    elif mode == "flight":
        read_flight(uri, sql)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
