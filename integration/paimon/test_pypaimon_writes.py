"""Tables pypaimon wrote are read by flightd as `db.t` with exactly the rows pypaimon reads back.

pypaimon opens a filesystem catalog on the warehouse of a running flightd, creates tables of
both kinds with a mix of types and NULLs, and commits several times: inserts, updates of
existing keys, deletes, new partitions. After every commit the table is read back with
pypaimon and through flightd over Flight SQL (`SELECT * FROM db.t`, and with WHERE clauses on
partition columns, keys and values, which flightd uses to prune partitions, buckets and
files), and the rows are compared exactly: same Arrow column names and types, same values
(Decimal, date, datetime, float), as sorted lists. pypaimon's rows are also checked against
a model of what the commits did, so a delete both sides ignored would not pass.

How pypaimon 2.1.0 deletes:
- primary-key tables: the table option `rowkind.field` names a STRING column of the table
  whose value in each written row is its row kind (`+I`, `-U`, `+U`, `-D`); the key-value
  writer stores it as `_VALUE_KIND` (pypaimon/write/row_kind.py,
  write/writer/key_value_data_writer.py). Without that option every row is `+I`.
- append tables: `new_update().delete_by_predicate()` / `delete_by_row_id()` write deletion
  vectors, and only for tables with data-evolution.enabled, row-tracking.enabled and
  deletion-vectors.enabled (pypaimon/write/table_delete.py); a predicate on partition
  columns only drops the partitions' files. `update_by_predicate()` on such a table writes a
  file holding only the updated columns for the rows' row-id range (`_WRITE_COLS`).

Tables flightd did not create have no lakestream.enabled, so `t$rt` and `t$changelog` are
refused; the test checks the error says why.
"""

import datetime
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.flight as flight
import pytest
from pypaimon import CatalogFactory, Schema

DB = "pw"


# ---- Flight SQL over pyarrow.flight (the pypaimon virtualenv has no ADBC driver) ----

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _pb_field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _statement_query(sql):
    """A google.protobuf.Any holding arrow.flight.protocol.sql.CommandStatementQuery{query}."""
    return (_pb_field(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery")
            + _pb_field(2, _pb_field(1, sql.encode())))


def flight_query(server, sql):
    client = flight.FlightClient(server.uri)
    try:
        info = client.get_flight_info(flight.FlightDescriptor.for_command(_statement_query(sql)))
        parts = [client.do_get(ep.ticket).read_all() for ep in info.endpoints]
    finally:
        client.close()
    if not parts:
        return info.schema.empty_table()
    return pa.concat_tables(parts)


# ---- pypaimon ----

def catalog_of(server):
    return CatalogFactory.create({"warehouse": server.warehouse})


def pypaimon_read(catalog, name):
    table = catalog.get_table(name)
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def write_commit(catalog, name, schema, rows, overwrite=None):
    """One pypaimon batch commit of rows (dicts); overwrite: a partition spec to replace."""
    table = catalog.get_table(name)
    wb = table.new_batch_write_builder()
    if overwrite is not None:
        wb.overwrite(overwrite)
    write = wb.new_write()
    commit = wb.new_commit()
    try:
        write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def commit_messages(catalog, name, make):
    """One pypaimon batch commit of the messages make(table, update) returns."""
    table = catalog.get_table(name)
    wb = table.new_batch_write_builder()
    messages = make(table, wb.new_update())
    commit = wb.new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()


# ---- predicates: the SQL text and the same test in Python (SQL NULL never matches) ----

def _quote(identifier):
    return '"' + identifier.replace('"', '""') + '"'


def _literal(v):
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.date):
        return f"DATE '{v.isoformat()}'"
    return str(v)


def P(col, op, val):
    if op == "IN":
        return f"{col} IN ({', '.join(_literal(v) for v in val)})", \
            lambda r: r[col] is not None and r[col] in val
    if op == "BETWEEN":
        lo, hi = val
        return f"{col} BETWEEN {_literal(lo)} AND {_literal(hi)}", \
            lambda r: r[col] is not None and lo <= r[col] <= hi
    if op == "IS NULL":
        return f"{col} IS NULL", lambda r: r[col] is None
    test = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}[op]
    return f"{col} {op} {_literal(val)}", lambda r: r[col] is not None and test(r[col], val)


def AND(*preds):
    return " AND ".join(p[0] for p in preds), lambda r: all(p[1](r) for p in preds)


