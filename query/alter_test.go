//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/query/plan"
)

// TestAddColumnKeepsEveryRow: ALTER TABLE ... ADD COLUMN was refused
// ("expected SET (...) or RESET (...)"). A column added first, after
// another or at the end reads as null in rows the lake and the log held
// before, takes values in rows written after, and tiering keeps both.
func TestAddColumnKeepsEveryRow(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO pk VALUES (1, 'a'), (2, 'b')")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (3, 'c')") // in the log, under the first schema
	run(t, e, "ALTER TABLE pk ADD COLUMN w INT COMMENT 'weight'")
	run(t, e, "ALTER TABLE pk ADD z STRING FIRST")
	run(t, e, "ALTER TABLE pk ADD COLUMN u BOOLEAN AFTER id")
	run(t, e, "INSERT INTO pk (id, v, w, z, u) VALUES (4, 'd', 40, 'zz', true), (1, 'a2', 10, NULL, false)")
	want := [][]string{{"(null)", "1", "false", "a2", "10"}, {"(null)", "2", "(null)", "b", "(null)"}, {"(null)", "3", "(null)", "c", "(null)"}, {"zz", "4", "true", "d", "40"}}
	require.Equal(t, want, run(t, e, `SELECT z, id, u, v, w FROM "pk$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"z"}, {"id"}, {"u"}, {"v"}, {"w"}}, run(t, e, `SELECT column_name FROM (DESCRIBE SELECT * FROM "pk$rt")`))
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, `SELECT z, id, u, v, w FROM pk ORDER BY id`))

	requireRefused(t, e, map[string]error{
		"ALTER TABLE pk ADD COLUMN v INT":             engine.ErrInvalid, // exists
		"ALTER TABLE pk ADD COLUMN n INT NOT NULL":    engine.ErrUnsupported,
		"ALTER TABLE pk ADD COLUMN n INT AFTER nope":  engine.ErrInvalid,
		"ALTER TABLE pk ADD COLUMN n INT PRIMARY KEY": engine.ErrInvalid,
		`ALTER TABLE "pk$rt" ADD COLUMN n INT`:        engine.ErrInvalid,
		"ALTER TABLE missing ADD COLUMN n INT":        engine.ErrNotFound,
		"ALTER TABLE pk ADD COLUMN n FOO":             engine.ErrInvalid,
	})
}

// TestRenameAndDropColumnKeepTheOtherValues: RENAME COLUMN and DROP COLUMN
// were refused. A renamed column keeps its values under the new name, in
// the lake and in the log rows from before; a dropped column is gone from
// every row, and a name dropped and added again starts empty (a new field
// id). Key columns keep their names and stay.
func TestRenameAndDropColumnKeepTheOtherValues(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, w INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO pk VALUES (1, 'a', 10), (2, 'b', 20)")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (3, 'c', 30)") // in the log, under the first schema
	run(t, e, "ALTER TABLE pk RENAME COLUMN v TO name")
	run(t, e, "ALTER TABLE pk DROP COLUMN w")
	run(t, e, "ALTER TABLE pk ADD COLUMN w INT")
	run(t, e, "INSERT INTO pk VALUES (4, 'd', 44)")
	want := [][]string{{"1", "a", "(null)"}, {"2", "b", "(null)"}, {"3", "c", "(null)"}, {"4", "d", "44"}}
	require.Equal(t, want, run(t, e, `SELECT id, name, w FROM "pk$rt" ORDER BY id`))
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, `SELECT id, name, w FROM pk ORDER BY id`))

	requireRefused(t, e, map[string]error{
		"ALTER TABLE pk RENAME COLUMN id TO key":   engine.ErrUnsupported,
		"ALTER TABLE pk DROP COLUMN id":            engine.ErrUnsupported,
		"ALTER TABLE pk RENAME COLUMN nope TO x":   engine.ErrInvalid,
		"ALTER TABLE pk RENAME COLUMN name TO w":   engine.ErrInvalid,
		"ALTER TABLE pk DROP COLUMN nope":          engine.ErrInvalid,
		`ALTER TABLE "pk$rt" DROP COLUMN name`:     engine.ErrInvalid,
		"ALTER TABLE missing RENAME COLUMN a TO b": engine.ErrNotFound,
	})
}

// TestAlterColumnWidensTheValuesWritten: ALTER COLUMN ... TYPE was refused.
// A column widened (INT to BIGINT, FLOAT to DOUBLE, DECIMAL(5,2) to
// DECIMAL(12,4), VARCHAR(3) to STRING) reads its lake and log values
// under the new type; NOT NULL dropped admits nulls; narrowing and key
// columns are refused with the reason.
func TestAlterColumnWidensTheValuesWritten(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id INT, n INT NOT NULL, f FLOAT, d DECIMAL(5, 2), s VARCHAR(3), PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO pk VALUES (1, 2147483647, 1.5, 123.45, 'abc')")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (2, -2147483648, 2.25, -999.99, 'xyz')") // in the log
	for _, q := range []string{
		"ALTER TABLE pk ALTER COLUMN n TYPE BIGINT",
		"ALTER TABLE pk ALTER f SET DATA TYPE DOUBLE",
		"ALTER TABLE pk ALTER COLUMN d TYPE DECIMAL(12, 4)",
		"ALTER TABLE pk ALTER COLUMN s TYPE STRING",
		"ALTER TABLE pk ALTER COLUMN n DROP NOT NULL",
		"ALTER TABLE pk ALTER COLUMN s COMMENT 'short'",
	} {
		run(t, e, q)
	}
	run(t, e, "INSERT INTO pk VALUES (3, 9223372036854775807, 1e300, 12345678.1234, 'longer'), (4, NULL, NULL, NULL, NULL)")
	want := [][]string{{"1", "2147483647", "1.5", "123.45", "abc"}, {"2", "-2147483648", "2.25", "-999.99", "xyz"},
		{"3", "9223372036854775807", "1e+300", "12345678.1234", "longer"}, {"4", "(null)", "(null)", "(null)", "(null)"}}
	require.Equal(t, want, run(t, e, `SELECT * FROM "pk$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"id", "INTEGER"}, {"n", "BIGINT"}, {"f", "DOUBLE"}, {"d", "DECIMAL(12,4)"}, {"s", "VARCHAR"}},
		run(t, e, `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "pk$rt")`))
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, `SELECT * FROM pk ORDER BY id`))

	requireRefused(t, e, map[string]error{
		"ALTER TABLE pk ALTER COLUMN n TYPE INT":            engine.ErrUnsupported, // narrower
		"ALTER TABLE pk ALTER COLUMN d TYPE DECIMAL(12, 2)": engine.ErrUnsupported, // fewer fraction digits
		"ALTER TABLE pk ALTER COLUMN s TYPE VARCHAR(2)":     engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN f TYPE STRING":         engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN id TYPE BIGINT":        engine.ErrUnsupported, // a key
		"ALTER TABLE pk ALTER COLUMN id DROP NOT NULL":      engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN nope TYPE BIGINT":      engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN n TYPE FOO":            engine.ErrInvalid,
	})
}

