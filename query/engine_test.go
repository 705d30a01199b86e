//go:build duckdb_arrow

package query

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
)

func newTestEngine(t testing.TB) *Engine {
	t.Helper()
	return newTestEngineWith(t, Options{Threads: 2})
}

// newTestEngineWith is an engine over a new warehouse and log in a
// temporary directory, where DuckDB spills unless opts says otherwise.
func newTestEngineWith(t testing.TB, opts Options) *Engine {
	t.Helper()
	return newTestEngineAt(t, t.TempDir(), opts)
}

// newTestEngineIn is newTestEngine over dir (warehouse/, log/).
func newTestEngineIn(t testing.TB, dir string) *Engine {
	t.Helper()
	return newTestEngineAt(t, dir, Options{Threads: 2})
}

func newTestEngineAt(t testing.TB, dir string, opts Options) *Engine {
	t.Helper()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	if opts.TempDir == "" {
		opts.TempDir = filepath.Join(dir, "duckdb-tmp")
	}
	if opts.MaxTempBytes == 0 {
		opts.MaxTempBytes = 1 << 30 // no test may fill the disk
	}
	e, err := New(lakestream.New(cat, log, lakestream.Options{}), opts)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

func run(t *testing.T, e *Engine, sql string) [][]string {
	t.Helper()
	res, err := e.Execute(context.Background(), plan.Analyze(sql))
	require.NoError(t, err, sql)
	if res.Reader == nil {
		return nil
	}
	return drain(t, res.Reader)
}

func drain(t *testing.T, r array.RecordReader) [][]string {
	t.Helper()
	defer r.Release()
	var out [][]string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for j := range row {
				// A string value aliases the batch's buffer, which is freed
				// once the reader moves on.
				row[j] = strings.Clone(rec.Column(j).ValueStr(i))
			}
			out = append(out, row)
		}
	}
	require.NoError(t, r.Err())
	return out
}

func TestEngineRoutesStatements(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE shop")
	run(t, e, "CREATE TABLE shop.t (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO shop.t VALUES (1, 'a'), (2, 'b'), (1, 'c')")
	require.Equal(t, [][]string{{"1", "c"}, {"2", "b"}}, run(t, e, `SELECT * FROM shop."t$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"c"}}, run(t, e, `SELECT s FROM shop."t$rt" WHERE id = 1`))
	require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT count(*) FROM shop."t$rt" x JOIN shop."t$rt" y USING (id)`))
	require.Empty(t, run(t, e, `SELECT * FROM shop.t`), "nothing tiered yet")

	p, err := e.Prepare(context.Background(), plan.Analyze(`SELECT id FROM shop."t$rt"`))
	require.NoError(t, err)
	require.Equal(t, "id", p.DatasetSchema.Field(0).Name)
	p, err = e.Prepare(context.Background(), plan.Analyze(`INSERT INTO shop.t VALUES (3, 'x')`))
	require.NoError(t, err)
	require.True(t, p.Update)

	_, err = e.Execute(context.Background(), plan.Analyze(`UPDATE shop.t SET s = 'x'`))
	require.ErrorIs(t, err, engine.ErrInvalid)
	_, err = e.Execute(context.Background(), plan.Analyze(`SELECT * FROM shop.missing`))
	require.ErrorIs(t, err, engine.ErrNotFound)
	_, err = e.Execute(context.Background(), plan.Analyze(`CREATE VIEW v AS SELECT 1`))
	require.ErrorIs(t, err, engine.ErrInvalid)
	// DuckDB's own names still work.
	require.Equal(t, [][]string{{"3"}}, run(t, e, `SELECT count(*) FROM range(3)`))
	// A CTE shadows a table of the same name in the default database.
	run(t, e, "CREATE TABLE t (id BIGINT)")
	require.Equal(t, [][]string{{"42"}}, run(t, e, `WITH t AS (SELECT 42 AS id) SELECT id FROM t`))
}

