//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// TestStatementPlannedBeforeAnotherEngineAddsAColumnRunsOnTheNewSchema:
// another engine commits a schema (a column added) after a statement read
// the table's schema and before its scan. The scan refuses the stale plan
// (its projection would name columns by old positions) and the statement
// is planned again, so it succeeds and sees the new column.
func TestStatementPlannedBeforeAnotherEngineAddsAColumnRunsOnTheNewSchema(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	added := 0
	addColumn := func() {
		afterSchema = nil
		tb, err := e.ls.Catalog().GetTable(t.Context(), "default", "t")
		require.NoError(t, err)
		ns := *tb.Schema()
		ns.Fields = append([]paimontype.DataField(nil), ns.Fields...)
		added++
		ns.HighestFieldID++
		dt, err := paimontype.ParseType("INT")
		require.NoError(t, err)
		ns.Fields = append(ns.Fields, paimontype.DataField{ID: ns.HighestFieldID, Name: fmt.Sprintf("n%d", added), Type: dt})
		ns.ID++
		data, err := ns.MarshalJSON()
		require.NoError(t, err)
		require.NoError(t, e.ls.Catalog().FileIO().CreateExclusive(context.Background(),
			filepath.Join(tb.Path(), "schema", fmt.Sprintf("schema-%d", ns.ID)), data))
	}
	defer func() { afterSchema = nil }()
	for _, tc := range []struct{ sql, want string }{
		{`SELECT * FROM "t$rt" WHERE id = 1`, "[[1 a (null)]]"},               // streamed, filtered
		{`SELECT v, id FROM "t$rt" WHERE id = 2`, "[[b 2]]"},                  // streamed, projected
		{`SELECT * FROM "t$rt" WHERE id = 2`, "[[2 b (null) (null) (null)]]"}, // streamed, filtered
		{`SELECT t.*, u.id FROM "t$rt" t JOIN "t$rt" u ON t.id = u.id ORDER BY 1`, // through DuckDB
			"[[1 a (null) (null) (null) (null) 1] [2 b (null) (null) (null) (null) 2]]"},
	} {
		afterSchema = addColumn
		require.Equal(t, tc.want, fmt.Sprint(run(t, e, tc.sql)), tc.sql)
		require.Nil(t, afterSchema, "the schema changed during %s", tc.sql)
	}
}
