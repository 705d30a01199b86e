//go:build duckdb_arrow

package query

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

// TestInsertWithTooManyValuesIsRefused: INSERT INTO t VALUES with six
// values into a three-column table was accepted and wrote the first three;
// every mismatch between the columns an INSERT fills and the values it
// gives is now INVALID_ARGUMENT naming the table, the counts and the row,
// and nothing is written.
func TestInsertWithTooManyValuesIsRefused(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	run(t, e, "CREATE TABLE t (a INT, b INT, s STRING)")
	for _, c := range []struct{ sql, want string }{
		{`INSERT INTO t VALUES (7,7,'s7','x7','SURPLUS',42)`, `INSERT INTO default.t: the table has 3 columns but VALUES row 1 (7,7,'s7','x7','SURPLUS',42) has 6 values`},
		{`INSERT INTO t VALUES (1, 1, 'a'), (2, 2)`, `the table has 3 columns but VALUES row 2 (2, 2) has 2 values`},
		{`INSERT INTO t VALUES (1, 1)`, `the table has 3 columns but VALUES row 1 (1, 1) has 2 values`},
		{`INSERT INTO t (a, b) VALUES (1, 2, 3)`, `the column list names 2 columns but VALUES row 1 (1, 2, 3) has 3 values`},
		{`INSERT INTO t (a, b, s) VALUES (1, 2)`, `the column list names 3 columns but VALUES row 1 (1, 2) has 2 values`},
		{`INSERT INTO t SELECT 1, 2, 'x', 'extra'`, `INSERT INTO default.t: the table has 3 columns but the query returns 4`},
		{`INSERT INTO t SELECT 1, 2`, `the table has 3 columns but the query returns 2`},
		{`INSERT INTO t (a) SELECT 1, 2`, `the column list names 1 column but the query returns 2`},
		{`INSERT INTO t VALUES (1, 2, 'x', 4) ORDER BY 1`, `the table has 3 columns but the query returns 4`},
	} {
		_, err := e.Execute(ctx, plan.Analyze(c.sql))
		require.ErrorIs(t, err, engine.ErrInvalid, c.sql)
		require.ErrorContains(t, err, c.want, c.sql)
	}
	// A prepared INSERT with a placeholder too many is refused when prepared.
	_, err := e.Prepare(ctx, plan.Analyze(`INSERT INTO t VALUES (?, ?, ?, ?)`))
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, `the table has 3 columns but VALUES row 1 (?, ?, ?, ?) has 4 values`)
	require.Empty(t, run(t, e, `SELECT * FROM "t$rt"`), "a refused INSERT writes nothing")
	// What fits still goes in; a column list may leave columns out.
	run(t, e, `INSERT INTO t VALUES (1, 2, 'x'), (3, 4, 'y')`)
	run(t, e, `INSERT INTO t (s, a) VALUES ('z', 5)`)
	run(t, e, `INSERT INTO t SELECT 6, 7, 'w'`)
	require.Equal(t, [][]string{{"1", "2", "x"}, {"3", "4", "y"}, {"5", "(null)", "z"}, {"6", "7", "w"}}, run(t, e, `SELECT * FROM "t$rt" ORDER BY a`))
}