# ---- comparison ----

def _sorted_rows(rows, names):
    return sorted((tuple(r[n] for n in names) for r in rows), key=repr)


def _diff(label, got, want, names, sides=("flightd", "pypaimon")):
    missing = [r for r in want if r not in got]
    extra = [r for r in got if r not in want]
    lines = [f"{label}: {sides[0]} has {len(got)} rows, {sides[1]} {len(want)}; columns {names}"]
    lines += [f"  only in {sides[1]}: {r}" for r in missing[:20]]
    lines += [f"  only in {sides[0]}: {r}" for r in extra[:20]]
    if not missing and not extra:
        lines.append("  same rows, different multiplicities")
    return "\n".join(lines)


def check(server, catalog, name, step, model_rows, queries):
    """flightd's rows of name equal pypaimon's, unfiltered and under each query's WHERE;
    pypaimon's rows equal model_rows, what the commits meant to do (else a delete both sides
    ignored would pass)."""
    expected = pypaimon_read(catalog, name)
    names = expected.schema.names
    py_rows = expected.to_pylist()

    got = flight_query(server, f"SELECT * FROM {name}")
    assert [(f.name, f.type) for f in got.schema] == [(f.name, f.type) for f in expected.schema], \
        f"{name} after {step}: flightd schema {got.schema} != pypaimon schema {expected.schema}"
    g, w = _sorted_rows(got.to_pylist(), names), _sorted_rows(py_rows, names)
    assert g == w, _diff(f"{name} after {step}: SELECT *", g, w, names)

    # Projections: value columns without the key (a primary-key table still merges by key),
    # and none at all (count(*), through DuckDB).
    cols = list(dict.fromkeys(names[2:4] + names[-1:]))
    sql = f"SELECT {', '.join(_quote(c) for c in cols)} FROM {name}"
    g, w = _sorted_rows(flight_query(server, sql).to_pylist(), cols), _sorted_rows(py_rows, cols)
    assert g == w, _diff(f"{name} after {step}: {sql}", g, w, cols)
    n = flight_query(server, f"SELECT count(*) AS n FROM {name}").column("n").to_pylist()
    assert n == [len(py_rows)], f"{name} after {step}: flightd counts {n}, pypaimon reads {len(py_rows)} rows"

    for where, test in queries:
        sql = f"SELECT * FROM {name} WHERE {where}"
        g = _sorted_rows(flight_query(server, sql).to_pylist(), names)
        w = _sorted_rows([r for r in py_rows if test(r)], names)
        assert g == w, _diff(f"{name} after {step}: {sql}", g, w, names)

    g, w = _sorted_rows(py_rows, names), _sorted_rows(model_rows, names)
    assert g == w, _diff(f"{name} after {step}: pypaimon's read", g, w, names, ("pypaimon", "the model"))


# ---- a primary-key table: partitioned, 3 buckets, rowkind.field for deletes ----

