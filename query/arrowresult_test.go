//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/query/plan"
)

// resultTypes are expressions of every type a result may have, and
// whether its column takes the Arrow path (arrowResultTypes).
var resultTypes = []struct {
	expr  string
	arrow bool
}{
	{`true`, true}, {`1::TINYINT`, true}, {`-2::SMALLINT`, true}, {`3::INTEGER`, true}, {`-4::BIGINT`, true},
	{`5::UTINYINT`, true}, {`6::USMALLINT`, true}, {`7::UINTEGER`, true}, {`18446744073709551615::UBIGINT`, true},
	{`1.5::FLOAT`, true}, {`2.25::DOUBLE`, true},
	{`170141183460469231731687303715884105727::HUGEINT`, true}, {`-12::HUGEINT`, true},
	{`12.34::DECIMAL(4,2)`, true}, {`-123456789.123::DECIMAL(18,3)`, true}, {`12345678901234567890.12::DECIMAL(38,2)`, true},
	{`DATE '2024-02-29'`, true}, {`TIME '12:34:56.789'`, true},
	{`TIMESTAMP '2024-01-02 03:04:05.123456'`, true}, {`TIMESTAMP_S '2024-01-02 03:04:05'`, true},
	{`TIMESTAMP_MS '2024-01-02 03:04:05.123'`, true}, {`TIMESTAMP_NS '2024-01-02 03:04:05.123456789'`, true},
	{`TIMESTAMPTZ '2024-01-02 03:04:05.5+00'`, true},
	{`'héllo'`, true}, {`''`, true}, {`'\x00ab'::BLOB`, true}, {`NULL::VARCHAR`, true}, {`NULL::INTEGER`, true},
	{`[1, NULL, 3]`, true}, {`[['a'], [], NULL]`, true}, {`{'x': 1, 'y': 'b'}`, true},
	{`{'x': [1.5::DECIMAL(3,1)], 'y': {'z': DATE '2024-01-01'}}`, true},
	{`MAP {'a': 1, 'b': 2}`, true}, {`MAP {1: [TIMESTAMP '2024-01-01']}`, true},
	{`INTERVAL 1 DAY`, false}, {`gen_random_uuid() IS NOT NULL`, true}, {`'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID`, false},
	{`'{"a": 1}'::JSON`, false}, {`[1, 2]::INTEGER[2]`, false}, {`'101'::BIT`, false},
	{`5::UHUGEINT`, false}, {`TIMETZ '12:00:00+01'`, false},
	{`union_value(a := 1)`, false}, {`[INTERVAL 1 HOUR]`, false}, {`{'u': 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID}`, false},
}

// TestArrowResultsMatchRows: results through DuckDB's Arrow output have
// the types and values clients got from the row path, for every type that
// takes the Arrow path; the others keep the row path.
func TestArrowResultsMatchRows(t *testing.T) {
	e := newTestEngine(t)
	for _, c := range resultTypes {
		sql := `SELECT ` + c.expr + ` AS v FROM range(3)`
		e.forceRows.Store(true)
		rows, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.NoError(t, err, sql)
		want := rows.Reader.Schema()
		wantVals := drain(t, rows.Reader)
		e.forceRows.Store(false)
		res, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.NoError(t, err, sql)
		_, isArrow := res.Reader.(*arrowResult)
		require.Equal(t, c.arrow, isArrow, "%s: Arrow path", c.expr)
		require.True(t, arrow.TypeEqual(want.Field(0).Type, res.Reader.Schema().Field(0).Type),
			"%s: rows give %s, Arrow %s", c.expr, want.Field(0).Type, res.Reader.Schema().Field(0).Type)
		require.Equal(t, wantVals, drain(t, res.Reader), c.expr)
	}
}

