//go:build duckdb_arrow

package query

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/query/plan"
)

// TestWideResultsComeInSmallBatches: a result of wide values was built in
// batches of 8192 rows whatever their size (8 GiB for 1 MiB strings, past
// what a string column's int32 offsets reach); batches now end after about
// resultBatchBytes of values.
func TestWideResultsComeInSmallBatches(t *testing.T) {
	e := newTestEngine(t)
	res, err := e.Execute(context.Background(), plan.Analyze(`SELECT i, repeat('x', 1048576) AS s FROM range(100) AS r(i)`))
	require.NoError(t, err)
	defer res.Reader.Release()
	var rows int64
	for res.Reader.Next() {
		rec := res.Reader.RecordBatch()
		require.LessOrEqual(t, rec.NumRows(), int64(resultBatchBytes>>20)+1)
		rows += rec.NumRows()
	}
	require.NoError(t, res.Reader.Err())
	require.EqualValues(t, 100, rows)
}