KV = f"{DB}.kv"
KV_SCHEMA = pa.schema([
    pa.field("region", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    pa.field("qty", pa.int32()),
    pa.field("name", pa.string()),
    pa.field("price", pa.float64()),
    pa.field("day", pa.date32()),
    pa.field("amount", pa.decimal128(12, 2)),
    pa.field("ts", pa.timestamp("us")),
    pa.field("flag", pa.bool_()),
    pa.field("rk", pa.string()),
])


def kv_row(region, id, version, rk="+I"):
    s = id + version
    return {
        "region": region, "id": id,
        "qty": None if s % 7 == 0 else id * 10 + version,
        "name": None if s % 5 == 0 else f"{region}-{id}-v{version}" + (" ü|x" if s % 4 == 0 else ""),
        "price": None if s % 6 == 0 else id * 1.25 + version / 3,
        "day": None if s % 11 == 0 else datetime.date(2024, 1, 1) + datetime.timedelta(days=id % 10),
        "amount": None if s % 4 == 1 else Decimal(f"{id * 3 - 50}.{version * 7 % 100:02d}"),
        "ts": None if s % 9 == 0 else datetime.datetime(2024, 1, 1) + datetime.timedelta(
            seconds=id * 61 + version * 3600, microseconds=id * 7 + version),
        "flag": None if s % 3 == 0 else s % 2 == 0,
        "rk": rk,
    }


def kv_retract(region, id, rk="-D"):
    row = {f.name: None for f in KV_SCHEMA}
    row.update(region=region, id=id, rk=rk)
    return row


def kv_queries():
    qs = [P("region", "=", r) for r in ("eu", "us", "apac", "latam", "nowhere")]
    qs += [P("id", "=", k) for k in (0, 5, 9, 25, 33, 40, 55, 59, 61, 70, 999)]
    qs += [
        AND(P("region", "=", "us"), P("id", "=", 30)),
        AND(P("region", "=", "eu"), P("id", "=", 3)),
        P("id", "IN", [1, 2, 21, 33, 50, 58, 62]),
        P("id", "BETWEEN", (15, 25)),
        P("id", ">=", 55),
        P("id", "<", 3),
        AND(P("region", "IN", ["eu", "latam"]), P("id", ">", 30)),
        AND(P("region", ">=", "m"), P("id", "<=", 25)),
        P("qty", ">=", 300),
        P("qty", "<", 50),
        P("name", ">=", "us"),
        P("day", "=", datetime.date(2024, 1, 3)),
        P("day", "BETWEEN", (datetime.date(2024, 1, 2), datetime.date(2024, 1, 4))),
        P("price", ">", 40.5),
        P("amount", "<", Decimal("0")),
        ("flag = true", lambda r: r["flag"] is True),
        P("ts", "IS NULL", None),
    ]
    return qs


def create_kv(catalog):
    catalog.create_database(DB, True)
    catalog.create_table(KV, Schema.from_pyarrow_schema(
        KV_SCHEMA, partition_keys=["region"], primary_keys=["region", "id"],
        options={"bucket": "3", "rowkind.field": "rk"}), False)


def test_primary_key_table(server):
    catalog = catalog_of(server)
    create_kv(catalog)
    model = {}
    queries = kv_queries()

    def commit(step, rows):
        write_commit(catalog, KV, KV_SCHEMA, rows)
        for r in rows:  # in order: the last row of a key in a commit wins
            key = (r["region"], r["id"])
            if r["rk"] in ("+I", "+U"):
                model[key] = r
            else:
                model.pop(key, None)
        check(server, catalog, KV, step, list(model.values()), queries)

    # 1: inserts into three partitions; ids overlap across partitions.
    keys = ([("eu", i) for i in range(40)] + [("us", i) for i in range(20, 60)]
            + [("apac", i) for i in list(range(10)) + list(range(50, 60))])
    commit("commit 1 (inserts)", [kv_row(r, i, 0) for r, i in keys])

    # 2: updates of existing keys (values to NULL and back), +U rows, -U/+U pairs, a key
    #    written twice in one commit, new keys.
    rows = [kv_row(r, i, 1) for r, i in keys[::4]]
    rows += [kv_row("us", i, 1, "+U") for i in (21, 22, 23)]
    for i in (31, 32):
        rows += [kv_retract("eu", i, "-U"), kv_row("eu", i, 1, "+U")]
    rows += [kv_row("apac", 5, 1), kv_row("apac", 5, 2)]
    rows += [kv_row("eu", i, 1) for i in (60, 61, 62)]
    commit("commit 2 (updates)", rows)

    # 3: deletes (-D) across partitions and buckets, a lone -U, a key deleted then re-inserted
    #    and one updated then deleted in the same commit. (Deletes of absent keys: see
    #    test_primary_key_delete_of_absent_key.)
    rows = [kv_retract(r, i) for r, i in (("eu", 0), ("eu", 5), ("eu", 33), ("us", 25), ("us", 59),
                                          ("apac", 1), ("apac", 55), ("eu", 61))]
    rows += [kv_retract("us", 40, "-U")]
    rows += [kv_retract("us", 30), kv_row("us", 30, 3)]
    rows += [kv_row("apac", 7, 3), kv_retract("apac", 7)]
    commit("commit 3 (deletes)", rows)

    # 4: re-insert deleted keys, a new partition, more updates.
    rows = [kv_row("eu", 0, 4), kv_row("eu", 33, 4), kv_row("us", 59, 4)]
    rows += [kv_row("latam", i, 4) for i in range(0, 30, 3)]
    rows += [kv_row(r, i, 4, "+U") for r, i in keys[1::7]]
    commit("commit 4 (re-inserts, new partition)", rows)

    # 5: every key of partition apac deleted (the partition is empty, its files remain), and
    #    some of latam's.
    rows = [kv_retract(r, i) for (r, i) in list(model) if r == "apac"]
    rows += [kv_retract("latam", i) for i in (0, 9, 27)] + [kv_row("latam", 1, 5)]
    commit("commit 5 (partition apac emptied)", rows)
    assert not any(r == "apac" for r, _ in model)


def test_primary_key_delete_of_absent_key(server):
    """A -D for a key no older file holds (a delete of an absent key, or an insert and a delete
    of a new key in one commit, which pypaimon's write buffer merges into the -D alone).

    pypaimon 2.1.0 records _DELETE_ROW_COUNT = 0 for every data file it writes, also for files
    holding -U/-D rows (write/writer/data_writer.py, _create_data_file_meta; Java's
    KeyValueDataFileWriter counts them). A bucket, or the part of a bucket a key filter keeps,
    that consists of one such file is then "raw convertible" and read without merging, so the
    -D row shows up as a row: in pypaimon's own reads, in Java's (MergeTreeSplitGenerator
    decides from the same metadata) and in flightd's (lake/scan.go, rawConvertible). Here
    flightd must agree with pypaimon, unfiltered and under the same filter."""
    catalog = catalog_of(server)
    create_kv(catalog)
    keys = [("eu", i) for i in range(20)]
    write_commit(catalog, KV, KV_SCHEMA, [kv_row(r, i, 0) for r, i in keys])
    write_commit(catalog, KV, KV_SCHEMA, [
        kv_retract("eu", 999),                           # absent key, bucket with older files
        kv_row("eu", 70, 1), kv_retract("eu", 70),       # new key inserted and deleted
        kv_retract("latam", 1),                          # the only file of a new partition
        kv_retract("eu", 3)])                            # an existing key
    names = KV_SCHEMA.names

    def pypaimon_filtered(make):
        table = catalog.get_table(KV)
        rb = table.new_read_builder()
        if make is not None:
            rb = rb.with_filter(make(rb.new_predicate_builder()))
        return _sorted_rows(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), names)

    cases = [
        ("", None),
        ("WHERE id = 999", lambda pb: pb.equal("id", 999)),
        ("WHERE id = 70", lambda pb: pb.equal("id", 70)),
        ("WHERE id = 3", lambda pb: pb.equal("id", 3)),
        ("WHERE region = 'latam'", lambda pb: pb.equal("region", "latam")),
        ("WHERE id IN (3, 70, 999)", lambda pb: pb.is_in("id", [3, 70, 999])),
    ]
    for where, make in cases:
        sql = f"SELECT * FROM {KV} {where}"
        g = _sorted_rows(flight_query(server, sql).to_pylist(), names)
        w = pypaimon_filtered(make)
        assert g == w, _diff(sql, g, w, names)
    # The scenario is exercised: the lone -D of latam shows in the unfiltered read of both,
    # the key filters keep only the -D file for 70 and for 999, and the -D of an existing key
    # (3) is merged away.
    def retractions(make):
        return {(r[0], r[1]) for r in pypaimon_filtered(make) if r[-1] == "-D"}
    assert retractions(None) == {("latam", 1)}
    assert retractions(lambda pb: pb.equal("id", 70)) == {("eu", 70)}
    assert retractions(lambda pb: pb.equal("id", 999)) == {("eu", 999)}
    assert pypaimon_filtered(lambda pb: pb.equal("id", 3)) == []


