"""ADBC (DB-API) + pandas + Polars against a real flightd."""

import datetime
import warnings

import adbc_driver_flightsql.dbapi as flight_sql
import pandas as pd
import polars as pl
import pyarrow as pa

from conftest import metric, wait_for


def connect(server):
    # The default DB-API connection asks for manual commit; flightd has no
    # transactions, which the driver reports with a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return flight_sql.connect(server.uri)


def test_adbc_pandas_polars_read_rt(server):
    conn = connect(server)
    cur = conn.cursor()
    cur.execute("CREATE DATABASE shop")
    cur.execute("CREATE TABLE shop.orders (id BIGINT, customer STRING, amount DOUBLE, "
                "ts TIMESTAMP(6), PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
    n = 5000
    base = datetime.datetime(2024, 1, 1)
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "customer": pa.array([f"c{i % 17}" for i in range(n)]),
        "amount": pa.array([i / 8 for i in range(n)], pa.float64()),
        "ts": pa.array([base + datetime.timedelta(seconds=i) for i in range(n)], pa.timestamp("us")),
    })
    written = cur.adbc_ingest("orders", table, mode="append", db_schema_name="shop")
    assert written == n
    # An upsert through SQL: id 7 changes, the row count does not.
    cur.execute("INSERT INTO shop.orders VALUES (7, 'seven', 0.5, NULL)")

    cur.execute('SELECT * FROM shop."orders$rt" ORDER BY id')
    arrow_rt = cur.fetch_arrow_table()
    assert arrow_rt.num_rows == n
    assert arrow_rt.column_names == ["id", "customer", "amount", "ts"]

    cur.execute('SELECT * FROM shop."orders$rt" ORDER BY id')
    df = cur.fetch_df()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == n
    assert df.loc[df["id"] == 7, "customer"].item() == "seven"
    assert pd.isna(df.loc[df["id"] == 7, "ts"].item())
    assert df.loc[df["id"] == 8, "ts"].item() == pd.Timestamp("2024-01-01 00:00:08")

    pl_df = pl.read_database('SELECT * FROM shop."orders$rt" ORDER BY id', connection=conn)
    assert pl_df.height == n
    assert pl_df.filter(pl.col("id") == 7)["customer"].to_list() == ["seven"]

    # The three clients agree with each other.
    expected = table.to_pandas()
    expected.loc[expected["id"] == 7, ["customer", "amount", "ts"]] = ["seven", 0.5, pd.NaT]
    pd.testing.assert_frame_equal(df.reset_index(drop=True), expected, check_dtype=False)
    assert pl_df.to_pandas().equals(df)
    assert pl.from_arrow(arrow_rt).equals(pl_df)

    # Aggregates over t$rt, then t catches up after tiering.
    cur.execute('SELECT customer, count(*) AS n FROM shop."orders$rt" GROUP BY customer ORDER BY customer')
    agg = cur.fetch_df()
    assert agg["n"].sum() == n

    def lake_caught_up():
        cur.execute("SELECT count(*), count(*) FILTER (WHERE customer = 'seven') FROM shop.orders")
        row = cur.fetchone()
        return row == (n, 1) or row
    wait_for(lake_caught_up, what="tiering into the lake")
    cur.execute("SELECT * FROM shop.orders ORDER BY id")
    assert cur.fetch_arrow_table().equals(arrow_rt)
    cur.close()
    conn.close()


def test_errors_keep_the_server_serving(server):
    conn = connect(server)
    cur = conn.cursor()
    for bad, words in [
        ("SELECT * FROM nope.t", "does not exist"),
        ('SELECT * FROM "missing$rt"', "does not exist"),
        ("SELEKT 1", "syntax error"),
    ]:
        try:
            cur.execute(bad)
            cur.fetchall()
        except Exception as e:  # the driver raises its own DB-API error types
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"{bad!r} did not fail")
    cur.execute("SELECT 42")
    assert cur.fetchone() == (42,)
    conn.close()