// TestTimeTravelOptionsAreHonouredOrRefused: scan.snapshot-id,
// scan.tag-name and scan.timestamp-millis make reads of t read that
// snapshot, as Java does (t$rt is refused while they are set); the other
// options that would make Java read another snapshot are refused, and so
// is a hint comment flightd does not apply.
func TestTimeTravelOptionsAreHonouredOrRefused(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	run(t, e, "CREATE TABLE t (id BIGINT) WITH ('lakestream.enabled' = 'false')")
	run(t, e, "INSERT INTO t VALUES (1)")
	run(t, e, "INSERT INTO t VALUES (2)")
	run(t, e, "ALTER TABLE t SET ('scan.snapshot-id' = '1')")
	require.Equal(t, [][]string{{"1"}}, run(t, e, "SELECT count(*) FROM t"))
	require.Equal(t, [][]string{{"1"}}, run(t, e, "SELECT * FROM t"))
	require.Equal(t, [][]string{{"2"}}, run(t, e, "SELECT count(*) FROM t AT (VERSION => 2)"), "AT says which snapshot")
	run(t, e, "ALTER TABLE t SET ('scan.snapshot-id' = '', 'scan.timestamp-millis' = '1')")
	_, err := e.Execute(ctx, plan.Analyze("SELECT * FROM t"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	require.ErrorContains(t, err, "scan.timestamp-millis")
	run(t, e, "ALTER TABLE t RESET ('scan.timestamp-millis')")
	require.Equal(t, [][]string{{"2"}}, run(t, e, "SELECT count(*) FROM t"))
	require.Equal(t, [][]string{{"0"}}, run(t, e, `SELECT count(*) FROM "t$options" WHERE key LIKE 'scan.%'`), "RESET removed the option")
	run(t, e, "CREATE TABLE k (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	requireRefused(t, e, map[string]error{
		"ALTER TABLE k RESET ('bucket')":              engine.ErrInvalid,
		"ALTER TABLE t RESET ('lakestream.enabled')":  engine.ErrInvalid,
		"ALTER TABLE t RESET ('lakestream.table-id')": engine.ErrInvalid,
	})

	run(t, e, "CREATE TABLE r (id BIGINT) WITH ('scan.snapshot-id' = '1')")
	_, err = e.Execute(ctx, plan.Analyze(`SELECT * FROM "r$rt"`))
	require.True(t, errors.Is(err, engine.ErrUnsupported), "%v", err)
	require.ErrorContains(t, err, "RESET ('scan.snapshot-id')")
	run(t, e, "ALTER TABLE r RESET ('scan.snapshot-id')")
	require.Equal(t, [][]string{{"0"}}, run(t, e, `SELECT count(*) FROM "r$rt"`))

	for _, q := range []string{
		"ALTER TABLE t SET ('scan.timestamp' = '2024-01-01 00:00:00')",
		"ALTER TABLE t SET ('scan.mode' = 'from-snapshot')",
		"ALTER TABLE t SET ('scan.snapshot-id' = '1', 'scan.tag-name' = 'v1')",
		"CREATE TABLE u (id BIGINT) WITH ('scan.watermark' = '1700000000000')",
	} {
		_, err := e.Execute(ctx, plan.Analyze(q))
		require.True(t, errors.Is(err, engine.ErrUnsupported), "%s: %v", q, err)
	}
	run(t, e, "ALTER TABLE t SET ('scan.mode' = 'latest')")
	// A hint that chooses a snapshot reads it; other hints are refused,
	// never ignored.
	_, err = e.Execute(ctx, plan.Analyze("SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='3') */"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	_, err = e.Execute(ctx, plan.Analyze("SELECT * FROM t /*+ OPTIONS('scan.infer-parallelism'='false') */"))
	require.True(t, errors.Is(err, engine.ErrInvalid), "%v", err)
	require.ErrorContains(t, err, "scan.infer-parallelism")
	_, err = e.Execute(ctx, plan.Analyze("SELECT /*+ BROADCAST(t) */ * FROM t"))
	require.ErrorContains(t, err, "hint comment")
	require.Equal(t, [][]string{{"2"}}, run(t, e, "SELECT count(*) FROM t /* a plain comment */"))
}

// requireRefusedSaying runs each statement and wants its error to say
// what is mapped to it.
func requireRefusedSaying(t *testing.T, e *Engine, want map[string]string) {
	t.Helper()
	for q, says := range want {
		_, err := e.Execute(context.Background(), plan.Analyze(q))
		require.ErrorContains(t, err, says, q)
	}
}

// requireRefused runs each statement and wants its error to be the one
// mapped to it.
func requireRefused(t *testing.T, e *Engine, want map[string]error) {
	t.Helper()
	for q, w := range want {
		_, err := e.Execute(context.Background(), plan.Analyze(q))
		require.True(t, errors.Is(err, w), "%s: %v", q, err)
	}
}

// TestRenameTableKeepsLakeAndLogRows: ALTER TABLE ... RENAME TO was
// refused. The renamed table has every row: those tiered into the lake
// (u) and those only in the log (u$rt), which the next round commits into
// u's directory; the old names are NOT_FOUND, in statements and in
// DuckDB's catalog.
func TestRenameTableKeepsLakeAndLogRows(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "CREATE TABLE ap (id BIGINT, v STRING)")
	run(t, e, "INSERT INTO pk VALUES (1, 'a'), (2, 'b')")
	run(t, e, "INSERT INTO ap VALUES (1, 'a')")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "ap")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (3, 'c'), (1, 'a2')") // only in the log
	run(t, e, "INSERT INTO ap VALUES (2, 'b')")
	// Views of the old names exist in DuckDB's catalog.
	require.Len(t, run(t, e, `SELECT * FROM "pk$rt" JOIN pk USING (id)`), 2)

	run(t, e, "ALTER TABLE pk RENAME TO renamed")
	run(t, e, "ALTER TABLE default.ap RENAME TO default.ap2")
	lakeRows := [][]string{{"1", "a"}, {"2", "b"}}
	all := [][]string{{"1", "a2"}, {"2", "b"}, {"3", "c"}}
	require.Equal(t, lakeRows, run(t, e, "SELECT * FROM renamed ORDER BY id"))
	require.Equal(t, all, run(t, e, `SELECT * FROM "renamed$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}}, run(t, e, `SELECT * FROM "ap2$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"1", "a"}}, run(t, e, `SELECT * FROM ap2`))
	requireRefused(t, e, map[string]error{
		"SELECT * FROM pk":                engine.ErrNotFound,
		`SELECT * FROM "pk$rt"`:           engine.ErrNotFound,
		`SELECT * FROM "default"."pk$rt"`: engine.ErrNotFound,
		`SELECT * FROM "default".ap`:      engine.ErrNotFound,
		"INSERT INTO pk VALUES (9, 'z')":  engine.ErrNotFound,
		"ALTER TABLE pk ADD COLUMN n INT": engine.ErrNotFound,
	})
	for _, q := range []string{"SELECT * FROM pk", `SELECT * FROM "pk$rt"`} {
		_, err := e.Execute(ctx, plan.Analyze(q))
		require.ErrorContains(t, err, "default.pk does not exist")
	}
	require.Empty(t, run(t, e, "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'pk%'"))
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.ErrorIs(t, err, lake.ErrTableNotFound)

	// The log follows the table: the next round of the new name commits
	// the rows written before the rename, with those written after.
	run(t, e, "INSERT INTO renamed VALUES (4, 'd')")
	res, err := p.tier.TierTable(ctx, DefaultDatabase, "renamed")
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Rows)
	all = append(all, []string{"4", "d"})
	require.Equal(t, all, run(t, e, "SELECT * FROM renamed ORDER BY id"))
	require.Equal(t, all, run(t, e, `SELECT * FROM "renamed$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"renamed", "0"}, {"renamed", "0"}},
		run(t, e, `SELECT "table", lag_rows FROM sys.tiering WHERE "table" = 'renamed'`))

	// Into another database, as Java Paimon's catalog allows; the new name
	// may be quoted, the table id and its log stay.
	run(t, e, "CREATE DATABASE other")
	run(t, e, "INSERT INTO renamed VALUES (5, 'e')")
	run(t, e, `ALTER TABLE renamed RENAME TO other."Moved"`)
	require.Equal(t, append(all, []string{"5", "e"}), run(t, e, `SELECT * FROM other."Moved$rt" ORDER BY id`))

	requireRefused(t, e, map[string]error{
		`ALTER TABLE other."Moved" RENAME TO "Moved"`:     engine.ErrExists, // its own name
		"ALTER TABLE ap2 RENAME TO ap2":                   engine.ErrExists,
		`ALTER TABLE other."Moved" RENAME TO default.ap2`: engine.ErrExists,
		`ALTER TABLE "ap2$rt" RENAME TO x`:                engine.ErrInvalid,
		`ALTER TABLE "ap2$snapshots" RENAME TO x`:         engine.ErrInvalid,
		`ALTER TABLE ap2 RENAME TO "x$rt"`:                engine.ErrInvalid,
		`ALTER TABLE ap2 RENAME TO "x$y"`:                 engine.ErrInvalid,
		"ALTER TABLE sys.tiering RENAME TO x":             engine.ErrInvalid,
		"ALTER TABLE missing RENAME TO x":                 engine.ErrNotFound,
		"ALTER TABLE ap2 RENAME TO nodb.x":                engine.ErrNotFound,
		"ALTER TABLE ap2 RENAME TO":                       engine.ErrInvalid,
	})
	requireRefusedSaying(t, e, map[string]string{
		"ALTER TABLE ap2 RENAME TO ap2":    "rename table default.ap2 to default.ap2",
		`ALTER TABLE ap2 RENAME TO "x$rt"`: `may not end in "$rt"`,
		`ALTER TABLE "ap2$rt" RENAME TO x`: "read-only real-time view",
		"ALTER TABLE ap2 RENAME TO nodb.x": "database nodb",
	})
}

// TestAlterNestedFieldWidensTheValuesWritten: ALTER COLUMN r.x TYPE was
// refused ("nested column"). A field of a ROW column (at any depth) widens
// like a column: rows in the lake and in the log from before read under
// the new type, by field id; narrowing, a field that does not exist, a
// path through a non-ROW and a whole ROW's type change are refused.
func TestAlterNestedFieldWidensTheValuesWritten(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id INT, r ROW<x INT, s ROW<y FLOAT, z STRING>, w VARCHAR(3)>, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO pk VALUES (1, {'x': 2147483647, 's': {'y': 1.5, 'z': 'a'}, 'w': 'abc'})")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (2, {'x': -5, 's': {'y': 2.25, 'z': 'b'}, 'w': 'xyz'})") // in the log
	run(t, e, "ALTER TABLE pk ALTER COLUMN r.x TYPE BIGINT")
	run(t, e, "ALTER TABLE pk ALTER r.s.y SET DATA TYPE DOUBLE")
	run(t, e, "ALTER TABLE pk ALTER COLUMN r.w TYPE STRING")
	run(t, e, "ALTER TABLE pk ALTER COLUMN r.s.z COMMENT 'zed'")
	run(t, e, "INSERT INTO pk VALUES (3, {'x': 9223372036854775807, 's': {'y': 1e300, 'z': 'c'}, 'w': 'longer'})")
	want := [][]string{{"1", "2147483647", "1.5", "a", "abc"}, {"2", "-5", "2.25", "b", "xyz"}, {"3", "9223372036854775807", "1e+300", "c", "longer"}}
	q := "SELECT id, r.x, r.s.y, r.s.z, r.w FROM %s ORDER BY id"
	require.Equal(t, want, run(t, e, fmt.Sprintf(q, `"pk$rt"`)))
	require.Equal(t, [][]string{{"STRUCT(x BIGINT, s STRUCT(y DOUBLE, z VARCHAR), w VARCHAR)"}},
		run(t, e, `SELECT column_type FROM (DESCRIBE SELECT r FROM "pk$rt")`))
	require.Equal(t, want[:1], run(t, e, fmt.Sprintf(q, "pk"))) // the lake's row, from a file of the first schema
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, fmt.Sprintf(q, "pk")))

	requireRefused(t, e, map[string]error{
		"ALTER TABLE pk ALTER COLUMN r.x TYPE INT":         engine.ErrUnsupported, // narrowing
		"ALTER TABLE pk ALTER COLUMN r.s.y TYPE FLOAT":     engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN r.w TYPE INT":         engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN r.s TYPE STRING":      engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN r TYPE ROW<x BIGINT>": engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN r.nope TYPE BIGINT":   engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN id.x TYPE BIGINT":     engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN r.x.y TYPE BIGINT":    engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN nope.x TYPE BIGINT":   engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN r.x TYPE NOPE":        engine.ErrInvalid,
		`ALTER TABLE "pk$rt" ALTER COLUMN r.x TYPE BIGINT`: engine.ErrInvalid,
		"ALTER TABLE missing ALTER COLUMN r.x TYPE BIGINT": engine.ErrNotFound,
	})
	requireRefusedSaying(t, e, map[string]string{
		"ALTER TABLE pk ALTER COLUMN r.x TYPE INT":         `"r.x" cannot change from BIGINT to INT`,
		"ALTER TABLE pk ALTER COLUMN r.nope TYPE BIGINT":   `ROW column "r" has no field "nope"`,
		"ALTER TABLE pk ALTER COLUMN r.s.q TYPE BIGINT":    `ROW column "r.s" has no field "q"`,
		"ALTER TABLE pk ALTER COLUMN id.x TYPE BIGINT":     `"id" is of type INT NOT NULL, which has no field "x"`,
		"ALTER TABLE pk ALTER COLUMN r TYPE ROW<x BIGINT>": `change a ROW's fields one by one`,
	})
}

// TestAlterElementAndValueWidensTheValuesWritten: ALTER COLUMN a.element
// TYPE and m.value TYPE were refused ("has no field"). What an ARRAY or a
// MAP holds widens, at any depth and inside ROWs, by the path segments
// Java Paimon names them with; rows in the lake and in the log from before
// read under the new type. A MAP's keys, a MULTISET's elements, narrowing
// and a comment on an element are refused, with the reason.
func TestAlterElementAndValueWidensTheValuesWritten(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, `CREATE TABLE pk (id INT, a ARRAY<INT>, m MAP<STRING, SMALLINT>, ar ARRAY<ROW<x INT, y ARRAY<FLOAT>>>,
		mr MAP<INT, ROW<x INT>>, aa ARRAY<ARRAY<INT NOT NULL>>, ms MULTISET<INT>, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')`)
	run(t, e, `INSERT INTO pk VALUES (1, [2147483647, NULL], MAP {'k': 32767}, [{'x': -1, 'y': [1.5]}], MAP {7: {'x': 2147483647}}, [[1, 2], []], NULL)`)
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, `INSERT INTO pk VALUES (2, [-5], MAP {'j': NULL, 'i': -32768}, [NULL, {'x': 3, 'y': NULL}], MAP {8: NULL}, [[-2147483648]], NULL)`) // in the log
	for _, q := range []string{
		"ALTER TABLE pk ALTER COLUMN a.element TYPE BIGINT",
		"ALTER TABLE pk ALTER m.value SET DATA TYPE INT",
		"ALTER TABLE pk ALTER COLUMN ar.element.x TYPE BIGINT",
		"ALTER TABLE pk ALTER COLUMN ar.element.y.element TYPE DOUBLE",
		"ALTER TABLE pk ALTER COLUMN mr.VALUE.x TYPE BIGINT",
		"ALTER TABLE pk ALTER COLUMN aa.element.element TYPE BIGINT",
		"ALTER TABLE pk ALTER COLUMN aa.element.element DROP NOT NULL",
		"ALTER TABLE pk ALTER COLUMN ar.element.x COMMENT 'ex'",
	} {
		run(t, e, q)
	}
	run(t, e, `INSERT INTO pk VALUES (3, [9223372036854775807], MAP {'h': 2147483647}, [{'x': 9223372036854775807, 'y': [1e300]}],
		MAP {9: {'x': 9223372036854775807}}, [[NULL, 9223372036854775807]], NULL)`)
	want := [][]string{
		{"1", "[2147483647, NULL]", "{k=32767}", "[{'x': -1, 'y': [1.5]}]", "{7={'x': 2147483647}}", "[[1, 2], []]"},
		{"2", "[-5]", "{j=NULL, i=-32768}", "[NULL, {'x': 3, 'y': NULL}]", "{8=NULL}", "[[-2147483648]]"},
		{"3", "[9223372036854775807]", "{h=2147483647}", "[{'x': 9223372036854775807, 'y': [1e+300]}]", "{9={'x': 9223372036854775807}}", "[[NULL, 9223372036854775807]]"},
	}
	q := "SELECT id, a::VARCHAR, m::VARCHAR, ar::VARCHAR, mr::VARCHAR, aa::VARCHAR FROM %s ORDER BY id"
	require.Equal(t, want, run(t, e, fmt.Sprintf(q, `"pk$rt"`)))
	require.Equal(t, [][]string{{"a", "BIGINT[]"}, {"m", "MAP(VARCHAR, INTEGER)"}, {"ar", "STRUCT(x BIGINT, y DOUBLE[])[]"},
		{"mr", "MAP(INTEGER, STRUCT(x BIGINT))"}, {"aa", "BIGINT[][]"}},
		run(t, e, `SELECT column_name, column_type FROM (DESCRIBE SELECT a, m, ar, mr, aa FROM "pk$rt")`))
	require.Equal(t, want[:1], run(t, e, fmt.Sprintf(q, "pk"))) // the lake's row, from a file of the first schema
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, fmt.Sprintf(q, "pk")))

	requireRefused(t, e, map[string]error{
		"ALTER TABLE pk ALTER COLUMN a.element TYPE INT":          engine.ErrUnsupported, // narrowing
		"ALTER TABLE pk ALTER COLUMN m.value TYPE SMALLINT":       engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN m.key TYPE STRING":           engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN mr.key TYPE BIGINT":          engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN ms.element TYPE BIGINT":      engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN a.element COMMENT 'c'":       engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN a TYPE ARRAY<DOUBLE>":        engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN ar.element TYPE ROW<x INT>":  engine.ErrUnsupported,
		"ALTER TABLE pk ALTER COLUMN a.x TYPE BIGINT":             engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN m.values TYPE BIGINT":        engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN a.element.x TYPE BIGINT":     engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN ar.element.nope TYPE BIGINT": engine.ErrInvalid,
		"ALTER TABLE pk ALTER COLUMN ar.x TYPE BIGINT":            engine.ErrInvalid,
	})
	requireRefusedSaying(t, e, map[string]string{
		"ALTER TABLE pk ALTER COLUMN a.element TYPE INT":          `"a.element" cannot change from BIGINT to INT`,
		"ALTER TABLE pk ALTER COLUMN m.key TYPE STRING":           `whose keys keep their type`,
		"ALTER TABLE pk ALTER COLUMN ms.element TYPE BIGINT":      `"ms" is of type MULTISET<INT>, whose elements keep their type`,
		"ALTER TABLE pk ALTER COLUMN a.x TYPE BIGINT":             `name its elements a.element`,
		"ALTER TABLE pk ALTER COLUMN m.values TYPE BIGINT":        `name its values m.value`,
		"ALTER TABLE pk ALTER COLUMN ar.element.nope TYPE BIGINT": `ROW column "ar.element" has no field "nope"`,
		"ALTER TABLE pk ALTER COLUMN a TYPE ARRAY<DOUBLE>":        `ALTER COLUMN a.element TYPE`,
		"ALTER TABLE pk ALTER COLUMN a.element COMMENT 'c'":       `has no comment`,
	})
}