# ---- append tables: one partitioned by a DATE (with a NULL partition), one with fixed buckets ----

EVENTS = f"{DB}.events"
EVENTS_SCHEMA = pa.schema([
    pa.field("day", pa.date32()),
    pa.field("id", pa.int64()),
    pa.field("n", pa.int32()),
    pa.field("small", pa.int16()),
    pa.field("msg", pa.string()),
    pa.field("score", pa.float64()),
    pa.field("ratio", pa.float32()),
    pa.field("big", pa.decimal128(30, 6)),
    pa.field("ts_ms", pa.timestamp("ms")),
    pa.field("ok", pa.bool_()),
])

LEDGER = f"{DB}.ledger"
LEDGER_SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("acct", pa.string()),
    pa.field("amt", pa.decimal128(10, 2)),
    pa.field("at", pa.timestamp("us")),
])


def event_row(rng, day, id):
    return {
        "day": day, "id": id,
        "n": rng.choice([None, rng.randint(-1000, 1000)]),
        "small": rng.choice([None, rng.randint(-30000, 30000)]),
        "msg": rng.choice([None, "", f"m{rng.randint(0, 50)}", "naïve ☃"]),
        "score": rng.choice([None, rng.uniform(-1e6, 1e6), 0.0, -0.0]),
        "ratio": rng.choice([None, 0.5, 1.25, -3.0]),
        "big": rng.choice([None, Decimal(f"{rng.randint(-10**20, 10**20)}.{rng.randint(0, 999999):06d}")]),
        "ts_ms": rng.choice([None, datetime.datetime(2023, 12, 31, 23, 59, 59, 999000)
                             + datetime.timedelta(milliseconds=rng.randint(0, 10**9))]),
        "ok": rng.choice([None, True, False]),
    }


