"""pypaimon (the Python Paimon implementation) reads what flightd tiered."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon import CatalogFactory

from conftest import wait_for


def read_table(warehouse, name):
    catalog = CatalogFactory.create({"warehouse": warehouse})
    table = catalog.get_table(name)
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def rows(table, *cols):
    return sorted(zip(*(table.column(c).to_pylist() for c in cols)))


def test_pypaimon_reads_tiered_tables(server):
    server.sql("CREATE DATABASE shop")
    server.sql("CREATE TABLE shop.orders (id BIGINT, customer STRING, amount DOUBLE, "
               "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
    server.sql("CREATE TABLE shop.events (id BIGINT, kind STRING)")
    values = ", ".join(f"({i}, 'c{i % 5}', {i}.5)" for i in range(200))
    server.sql(f"INSERT INTO shop.orders VALUES {values}")
    server.sql("INSERT INTO shop.events VALUES (1, 'a'), (1, 'a'), (2, 'b')")

    def tiered():
        out = server.sql("SELECT (SELECT count(*) FROM shop.orders) + (SELECT count(*) FROM shop.events) AS n")
        return "203" in out or out
    wait_for(tiered, what="first tiering round")
    # Upserts in a second round: newer versions must win in pypaimon's merge.
    server.sql("INSERT INTO shop.orders VALUES (1, 'updated', 0.25), (2, 'again', 0.5)")

    def updated():
        out = server.sql("SELECT customer FROM shop.orders WHERE id IN (1, 2) ORDER BY id")
        return ("updated" in out and "again" in out) or out
    wait_for(updated, what="second tiering round")
    server.stop()

    orders = read_table(server.warehouse, "shop.orders")
    expected = {i: (f"c{i % 5}", i + 0.5) for i in range(200)}
    expected[1] = ("updated", 0.25)
    expected[2] = ("again", 0.5)
    assert rows(orders, "id", "customer", "amount") == sorted((k, c, a) for k, (c, a) in expected.items())
    events = read_table(server.warehouse, "shop.events")
    assert rows(events, "id", "kind") == [(1, "a"), (1, "a"), (2, "b")]
    assert isinstance(orders, pa.Table)


def test_pypaimon_reads_compacted_append_table(server):
    # Rounds of 20k rows do not fill a file: tiering compacts them once ten
    # have piled up, joining their Parquet row groups without re-encoding.
    server.sql("CREATE DATABASE logs")
    server.sql("CREATE TABLE logs.lines (id BIGINT, msg STRING, level INT)")
    per, rounds = 20000, 11
    for r in range(rounds):
        server.sql("INSERT INTO logs.lines SELECT range AS id, "
                   "CASE WHEN range % 4 = 0 THEN NULL ELSE 'm' || range END AS msg, "
                   f"(range % 3)::INT AS level FROM range({r * per}, {(r + 1) * per})")
        n = (r + 1) * per

        def tiered():
            out = server.sql("SELECT count(*) AS n FROM logs.lines")
            return str(n) in out or out
        wait_for(tiered, what=f"tiering round {r + 1}")
    server.stop()

    catalog = CatalogFactory.create({"warehouse": server.warehouse})
    table = catalog.get_table("logs.lines")
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    files = [f for s in splits for f in s.files]
    assert len(files) <= 2, [f.file_name for f in files]  # the compacted file and at most the round after it
    compacted = max(files, key=lambda f: f.row_count)
    assert compacted.row_count == 10 * per
    # joined, not re-encoded: one row group per round (re-encoding makes 128k-row groups)
    pf = pq.ParquetFile(os.path.join(server.warehouse, "logs.db", "lines", "bucket-0", compacted.file_name))
    assert pf.metadata.num_row_groups == 10
    got = rb.new_read().to_arrow(splits)
    assert got.num_rows == rounds * per
    assert rows(got, "id", "msg", "level") == [
        (i, None if i % 4 == 0 else f"m{i}", i % 3) for i in range(rounds * per)]
