"""pypaimon (the Python Paimon implementation) reads what flightd tiered."""

import pyarrow as pa
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
