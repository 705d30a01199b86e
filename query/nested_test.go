//go:build duckdb_arrow

package query

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/query/plan"
)

// TestNestedResults: lists, structs and maps come out of DuckDB as Arrow
// nested types (not text), so INSERT ... SELECT fills nested columns and a
// query through DuckDB returns what a plain scan returns.
func TestNestedResults(t *testing.T) {
	e := newTestEngine(t)
	res, err := e.Execute(context.Background(), plan.Analyze(`SELECT [1, 2, NULL]::INTEGER[] AS a, {'x': 5, 'y': 'z', "we ird": 1.5::DECIMAL(10,2)} AS r,
		MAP {'k': 1, 'b': 2} AS m, [[1], [2, 3]] AS ll, [{'a': 1}] AS ls, NULL::VARCHAR[] AS n`))
	require.NoError(t, err)
	sc := res.Reader.Schema()
	require.Equal(t, arrow.LIST, sc.Field(0).Type.ID())
	require.Equal(t, arrow.STRUCT, sc.Field(1).Type.ID())
	require.Equal(t, arrow.MAP, sc.Field(2).Type.ID())
	require.Equal(t, arrow.LIST, sc.Field(3).Type.ID())
	require.Equal(t, arrow.LIST, sc.Field(5).Type.ID())
	require.Equal(t, [][]string{{`[1,2,null]`, `{"we ird":"1.5","x":5,"y":"z"}`, `[{"key":"k","value":1},{"key":"b","value":2}]`, `[[1],[2,3]]`, `[{"a":1}]`, `(null)`}}, drain(t, res.Reader))

	run(t, e, "CREATE TABLE n (id BIGINT, a ARRAY<INT>, m MAP<STRING, INT>, r ROW<x INT, y STRING>)")
	run(t, e, "INSERT INTO n SELECT 1, [1, 2, NULL], MAP {'k': 1}, {'x': 5, 'y': 'z'}")
	run(t, e, "INSERT INTO n VALUES (2, NULL, NULL, NULL)")
	plain := run(t, e, `SELECT * FROM "n$rt"`)
	sortRows(plain)
	require.Equal(t, plain, run(t, e, `SELECT * FROM "n$rt" ORDER BY id`), "DuckDB's result equals the plain scan")
	require.Equal(t, [][]string{{"1", "2", "z", "1"}, {"2", "(null)", "(null)", "(null)"}}, run(t, e, `SELECT id, a[2], r.y, m['k'] FROM "n$rt" ORDER BY id`))
}
