//go:build duckdb_arrow

package query

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
)

// TestCatalogListsEveryTableAfterARestart: an engine started over a
// warehouse that has tables lists all of them, as its first statement,
// in SHOW TABLES (the session's database), SHOW ALL TABLES, DESCRIBE and
// information_schema.tables and .columns, not only the tables a statement
// named since the start (it listed none); a table dropped behind its back
// goes from the listing.
func TestCatalogListsEveryTableAfterARestart(t *testing.T) {
	dir := t.TempDir()
	first := newTestEngineIn(t, dir)
	require.Empty(t, run(t, first, "SHOW TABLES"), "no table in default yet: none listed, no error")
	run(t, first, "CREATE DATABASE s")
	run(t, first, "CREATE TABLE s.t (id BIGINT, v STRING)")
	run(t, first, "CREATE TABLE s.w (id BIGINT, PRIMARY KEY (id) NOT ENFORCED)")
	run(t, first, "CREATE TABLE u (id BIGINT)")

	// A second engine over the same warehouse, as after a restart.
	again := func() *Engine {
		cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
		require.NoError(t, err)
		log, err := logstore.Open(t.TempDir(), logstore.DefaultOptions())
		require.NoError(t, err)
		t.Cleanup(func() { log.Close() })
		e, err := New(lakestream.New(cat, log, lakestream.Options{}), Options{Threads: 2, TempDir: t.TempDir(), MaxTempBytes: 1 << 30})
		require.NoError(t, err)
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := again()
	require.Equal(t, [][]string{{"u"}}, run(t, e, "SHOW TABLES"))
	e = again()
	require.Equal(t, [][]string{{"default", "u"}, {"s", "t"}, {"s", "w"}}, run(t, e, "SELECT table_schema, table_name FROM information_schema.tables ORDER BY ALL"))
	e = again()
	require.Equal(t, [][]string{{"t", "id"}, {"t", "v"}, {"u", "id"}, {"w", "id"}}, run(t, e, "SELECT table_name, column_name FROM information_schema.columns ORDER BY ALL"))
	e = again()
	require.Equal(t, [][]string{{"default", "u"}, {"s", "t"}, {"s", "w"}}, run(t, e, "SELECT schema, name FROM (SHOW ALL TABLES) ORDER BY ALL"))
	in := engine.WithDatabase(context.Background(), "s")
	res, err := e.Execute(in, plan.Analyze("SHOW TABLES"))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"t"}, {"w"}}, drain(t, res.Reader))
	require.Equal(t, [][]string{{"id", "BIGINT"}, {"v", "VARCHAR"}}, run(t, again(), "SELECT column_name, column_type FROM (DESCRIBE s.t)"))

	// Dropped by another process: gone from the listing.
	run(t, first, "DROP TABLE s.w")
	require.Equal(t, [][]string{{"default", "u"}, {"s", "t"}}, run(t, e, "SELECT table_schema, table_name FROM information_schema.tables ORDER BY ALL"))
}