// TestAlterTableIfExists: ALTER TABLE IF EXISTS of a table, or a database,
// that is not there does nothing; of one that is, it changes it; without
// IF EXISTS a missing table is NOT_FOUND.
func TestAlterTableIfExists(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (id BIGINT)")
	for _, q := range []string{
		"ALTER TABLE IF EXISTS nope RENAME TO other",
		"ALTER TABLE IF EXISTS nope ADD COLUMN z INT",
		"ALTER TABLE IF EXISTS nodb.t SET ('a' = 'b')",
	} {
		run(t, e, q)
	}
	run(t, e, "ALTER TABLE IF EXISTS t ADD COLUMN z INT")
	run(t, e, "INSERT INTO t VALUES (1, 2)")
	require.Equal(t, [][]string{{"1", "2"}}, run(t, e, `SELECT * FROM "t$rt"`))
	requireRefused(t, e, map[string]error{
		"ALTER TABLE nope ADD COLUMN z INT":             engine.ErrNotFound,
		`ALTER TABLE IF EXISTS "t$rt" ADD COLUMN y INT`: engine.ErrInvalid,
	})
	_, err := e.Execute(context.Background(), plan.Analyze(`SELECT * FROM other`))
	require.Error(t, err, "the missing table was not renamed into being")
}