def ledger_row(rng, id):
    return {
        "id": id,
        "acct": rng.choice([None, "a", "b", "c"]),
        "amt": rng.choice([None, Decimal(f"{rng.randint(-99999999, 99999999)}.{rng.randint(0, 99):02d}")]),
        "at": rng.choice([None, datetime.datetime(2024, 2, 29, 12) + datetime.timedelta(microseconds=rng.randint(0, 10**12))]),
    }


def test_append_tables(server):
    rng = random.Random(7)
    catalog = catalog_of(server)
    catalog.create_database(DB, False)
    catalog.create_table(EVENTS, Schema.from_pyarrow_schema(EVENTS_SCHEMA, partition_keys=["day"]), False)
    catalog.create_table(LEDGER, Schema.from_pyarrow_schema(
        LEDGER_SCHEMA, options={"bucket": "2", "bucket-key": "id"}), False)
    d = [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(5)]
    event_queries = [
        P("day", "=", d[0]), P("day", "=", d[3]), P("day", "IS NULL", None),
        P("day", "BETWEEN", (d[1], d[2])), P("day", ">", d[1]),
        P("id", "=", 7), P("id", "IN", [1, 2, 3, 40]), P("id", ">=", 45),
        AND(P("day", "=", d[1]), P("id", "<", 20)),
        P("n", ">", 500), P("small", "<", 0), P("msg", "=", "naïve ☃"), P("msg", "=", ""),
        P("ok", "IS NULL", None),
    ]
    ledger_queries = [P("id", "=", k) for k in (0, 3, 4, 11, 100)] + [
        P("id", "IN", [2, 5, 7]), P("id", "BETWEEN", (4, 8)), P("acct", "=", "b"),
        AND(P("acct", "=", "a"), P("id", ">", 5)),
    ]
    events, ledger = [], []
    for step in range(4):
        days = [d[0], d[1], None] if step < 2 else [d[1], d[2], d[3]]
        new = [event_row(rng, rng.choice(days), rng.randint(0, 50)) for _ in range(60)]
        if step == 2:
            new += events[:5]  # exact duplicates stay duplicates in an append table
        write_commit(catalog, EVENTS, EVENTS_SCHEMA, new)
        events += new
        check(server, catalog, EVENTS, f"commit {step + 1}", events, event_queries)

        new = [ledger_row(rng, rng.randint(0, 12)) for _ in range(25)]
        write_commit(catalog, LEDGER, LEDGER_SCHEMA, new)
        ledger += new
        check(server, catalog, LEDGER, f"commit {step + 1}", ledger, ledger_queries)

    # An overwrite of one partition (INSERT OVERWRITE ... PARTITION): its old files are deleted.
    new = [event_row(rng, d[1], rng.randint(0, 50)) for _ in range(10)]
    write_commit(catalog, EVENTS, EVENTS_SCHEMA, new, overwrite={"day": d[1]})
    events = [r for r in events if r["day"] != d[1]] + new
    check(server, catalog, EVENTS, "commit 5 (overwrite partition day = d[1])", events, event_queries)


# ---- an append table with data evolution: pypaimon's deletes (deletion vectors) and updates ----

DE = f"{DB}.de"
DE_SCHEMA = pa.schema([
    pa.field("day", pa.date32()),
    pa.field("id", pa.int64()),
    pa.field("v", pa.string()),
    pa.field("x", pa.float64()),
])
DE_OPTIONS = {"data-evolution.enabled": "true", "row-tracking.enabled": "true",
              "deletion-vectors.enabled": "true"}
D1, D2, D3 = datetime.date(2024, 3, 1), datetime.date(2024, 3, 2), datetime.date(2024, 3, 3)
DE_QUERIES = [P("day", "=", D1), P("day", "=", D2), P("id", "=", 3), P("id", "IN", [1, 4, 12]),
              P("id", ">", 10), P("v", "=", "c")]