// TestPreparedSchemaIsTheRunsForEveryType: Prepare's schema, which for a
// column of the Arrow path comes from the prepared statement and nothing
// runs, is the schema the statement's run streams, for every type.
func TestPreparedSchemaIsTheRunsForEveryType(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (id BIGINT, v STRING)")
	for _, c := range resultTypes {
		for _, sql := range []string{
			`SELECT ` + c.expr + ` AS v FROM range(3)`,
			`SELECT ` + c.expr + ` AS v, 1 AS v, t.* FROM t`,
		} {
			preparedAsRun(t, e, sql, sql)
		}
	}
}

// TestResultsStream: a result is produced as it is read; a statement
// whose whole result would never fit in memory gives its first batches.
func TestResultsStream(t *testing.T) {
	e := newTestEngine(t)
	res, err := e.Execute(context.Background(), plan.Analyze(`SELECT i, 'row ' || i::VARCHAR AS s FROM range(1000000000000) AS r(i)`))
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		require.True(t, res.Reader.Next())
	}
	require.NoError(t, res.Reader.Err())
	res.Reader.Release()
	require.Equal(t, [][]string{{"1"}}, run(t, e, `SELECT 1`))
}

// TestResultCancelledWhileStreaming: a statement whose context ends while
// its result streams stops with the context's error, and its connection
// then runs the next statement normally (no interrupt left behind).
func TestResultCancelledWhileStreaming(t *testing.T) {
	e := newTestEngine(t)
	cause := errors.New("client went away")
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancelCause(context.Background())
		res, err := e.Execute(ctx, plan.Analyze(`SELECT i FROM range(1000000000000) AS r(i)`))
		require.NoError(t, err)
		require.True(t, res.Reader.Next())
		cancel(cause)
		for res.Reader.Next() {
		}
		require.ErrorIs(t, res.Reader.Err(), cause)
		res.Reader.Release()
		require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT 1 + 1`))
	}
	// A statement over a table, cancelled while streaming: its views are
	// dropped with the result, on a connection that runs on.
	run(t, e, `CREATE TABLE big (i BIGINT)`)
	run(t, e, `INSERT INTO big SELECT * FROM range(100000)`)
	ctx, cancel := context.WithCancelCause(context.Background())
	res, err := e.Execute(ctx, plan.Analyze(`SELECT i + 1 FROM "big$rt", range(1000000)`))
	require.NoError(t, err)
	require.True(t, res.Reader.Next(), "%v", res.Reader.Err())
	cancel(cause)
	for res.Reader.Next() {
	}
	require.ErrorIs(t, res.Reader.Err(), cause)
	res.Reader.Release()
	require.Equal(t, [][]string{{"0"}}, run(t, e, `SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '__flightd%'`))
	// Cancelled while DuckDB computes, before the first row: Execute
	// or the first Next ends with the cause.
	ctx, cancel = context.WithCancelCause(context.Background())
	go cancel(cause)
	res, err = e.Execute(ctx, plan.Analyze(`SELECT count(*) FROM range(1000000000000) a, range(1000000000000) b`))
	if err == nil {
		for res.Reader.Next() {
		}
		err = res.Reader.Err()
		res.Reader.Release()
	}
	require.Error(t, err)
	require.True(t, errors.Is(err, cause) || errors.Is(err, context.Canceled), "%v", err)
	require.Equal(t, [][]string{{"3"}}, run(t, e, `SELECT 1 + 2`))
}

// TestInsertFromItselfReadsBeforeWriting: results stream, so an INSERT
// whose query reads the table it fills reads the whole result before it
// writes; it never reads its own rows back.
func TestInsertFromItselfReadsBeforeWriting(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, `CREATE TABLE t (i BIGINT, s STRING)`)
	run(t, e, `INSERT INTO t SELECT range, 'v' || range::VARCHAR FROM range(50000)`)
	for want := 100000; want <= 400000; want *= 2 {
		run(t, e, `INSERT INTO t SELECT * FROM "t$rt"`)
		require.Equal(t, [][]string{{strconv.Itoa(want), strconv.Itoa(want / 50000)}},
			run(t, e, `SELECT count(*), count(*) FILTER (WHERE s = 'v7') FROM "t$rt"`))
	}
}