// TestFlinkAndSparkAlterListsAreOneSchemaChange: Flink's ADD (...), MODIFY,
// RENAME c TO d and DROP (...), and Spark's ADD COLUMNS (...) change the
// table as the single-column forms do, each statement as one schema; a
// list with one refused part changes nothing.
func TestFlinkAndSparkAlterListsAreOneSchemaChange(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (id BIGINT, a INT NOT NULL, b STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
	run(t, e, "INSERT INTO t VALUES (1, 10, 'x')")
	schemas := func() string { return run(t, e, `SELECT count(*) FROM "t$schemas"`)[0][0] }
	columns := func() [][]string {
		return run(t, e, `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "t$rt")`)
	}
	require.Equal(t, "1", schemas())

	run(t, e, "ALTER TABLE t ADD (c1 DOUBLE, c2 STRING COMMENT 'two' FIRST)")
	require.Equal(t, "2", schemas(), "one schema for the list")
	run(t, e, "ALTER TABLE t ADD COLUMNS (c3 INT, c4 DATE)")
	run(t, e, "ALTER TABLE t MODIFY a BIGINT") // wider, and NOT NULL dropped as Flink's definition says
	run(t, e, "ALTER TABLE t MODIFY (c3 BIGINT COMMENT 'three', b STRING)")
	run(t, e, "ALTER TABLE t RENAME c1 TO d1")
	run(t, e, "ALTER TABLE t DROP (c4, c2)")
	require.Equal(t, "7", schemas())
	require.Equal(t, [][]string{{"id", "BIGINT"}, {"a", "BIGINT"}, {"b", "VARCHAR"}, {"d1", "DOUBLE"}, {"c3", "BIGINT"}}, columns())
	require.Equal(t, [][]string{{"BIGINT NOT NULL", "BIGINT"}}, run(t, e, `SELECT json_extract_string(fields, '$[0].type'), json_extract_string(fields, '$[1].type') FROM "t$schemas" ORDER BY schema_id DESC LIMIT 1`))
	require.Equal(t, [][]string{{"1", "10", "x", "(null)", "(null)"}}, run(t, e, `SELECT * FROM "t$rt"`))
	require.Equal(t, [][]string{{"three"}}, run(t, e, `SELECT json_extract_string(fields, '$[4].description') FROM "t$schemas" ORDER BY schema_id DESC LIMIT 1`))

	// Any refused part refuses the whole statement: no schema is written.
	for sql, says := range map[string]string{
		"ALTER TABLE t ADD (c5 INT, b INT)":                   "exists",
		"ALTER TABLE t ADD COLUMNS (c5 INT, c6 INT NOT NULL)": "cannot be added NOT NULL",
		"ALTER TABLE t MODIFY (a BIGINT, b INT)":              "cannot change from STRING to INT",
		"ALTER TABLE t MODIFY a BIGINT NOT NULL":              "cannot become NOT NULL",
		"ALTER TABLE t MODIFY id INT":                         "key column",
		"ALTER TABLE t DROP (c3, id)":                         "key column",
		"ALTER TABLE t DROP (c3, nope)":                       `no column "nope"`,
		"ALTER TABLE t MODIFY a BIGINT AFTER b":               "cannot move a column",
	} {
		_, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.ErrorContains(t, err, says, sql)
		require.Equal(t, "7", schemas(), sql)
	}
	require.Len(t, columns(), 5)
}

// TestCreateTableTakesDuckDBArrays: CREATE TABLE and ADD COLUMN take
// DuckDB's INT[] as ARRAY<INT> (it was a parse error); a fixed size is
// refused, naming the Paimon spelling.
func TestCreateTableTakesDuckDBArrays(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (id BIGINT, a INT[], m MAP<STRING, VARCHAR[]>, n BIGINT[][] NOT NULL)")
	run(t, e, "ALTER TABLE t ADD COLUMN d DOUBLE[]")
	run(t, e, "INSERT INTO t VALUES (1, [1, 2], MAP {'k': ['x']}, [[3], []], [1.5])")
	require.Equal(t, [][]string{{`{"type":"ARRAY","element":"INT"}`, `{"type":"ARRAY NOT NULL","element":{"type":"ARRAY","element":"BIGINT"}}`, `{"type":"ARRAY","element":"DOUBLE"}`}},
		run(t, e, `SELECT json_extract_string(fields, '$[1].type'), json_extract_string(fields, '$[3].type'), json_extract_string(fields, '$[4].type') FROM "t$schemas" ORDER BY schema_id DESC LIMIT 1`))
	require.Equal(t, [][]string{{"[1, 2]", "{k=[x]}", "[[3], []]", "[1.5]"}}, run(t, e, `SELECT a::VARCHAR, m::VARCHAR, n::VARCHAR, d::VARCHAR FROM "t$rt"`))
	_, err := e.Execute(context.Background(), plan.Analyze("CREATE TABLE u (a INT[3])"))
	require.ErrorContains(t, err, "fixed-size array")
}