def de_rows(day, ids):
    return [{"day": day, "id": i, "v": "abcdefghijklmnopqrstuvwxyz"[i % 26],
             "x": None if i % 5 == 0 else i / 4} for i in ids]


def de_setup(server):
    catalog = catalog_of(server)
    catalog.create_database(DB, False)
    catalog.create_table(DE, Schema.from_pyarrow_schema(
        DE_SCHEMA, partition_keys=["day"], options=DE_OPTIONS), False)
    rows = de_rows(D1, range(0, 6)) + de_rows(D2, range(6, 12))
    write_commit(catalog, DE, DE_SCHEMA, rows)
    check(server, catalog, DE, "commit 1 (inserts)", rows, DE_QUERIES)
    more = de_rows(D2, range(12, 16)) + de_rows(D3, range(16, 20))
    write_commit(catalog, DE, DE_SCHEMA, more)
    rows += more
    check(server, catalog, DE, "commit 2 (inserts)", rows, DE_QUERIES)
    return catalog, rows


def test_append_table_deletes(server):
    catalog, rows = de_setup(server)

    # Deletion vectors on rows of several files and partitions.
    gone = {1, 4, 7, 13, 14}
    commit_messages(catalog, DE, lambda t, u: u.delete_by_predicate(
        t.new_read_builder().new_predicate_builder().is_in("id", sorted(gone))))
    rows = [r for r in rows if r["id"] not in gone]
    check(server, catalog, DE, "commit 3 (delete_by_predicate id IN ...)", rows, DE_QUERIES)

    # Again in a file that already has a deletion vector.
    commit_messages(catalog, DE, lambda t, u: u.delete_by_predicate(
        t.new_read_builder().new_predicate_builder().equal("id", 12)))
    rows = [r for r in rows if r["id"] != 12]
    check(server, catalog, DE, "commit 4 (delete_by_predicate id = 12)", rows, DE_QUERIES)

    # A predicate on the partition column only drops the partition's files.
    commit_messages(catalog, DE, lambda t, u: u.delete_by_predicate(
        t.new_read_builder().new_predicate_builder().equal("day", D3)))
    rows = [r for r in rows if r["day"] != D3]
    check(server, catalog, DE, "commit 5 (delete_by_predicate day = D3)", rows, DE_QUERIES)


def test_append_table_update(server):
    # pypaimon's update_by_predicate on a data-evolution table writes a file
    # with only the updated columns over the row ids of an existing file.
    # flightd does not merge files by row id, so it refuses the table with
    # the reason instead of returning wrong rows, whatever the WHERE.
    catalog, rows = de_setup(server)
    commit_messages(catalog, DE, lambda t, u: u.update_by_predicate(
        t.new_read_builder().new_predicate_builder().equal("id", 3), {"v": "C"}))
    for sql in (f"SELECT * FROM {DE}", f"SELECT * FROM {DE} WHERE id = 99"):
        with pytest.raises(Exception) as err:
            flight_query(server, sql)
        msg = str(err.value)
        assert "not supported" in msg and "merge files by row id" in msg, msg


# ---- t$rt and t$changelog of tables flightd did not create ----

def test_realtime_views_refused(server):
    catalog = catalog_of(server)
    create_kv(catalog)
    catalog.create_table(LEDGER, Schema.from_pyarrow_schema(LEDGER_SCHEMA), False)
    write_commit(catalog, KV, KV_SCHEMA, [kv_row("eu", 1, 0)])
    write_commit(catalog, LEDGER, LEDGER_SCHEMA, [ledger_row(random.Random(1), 1)])
    for name in (KV, LEDGER):
        db, table = name.split(".")
        for suffix in ("$rt", "$changelog"):
            with pytest.raises(RuntimeError) as err:
                server.sql(f'SELECT * FROM {db}."{table}{suffix}"')
            msg = str(err.value)
            # e.g. "FailedPrecondition: rejected: lakestream: table is not lake-stream enabled:
            # pw.kv$rt needs lakestream.enabled=true"
            assert "FailedPrecondition" in msg and "not lake-stream enabled" in msg, msg
            assert name in msg and "needs lakestream.enabled=true" in msg, msg
        # The lake table itself is served.
        assert "(1 row)" in server.sql(f"SELECT * FROM {name}")
