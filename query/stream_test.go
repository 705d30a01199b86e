//go:build duckdb_arrow

package query

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

// streamRows reads batches of a stream until it has n rows (an empty
// batch, the end of the current rows, shows as "--").
func streamRows(t *testing.T, r array.RecordReader, n int) []string {
	t.Helper()
	var out []string
	rows := 0
	for rows < n {
		require.True(t, r.Next(), "the stream ended: %v", r.Err())
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			out = append(out, "--")
			continue
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, rec.NumCols())
			for j := range vals {
				vals[j] = strings.Clone(rec.Column(j).ValueStr(i))
			}
			out = append(out, strings.Join(vals, " "))
			rows++
		}
	}
	return out
}

func TestSetStreaming(t *testing.T) {
	e := newTestEngine(t)
	for sql, want := range map[string]bool{"SET streaming = true": true, "set STREAMING to 'on'": true, "SET SESSION streaming = false;": false, "RESET streaming": false, "SET streaming = 1": true} {
		res, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.NoError(t, err, sql)
		require.NotNil(t, res.Streaming, sql)
		require.Equal(t, want, *res.Streaming, sql)
	}
	for sql, msg := range map[string]string{"SET threads = 4": "SET threads is not allowed", "SET streaming = maybe": "takes true or false", "SET streaming": "expected = or TO", "SET streaming = true, x = 1": "end of statement"} {
		_, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.ErrorIs(t, err, engine.ErrInvalid, sql)
		require.ErrorContains(t, err, msg, sql)
	}
}

// TestStreamingReadReturnsRowsThenChanges: in a streaming session, a scan
// of t$rt returns the current rows as +I, an empty batch, then every
// change written after, filtered by its WHERE; a position resumes after
// it; t$changelog starts with the retained changelog; other queries are
// refused.
func TestStreamingReadReturnsRowsThenChanges(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE s")
	run(t, e, "CREATE TABLE s.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
	run(t, e, "INSERT INTO s.t VALUES (1, 'a'), (2, 'b'), (9, 'z')")
	ctx, cancel := context.WithCancel(engine.WithStreaming(context.Background(), true))
	defer cancel()

	prep, err := e.Prepare(ctx, plan.Analyze(`SELECT id, v FROM s."t$rt" WHERE id < 5`))
	require.NoError(t, err)
	require.Equal(t, []string{"_change_type", "id", "v"}, fieldNamesOf(prep.DatasetSchema))

	res, err := e.Execute(ctx, plan.Analyze(`SELECT id, v FROM s."t$rt" WHERE id < 5`))
	require.NoError(t, err)
	r := res.Reader
	defer r.Release()
	require.Equal(t, []string{"+I 1 a", "+I 2 b"}, streamRows(t, r, 2))
	run(t, e, "INSERT INTO s.t VALUES (2, 'c'), (3, 'd'), (7, 'out')")
	require.Equal(t, []string{"--", "-U 2 b", "+U 2 c", "+I 3 d"}, streamRows(t, r, 3))

	// The full schema with its positions; resume after offset 3 (the
	// first insert of three rows is offsets 0-2, the second 3-5).
	res2, err := e.Execute(ctx, plan.Analyze(`SELECT * FROM s."t$rt" WHERE (_bucket = 0 AND _log_offset > 3) OR (_bucket = 5 AND _log_offset >= 0)`))
	require.NoError(t, err)
	r2 := res2.Reader
	defer r2.Release()
	got := streamRows(t, r2, 2)
	require.Len(t, got, 3)
	require.Equal(t, "--", got[0], "no current rows of a bucket the position names: %v", got)
	require.True(t, strings.HasPrefix(got[1], "+I 4 0 "), got)
	require.True(t, strings.HasSuffix(got[1], " 3 d"), got)
	require.True(t, strings.HasPrefix(got[2], "+I 5 0 "), got)

	// _log_offset > n alone positions every bucket.
	res3, err := e.Execute(ctx, plan.Analyze(`SELECT _log_offset, id FROM s."t$rt" WHERE _log_offset >= 5`))
	require.NoError(t, err)
	r3 := res3.Reader
	defer r3.Release()
	require.Equal(t, []string{"+I 5 7"}, streamRows(t, r3, 1))

	// t$changelog starts with the changelog the log holds.
	res4, err := e.Execute(ctx, plan.Analyze(`SELECT id, v FROM s."t$changelog"`))
	require.NoError(t, err)
	r4 := res4.Reader
	defer r4.Release()
	require.Equal(t, []string{"+I 1 a", "+I 2 b", "+I 9 z", "-U 2 b", "+U 2 c", "+I 3 d", "+I 7 out"}, streamRows(t, r4, 7))
	run(t, e, "INSERT INTO s.t VALUES (1, 'x')")
	require.Equal(t, []string{"--", "-U 1 a", "+U 1 x"}, streamRows(t, r4, 2))
	require.Equal(t, []string{"-U 1 a", "+U 1 x"}, streamRows(t, r, 2))

	for sql, msg := range map[string]string{
		`SELECT count(*) FROM s."t$rt"`:      "this query is not one",
		`SELECT * FROM s.t`:                  "is not t$rt or t$changelog",
		`SELECT nope FROM s."t$rt"`:          "selects a column",
		`EXPLAIN SELECT * FROM s."t$rt"`:     "not a query flightd can stream",
		`SELECT * FROM s."t$rt" WHERE v = 1`: "compares it with a value of another type",
		`SELECT * FROM s."t$rt" WHERE (_bucket = 0 AND _log_offset > 1) OR (_bucket = 0 AND _log_offset > 2)`: "names bucket 0 twice",
	} {
		_, err := e.Execute(ctx, plan.Analyze(sql))
		require.ErrorIs(t, err, engine.ErrInvalid, sql)
		require.ErrorContains(t, err, msg, sql)
	}
	cancel()
	require.False(t, r.Next())
	require.ErrorIs(t, r.Err(), context.Canceled)
}

func fieldNamesOf(sc *arrow.Schema) []string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return out
}