func TestFiltersAndProjectionsOverScans(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (a BIGINT, b STRING, c DOUBLE)")
	run(t, e, "INSERT INTO t VALUES (1, 'x', 1.5), (2, 'y', 2.5), (3, 'z', 3.5)")
	require.Equal(t, [][]string{{"y"}}, run(t, e, `SELECT b FROM "t$rt" WHERE a = 2`))
	require.Equal(t, [][]string{{"3.5", "3"}}, run(t, e, `SELECT c, a FROM "t$rt" WHERE b > 'y'`))
	require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT count(*) FROM "t$rt" WHERE c BETWEEN 1 AND 3`))
	require.Equal(t, [][]string{{"1", "x"}}, run(t, e, `SELECT a, b FROM "t$rt" x WHERE x.a IN (SELECT min(a) FROM "t$rt")`))
}

func TestPlainScansSkipDuckDB(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (a BIGINT, b STRING, PRIMARY KEY (a) NOT ENFORCED)")
	run(t, e, "INSERT INTO t VALUES (1, 'x'), (2, 'y'), (1, 'z')")
	for _, tc := range []struct {
		name, sql string
		want      [][]string
	}{
		{"star", `SELECT * FROM "t$rt"`, [][]string{{"1", "z"}, {"2", "y"}}},
		{"columns", `SELECT b, A FROM "t$rt"`, [][]string{{"y", "2"}, {"z", "1"}}},
		{"lake", `SELECT * FROM t`, nil},
		// A BIGINT parameter binds as a cast (engine.Literal): still a lookup.
		{"bound key", `SELECT * FROM "t$rt" WHERE a = CAST(1 AS BIGINT)`, [][]string{{"1", "z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, ok := func() (*plan.Object, bool) {
				c, err := e.connect(context.Background())
				require.NoError(t, err)
				defer c.close()
				js, err := c.serialize(context.Background(), tc.sql)
				require.NoError(t, err)
				return plan.ParseTree(js)
			}()
			require.True(t, ok)
			_, plain := plan.PlainScan(tree, e.resolver(context.Background()))
			require.True(t, plain, "must take the fast path")
			got := run(t, e, tc.sql)
			sortRows(got)
			require.Equal(t, tc.want, got)
		})
	}
	// Anything more goes through DuckDB and still works.
	require.Equal(t, [][]string{{"z"}}, run(t, e, `SELECT b FROM "t$rt" WHERE a = 1`))
	require.Equal(t, [][]string{{"1"}}, run(t, e, `SELECT a AS x FROM "t$rt" ORDER BY a LIMIT 1`))
	_, err := e.Execute(context.Background(), plan.Analyze(`SELECT nope FROM "t$rt"`))
	require.ErrorContains(t, err, "nope")
}

func sortRows(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool { return strings.Join(rows[i], "|") < strings.Join(rows[j], "|") })
}

func TestSystemTableShowsLag(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (a BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket' = '2')")
	require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT count(*) FROM sys.tiering`), "every bucket, written or not")
	run(t, e, "INSERT INTO t VALUES (1), (2), (3), (4)")
	require.Equal(t, [][]string{{"4", "0"}}, run(t, e, `SELECT sum(lag_rows), count(snapshot_id) FROM sys.tiering WHERE "table" = 't'`))
	require.Equal(t, [][]string{{"true"}}, run(t, e, `SELECT bool_and(lag_seconds BETWEEN 0 AND 60) FROM sys.tiering WHERE lag_rows > 0`), "the age of the oldest un-tiered record")
	require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT count(*) FROM sys.tiering`))
	rows := run(t, e, `SELECT database, "table", bucket FROM sys.tiering`)
	sortRows(rows)
	require.Equal(t, [][]string{{"default", "t", "0"}, {"default", "t", "1"}}, rows)
	require.Equal(t, [][]string{{"0", "0", "0"}}, run(t, e, `SELECT sum(failed_rounds), count(last_error), count(retry_at) FROM sys.tiering`),
		"no round failed")
}

// TestKeyWithoutPartitionColumnIsRefused: CREATE TABLE refuses a primary
// key that leaves out a partition column, as Java Paimon does for
// fixed-bucket tables, and names the key to declare.
func TestKeyWithoutPartitionColumnIsRefused(t *testing.T) {
	e := newTestEngine(t)
	_, err := e.Execute(context.Background(), plan.Analyze("CREATE TABLE p (id INT, dt STRING, v STRING, PRIMARY KEY (id) NOT ENFORCED) PARTITIONED BY (dt)"))
	require.ErrorIs(t, err, engine.ErrUnsupported)
	require.ErrorContains(t, err, "PRIMARY KEY (id, dt)")
	run(t, e, "CREATE TABLE p (id INT, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt)")
	run(t, e, "INSERT INTO p VALUES (1, 'day1', 'a'), (1, 'day2', 'b')")
	require.Equal(t, [][]string{{"1", "day1", "a"}, {"1", "day2", "b"}}, run(t, e, `SELECT * FROM "p$rt" ORDER BY dt`))
}

func TestCreateTableRefusesUnsupportedOptions(t *testing.T) {
	e := newTestEngine(t)
	_, err := e.Execute(context.Background(), plan.Analyze("CREATE TABLE p (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('merge-engine' = 'partial-update')"))
	require.ErrorIs(t, err, engine.ErrUnsupported)
	require.ErrorContains(t, err, "partial-update")
}

// preparedAsRun prepares prepare and runs sql (the same statement, with its
// parameters bound), checks that Prepare's schema is the one the run
// streams, and returns it with the rows.
func preparedAsRun(t *testing.T, e *Engine, prepare, sql string) (*arrow.Schema, [][]string) {
	t.Helper()
	p, err := e.Prepare(context.Background(), plan.Analyze(prepare))
	require.NoError(t, err, prepare)
	res, err := e.Execute(context.Background(), plan.Analyze(sql))
	require.NoError(t, err, sql)
	got := res.Reader.Schema()
	rows := drain(t, res.Reader)
	require.True(t, p.DatasetSchema.Equal(got), "%s\nprepared: %s\nstreamed: %s", prepare, p.DatasetSchema, got)
	return got, rows
}

// TestRepeatedColumnNamesKeepPreparedSchema: a result whose columns repeat a
// name (SELECT * of a join of tables that share columns) came back from
// Prepare with DuckDB's subquery names (a, a_1) and from the run as a, a,
// so ADBC refused every such result as "inconsistent schema". The prepared
// schema must be the one the statement streams, with or without parameters.
func TestRepeatedColumnNamesKeepPreparedSchema(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE shop")
	run(t, e, "CREATE TABLE shop.t (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO shop.t VALUES (1, 'a'), (2, 'b')")
	for _, q := range []struct{ prepare, run string }{
		{`SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS A, 5 AS a_1`, ""},
		{`SELECT * FROM shop."t$rt" x JOIN shop."t$rt" y USING (id)`, ""},
		{`SELECT * FROM shop."t$rt" x JOIN shop."t$rt" y ON x.id = y.id`, ""},
		{`SELECT * FROM shop."t$rt" x, shop.t y`, ""},
		{`SELECT x.*, y.* FROM shop."t$rt" x JOIN shop."t$rt" y ON x.id = y.id WHERE x.id = ?`,
			`SELECT x.*, y.* FROM shop."t$rt" x JOIN shop."t$rt" y ON x.id = y.id WHERE x.id = 1`},
	} {
		sql := q.run
		if sql == "" {
			sql = q.prepare
		}
		got, _ := preparedAsRun(t, e, q.prepare, sql)
		names := map[string]int{}
		for _, f := range got.Fields() {
			names[f.Name]++
		}
		require.Less(t, len(names), got.NumFields(), "%s: the test needs a repeated name", sql)
	}
}

// TestStatementsRunAsWritten: flightd's tables are views DuckDB resolves
// itself, so a statement runs as the client wrote it. Column names made
// from expressions over them held the names of per-statement views
// (__flightd_q95_0), which also differed between Prepare and the run, so
// ADBC refused the result; EXPLAIN could not see the tables at all.
func TestStatementsRunAsWritten(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE shop")
	run(t, e, "CREATE TABLE shop.t (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "CREATE TABLE u (i BIGINT)")
	run(t, e, "INSERT INTO shop.t VALUES (1, 'a'), (2, 'b')")
	run(t, e, "INSERT INTO u VALUES (1), (5)")
	for _, q := range []string{
		`SELECT 1 IN (SELECT id FROM shop."t$rt"), 2`,
		`SELECT (SELECT max(i) FROM "u$rt"), (SELECT min(i) FROM "default"."u$rt")`,
		`SELECT * FROM "u$rt" WHERE i > (SELECT count(*) FROM shop."t$rt" x JOIN shop."t$rt" y USING (id))`,
		`WITH "u$rt" AS (SELECT 42 AS i) SELECT i FROM "u$rt"`,
		`EXPLAIN SELECT s FROM shop."t$rt" WHERE id = 1`,
		`EXPLAIN ANALYZE SELECT count(*) FROM "u$rt"`,
		`  explain   SELECT * FROM "u$rt"`,
	} {
		got, rows := preparedAsRun(t, e, q, q)
		require.NotEmpty(t, rows, q)
		for _, f := range got.Fields() {
			require.NotContains(t, f.Name, "__flightd", q)
		}
	}
	require.Equal(t, [][]string{{"42"}}, run(t, e, `WITH "u$rt" AS (SELECT 42 AS i) SELECT i FROM "u$rt"`), "a CTE shadows the table")
	require.Equal(t, [][]string{{"true", "2"}}, run(t, e, `SELECT 1 IN (SELECT id FROM shop."t$rt"), 2`))

	// A table dropped and created again with other columns: its view
	// follows.
	run(t, e, "DROP TABLE u")
	run(t, e, "CREATE TABLE u (i BIGINT, note STRING)")
	run(t, e, "INSERT INTO u VALUES (7, 'x')")
	require.Equal(t, [][]string{{"7", "x"}}, run(t, e, `SELECT * FROM "u$rt"`))
	require.Equal(t, [][]string{{"7", "x"}}, run(t, e, `SELECT * FROM "default"."u$rt" WHERE i IN (SELECT i FROM "u$rt")`))
}

// TestWritesToReadOnlyNamesSayWhy: t$rt and t$changelog exist (they read),
// so a write to one answered NOT_FOUND "table db.t$rt not found", and
// CREATE TABLE of such a name failed inside. Each now says what the name
// is and where to write instead.
func TestWritesToReadOnlyNamesSayWhy(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	run(t, e, "CREATE DATABASE shop")
	run(t, e, "CREATE TABLE shop.t (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	for _, c := range []struct {
		sql  string
		want error
		says string
	}{
		{`INSERT INTO shop."t$rt" VALUES (1, 'a')`, engine.ErrInvalid, `shop.t$rt is the read-only real-time view of shop.t; write to shop.t`},
		{`INSERT INTO shop."t$RT" VALUES (1, 'a')`, engine.ErrInvalid, `read-only real-time view`},
		{`INSERT INTO shop."t$changelog" VALUES (1, 'a')`, engine.ErrInvalid, `read-only changelog of shop.t`},
		{`INSERT INTO shop."nope$rt" VALUES (1, 'a')`, engine.ErrNotFound, `table shop.nope does not exist`},
		{`INSERT INTO sys.tiering VALUES (1)`, engine.ErrInvalid, `read-only system tables`},
		{`DROP TABLE shop."t$rt"`, engine.ErrInvalid, `read-only real-time view`},
		{`ALTER TABLE shop."t$rt" SET ('lakestream.freshness' = '5s')`, engine.ErrInvalid, `read-only real-time view`},
		{`CREATE TABLE shop."fresh$rt" (i INT)`, engine.ErrInvalid, `may not end in "$rt"`},
		{`CREATE TABLE shop."fresh$changelog" (i INT)`, engine.ErrInvalid, `may not end in "$changelog"`},
	} {
		_, err := e.Execute(ctx, plan.Analyze(c.sql))
		require.ErrorIs(t, err, c.want, c.sql)
		require.ErrorContains(t, err, c.says, c.sql)
	}
	sc, err := e.ls.ArrowSchema(ctx, "shop", "t")
	require.NoError(t, err)
	_, err = e.Ingest(ctx, "shop", "t$rt", false, emptyReader(t, sc))
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, "read-only real-time view")
	require.Equal(t, [][]string{{"0"}}, run(t, e, `SELECT count(*) FROM shop."t$rt"`), "nothing was written")
}

func emptyReader(t *testing.T, sc *arrow.Schema) array.RecordReader {
	r, err := array.NewRecordReader(sc, nil)
	require.NoError(t, err)
	return r
}