def test_dbapi_parameters(server):
    """cursor.execute(sql, params) and executemany, as DB-API code writes them."""
    import decimal

    conn = connect(server)
    cur = conn.cursor()
    cur.execute("CREATE DATABASE params")
    cur.execute("CREATE TABLE params.t (id BIGINT, name STRING, price DECIMAL(10,2), "
                "ts TIMESTAMP(6), day DATE, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)
    rows = [(i, f"it's {i}", decimal.Decimal(f"{i}.25"), ts, datetime.date(2024, 2, i)) for i in range(1, 21)]
    # executemany of an INSERT ... VALUES row: one statement, every row.
    cur.executemany("INSERT INTO params.t VALUES (?, ?, ?, ?, ?)", rows)
    cur.execute("INSERT INTO params.t (id, name) VALUES ($1, $2)", (99, "?"))

    cur.execute('SELECT * FROM params."t$rt" WHERE id = ?', (7,))
    assert cur.fetchall() == [rows[6]]
    cur.execute('SELECT name FROM params."t$rt" WHERE id = ?', (99,))
    assert cur.fetchall() == [("?",)]
    cur.execute('SELECT count(*) FROM params."t$rt" WHERE name LIKE ? AND ts = ? AND day >= ? AND price > ?',
                ("it's%", ts, datetime.date(2024, 2, 10), decimal.Decimal("12")))
    assert cur.fetchall() == [(9,)]  # ids 12 to 20
    cur.execute('SELECT ? AS n, ? AS f, ? AS s, ? AS b', (None, 1.5, "x'y", b"\x00\xff"))
    assert cur.fetchall() == [(None, 1.5, "x'y", b"\x00\xff")]

    # Wrong parameter counts are errors that say so, and the connection keeps working.
    try:
        cur.execute('SELECT ? + ?', (1,))
        raise AssertionError("no error for a missing parameter")
    except flight_sql.Error as e:
        assert "takes 2 parameter(s) but 1" in str(e)
    cur.execute("SELECT count(*) FROM params.\"t$rt\"")
    assert cur.fetchall() == [(21,)]

    # Polars passes parameters through to the cursor.
    df = pl.read_database('SELECT id FROM params."t$rt" WHERE id < ? ORDER BY id', connection=conn,
                          execute_options={"parameters": (4,)})
    assert df["id"].to_list() == [1, 2, 3]


def test_dbapi_insert_runs_once_and_ingest_types_are_exact(server):
    """cursor.execute of an INSERT goes through GetFlightInfo + DoGet: it
    writes once; adbc_ingest (create, then append) of pyarrow types that had
    no Paimon counterpart reads back exactly; a type without one is refused
    up front and leaves no table."""
    conn = connect(server)
    cur = conn.cursor()
    cur.execute("CREATE TABLE once (a BIGINT, b BIGINT, s STRING)")
    cur.execute("INSERT INTO once VALUES (1, 2, 'x')")
    cur.fetchall()
    try:
        cur.execute("INSERT INTO once VALUES (7,7,'s7','x7','SURPLUS',42)")
        cur.fetchall()
    except Exception as e:
        assert "the table has 3 columns but VALUES row 1" in str(e), str(e)
    else:
        raise AssertionError("an INSERT with surplus values was accepted")
    cur.execute('SELECT count(*) FROM "once$rt"')
    assert cur.fetchone() == (1,)

    table = pa.table({
        "u64": pa.array([2**64 - 1, None], pa.uint64()),
        "u8": pa.array([255, 0], pa.uint8()),
        "ts_ns": pa.array([1700000000123456789, None], pa.timestamp("ns")),
        "ts_tz": pa.array([1700000000123456, None], pa.timestamp("us", tz="Europe/Paris")),
        "ls": pa.array(["a" * 20, None], pa.large_string()),
        "dict": pa.array(["x", "y"]).dictionary_encode(),
        "lst": pa.array([[1, 2], None], pa.list_(pa.int32())),
        "fsl": pa.array([[1.5, 2.5], [0.0, 1.0]], pa.list_(pa.float64(), 2)),
        "st": pa.array([{"a": 1, "b": "s"}, None], pa.struct([("a", pa.int16()), ("b", pa.string())])),
        "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
    })
    assert cur.adbc_ingest("types", table, mode="create") == 2
    assert cur.adbc_ingest("types", table, mode="append") == 2
    cur.execute('SELECT * FROM "types$rt"')
    got = cur.fetch_arrow_table()
    assert got.num_rows == 4
    first = got.slice(0, 2)
    assert first.column("u64").to_pylist() == [2**64 - 1, None]
    assert first.column("u8").to_pylist() == [255, 0]
    assert first.column("ts_ns").cast(pa.int64()).to_pylist() == [1700000000123456789, None]
    assert first.column("ts_tz").cast(pa.int64()).to_pylist() == [1700000000123456, None]
    assert first.column("ls").to_pylist() == ["a" * 20, None]
    assert first.column("dict").to_pylist() == ["x", "y"]
    assert first.column("lst").to_pylist() == [[1, 2], None]
    assert first.column("fsl").to_pylist() == [[1.5, 2.5], [0.0, 1.0]]
    assert first.column("st").to_pylist() == [{"a": 1, "b": "s"}, None]
    assert first.column("m").to_pylist() == [[("k", 1)], None]

    times = pa.table({"t": pa.array([1], pa.time64("us"))})
    try:
        cur.adbc_ingest("times", times, mode="create")
    except Exception as e:
        assert 'column "t": cannot write time64[us] into time32[ms]' in str(e), str(e)
        assert "Paimon stores TIME as milliseconds" in str(e), str(e)
    else:
        raise AssertionError("a time64[us] value finer than milliseconds was accepted")
    try:
        cur.execute("SELECT * FROM times")
        cur.fetchall()
    except Exception as e:
        assert "does not exist" in str(e), str(e)
    else:
        raise AssertionError("a refused create left a table behind")
    conn.close()


def test_session_chooses_the_database(server):
    # A session lives in a cookie, which ADBC keeps when told to.
    from adbc_driver_flightsql import DatabaseOptions
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conn = flight_sql.connect(server.uri, db_kwargs={DatabaseOptions.WITH_COOKIE_MIDDLEWARE.value: "true"})
    cur = conn.cursor()
    cur.execute("CREATE DATABASE shop")
    cur.execute("CREATE TABLE shop.t (id BIGINT, v STRING)")
    cur.execute("INSERT INTO shop.t VALUES (1, 'a')")
    assert conn.adbc_current_catalog == ""
    assert conn.adbc_current_db_schema == "default"
    # The driver's Go client sometimes drops the cookie SetSessionOptions
    # answers with (it races a stream's end against its headers): set again.
    for _ in range(10):
        conn.adbc_connection.set_options(**{"adbc.connection.db_schema": "shop"})
        if conn.adbc_current_db_schema == "shop":
            break
    assert conn.adbc_current_db_schema == "shop"
    cur.execute('SELECT v FROM "t$rt"')
    assert cur.fetchall() == [("a",)]
    # Bulk ingest without a schema lands in the session's database too.
    cur.adbc_ingest("t", pa.table({"id": pa.array([2], pa.int64()), "v": ["b"]}), mode="append")
    cur.execute('SELECT count(*) FROM shop."t$rt"')
    assert cur.fetchall() == [(2,)]
    cur.execute("USE default")
    assert conn.adbc_current_db_schema == "default"
    try:
        cur.execute('SELECT v FROM "t$rt"')
        raise AssertionError("t$rt resolved in default")
    except flight_sql.Error as e:
        assert "t$rt" in str(e)
    cur.close()
    conn.close()


def test_cancel_frees_the_servers_statement_and_memory(metrics_server):
    # A sort that holds DuckDB memory while it runs (it runs at the DoGet,
    # which the driver starts when execute returns).
    conn, other = connect(metrics_server), connect(metrics_server)

    def duckdb_memory():
        with other.cursor() as c:
            c.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()")
            return c.fetchall()[0][0]

    cur = conn.cursor()
    cur.execute("SELECT x FROM range(300000000) t(x) ORDER BY hash(x)")
    wait_for(lambda: duckdb_memory() > 64 << 20, what="the sort holds memory")
    assert metric(metrics_server, "flightd_statements_running") >= 1
    cur.adbc_cancel()
    try:
        cur.fetch_arrow_table()
        raise AssertionError("a cancelled query returned its rows")
    except flight_sql.OperationalError as e:
        assert "CANCELLED" in str(e)
    wait_for(lambda: metric(metrics_server, "flightd_statements_running") == 0, what="the statement ended")
    wait_for(lambda: duckdb_memory() < 16 << 20, what="DuckDB released the sort's memory")
    # The server keeps serving.
    cur.close()
    with conn.cursor() as c:
        c.execute("SELECT 42")
        assert c.fetchall() == [(42,)]
    conn.close()
    other.close()


def test_partitioned_reads_equal_a_plain_read():
    # Endpoints of 1000 rows or more, at most 4: a 5000-row scan splits.
    from conftest import _serve
    for server in _serve({"FLIGHTD_MIN_ENDPOINT_ROWS": "1000", "FLIGHTD_MAX_ENDPOINTS": "4"}):
        conn = connect(server)
        cur = conn.cursor()
        cur.execute("CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
        cur.adbc_ingest("pk", pa.table({"id": pa.array(range(5000), pa.int64()),
                                        "v": [f"v{i}" for i in range(5000)]}), mode="append")
        cur.execute('SELECT * FROM "pk$rt"')
        want = cur.fetch_arrow_table().sort_by("id")
        partitions, schema = cur.adbc_execute_partitions('SELECT * FROM "pk$rt"')
        assert len(partitions) > 1
        got = []
        for p in partitions:
            cur.adbc_read_partition(p)
            got.append(cur.fetch_arrow_table())
        assert pa.concat_tables(got).sort_by("id").equals(want)
        assert schema.names == ["id", "v"]
        cur.close()
        conn.close()
