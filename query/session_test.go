//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

func runIn(t *testing.T, e *Engine, db, sql string) [][]string {
	t.Helper()
	res, err := e.Execute(engine.WithDatabase(context.Background(), db), plan.Analyze(sql))
	require.NoError(t, err, "%s: %s", db, sql)
	if res.Reader == nil {
		return nil
	}
	return drain(t, res.Reader)
}

// TestUnqualifiedNamesResolveInTheSessionsDatabase: two databases hold a
// table t each; statements of sessions in either, interleaved at random on
// the engine's shared connections, read, write and create in their own.
func TestUnqualifiedNamesResolveInTheSessionsDatabase(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE shop")
	for _, db := range []string{"default", "shop"} {
		runIn(t, e, db, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
		runIn(t, e, db, fmt.Sprintf("INSERT INTO t VALUES (1, '%s')", db))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]int{"default": 1, "shop": 1}
	for i := 0; i < 40; i++ {
		db := []string{"default", "shop"}[rng.IntN(2)]
		switch rng.IntN(4) {
		case 0:
			want[db]++
			runIn(t, e, db, fmt.Sprintf("INSERT INTO t VALUES (%d, '%s')", want[db], db))
		case 1:
			// A statement with no flightd table between them.
			require.Equal(t, [][]string{{"1"}}, runIn(t, e, db, "SELECT 1"))
		case 2:
			require.Equal(t, [][]string{{fmt.Sprint(want[db]), db}}, runIn(t, e, db, `SELECT count(*), min(v) FROM "t$rt"`))
		default:
			require.Equal(t, [][]string{{fmt.Sprint(want[db]), db}}, runIn(t, e, db, "SELECT count(*), max(v) FROM t$rt"))
		}
	}
	// Qualified names mean what they say in any session, beside unqualified ones.
	require.Equal(t, [][]string{{"shop", "default"}},
		runIn(t, e, "shop", `SELECT a.v, b.v FROM "t$rt" a JOIN "default"."t$rt" b USING (id) WHERE id = 1`))
	// A CTE still shadows a table of its name.
	require.Equal(t, [][]string{{"42"}}, runIn(t, e, "shop", "WITH t AS (SELECT 42 AS x) SELECT * FROM t"))
	// DDL lands in the session's database.
	runIn(t, e, "shop", "CREATE TABLE only_here (x INT)")
	runIn(t, e, "shop", "INSERT INTO only_here VALUES (7)")
	require.Equal(t, [][]string{{"7"}}, run(t, e, `SELECT * FROM shop."only_here$rt"`))
	_, err := e.Execute(context.Background(), plan.Analyze("SELECT * FROM only_here"))
	require.Error(t, err, "only_here is not in default")
	p, err := e.Prepare(engine.WithDatabase(context.Background(), "shop"), plan.Analyze("SELECT * FROM only_here"))
	require.NoError(t, err)
	require.Equal(t, "x", p.DatasetSchema.Field(0).Name)
}

func TestUseNamesADatabaseThatExists(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE Shop")
	for _, q := range []string{"USE shop", "use SHOP", `USE "Shop";`} {
		res, err := e.Execute(context.Background(), plan.Analyze(q))
		require.NoError(t, err, q)
		require.Equal(t, "shop", res.Database, q)
		require.True(t, res.Update)
	}
	p, err := e.Prepare(context.Background(), plan.Analyze("USE shop"))
	require.NoError(t, err)
	require.True(t, p.Update)
	_, err = e.Execute(context.Background(), plan.Analyze("USE nowhere"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	require.ErrorContains(t, err, `database "nowhere" does not exist`)
	_, err = e.Execute(context.Background(), plan.Analyze("USE a.b"))
	require.True(t, errors.Is(err, engine.ErrInvalid), "%v", err)
}

// A session whose database was dropped says so, instead of DuckDB's
// "table does not exist".
func TestSessionOfADroppedDatabaseSaysSo(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE gone")
	runIn(t, e, "gone", "CREATE TABLE t (x INT)")
	run(t, e, "DROP DATABASE gone CASCADE")
	_, err := e.Execute(engine.WithDatabase(context.Background(), "gone"), plan.Analyze("SELECT * FROM t"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	require.ErrorContains(t, err, `the session's database "gone" does not exist any more`)
}

// Symptom: SELECT * FROM information_schema.tables answered NOT_FOUND
// "database information_schema does not exist".
func TestInformationSchemaIsDuckDBs(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (x INT)")
	run(t, e, "SELECT count(*) FROM t") // DuckDB's catalog holds the tables statements read
	rows := run(t, e, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name = 't'")
	require.Equal(t, [][]string{{"default", "t"}}, rows)
	run(t, e, "SELECT count(*) FROM pg_catalog.pg_class")
}

// Symptom: a dropped table, named unqualified, answered "__flightd_scan is
// flightd's internal table scan ..." (its view was still in DuckDB's catalog).
func TestDroppedTableNamedUnqualifiedIsMissing(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE gone (x INT)")
	run(t, e, "SELECT count(*) FROM gone")
	run(t, e, "DROP TABLE gone")
	_, err := e.Execute(context.Background(), plan.Analyze("SELECT count(*) FROM gone"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	require.ErrorContains(t, err, "table default.gone does not exist")
	require.NotContains(t, err.Error(), "internal table scan")
	run(t, e, "SELECT count(*) FROM pg_class") // DuckDB's own unqualified names still resolve
}
