package lakestream

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/union"
)

// keepKeyRows keeps the rows (and their change kinds) the key filter lets
// through, in order, drops batches left empty and passes the others as
// they are.
func TestKeepKeyRowsKeepsKindsAligned(t *testing.T) {
	batch := func(ids ...int64) arrow.RecordBatch { return int64Rows(memory.DefaultAllocator, ids...) }
	log := []union.LogBatch{
		{Rec: batch(1, 2, 1, 3), Kinds: []byte{union.KindInsert, union.KindInsert, union.KindUpdateBefore, union.KindInsert}},
		{Rec: batch(4, 5)},
		{Rec: batch(1, 1), Kinds: []byte{union.KindUpdateAfter, union.KindDelete}},
		{Rec: batch(2)},
		{Rec: batch(5, 1, 1, 6), Kinds: []byte{union.KindInsert, union.KindUpdateBefore, union.KindUpdateAfter, union.KindInsert}}, // one range: sliced
	}
	only1 := func(rec arrow.RecordBatch) []bool {
		ids := rec.Column(0).(*array.Int64)
		keep, all := make([]bool, ids.Len()), true
		for i := range keep {
			keep[i] = ids.Value(i) == 1
			all = all && keep[i]
		}
		if all {
			return nil
		}
		return keep
	}
	out, err := keepKeyRows(context.Background(), memory.DefaultAllocator, only1, log)
	require.NoError(t, err)
	defer releaseLog(out)
	require.Len(t, out, 3)
	require.Equal(t, []int64{1, 1}, out[0].Rec.Column(0).(*array.Int64).Int64Values())
	require.Equal(t, []byte{union.KindInsert, union.KindUpdateBefore}, out[0].Kinds)
	require.Equal(t, []int64{1, 1}, out[1].Rec.Column(0).(*array.Int64).Int64Values())
	require.Equal(t, []byte{union.KindUpdateAfter, union.KindDelete}, out[1].Kinds, "a batch that is all kept passes as it is")
	require.Equal(t, []int64{1, 1}, out[2].Rec.Column(0).(*array.Int64).Int64Values())
	require.Equal(t, []byte{union.KindUpdateBefore, union.KindUpdateAfter}, out[2].Kinds)

	same, err := keepKeyRows(context.Background(), memory.DefaultAllocator, nil, []union.LogBatch{{Rec: batch(7)}})
	require.NoError(t, err)
	defer releaseLog(same)
	require.Len(t, same, 1)
}
