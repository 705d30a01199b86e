package arrowutil

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// TestTakeRecordMatchesTheTakeKernel: TakeRecord returns exactly the rows
// arrow-go's Take kernel returns, for every type of filterTypes, with and
// without nulls, of sliced and all-null columns, for random positions in
// any order, repeated, and none, given as 32- or 64-bit integers.
func TestTakeRecordMatchesTheTakeKernel(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 9))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for round := 0; round < 60; round++ {
		rec := randomRecord(rng)
		n := int(rec.NumRows())
		rows := make([]int32, rng.IntN(2*n))
		for i := range rows {
			rows[i] = rng.Int32N(int32(n))
		}
		if rng.IntN(2) == 0 { // ascending, as a split by bucket takes them
			rows = rows[:0]
			for r := int32(0); r < int32(n); r++ {
				if rng.IntN(4) == 0 {
					rows = append(rows, r)
				}
			}
		}
		var got arrow.RecordBatch
		var err error
		if round%2 == 0 {
			got, err = TakeRecord(ctx, mem, rec, rows)
		} else { // positions as 64-bit integers, as the lake's writes hold them
			wide := make([]int64, len(rows))
			for i, r := range rows {
				wide[i] = int64(r)
			}
			got, err = TakeRecord(ctx, mem, rec, wide)
		}
		require.NoError(t, err)
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		ib.AppendValues(rows, nil)
		idx := ib.NewArray()
		ib.Release()
		wantD, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(idx))
		require.NoError(t, err)
		idx.Release()
		want := wantD.(*compute.RecordDatum).Value
		requireSameRows(t, want, got, round)
		got.Release()
		want.Release()
		rec.Release()
	}
}

// TestTakeRecordRefusesARowOutOfRange: a position past the batch is an
// error, not a read past a buffer.
func TestTakeRecordRefusesARowOutOfRange(t *testing.T) {
	a := randomArray(rand.New(rand.NewPCG(1, 1)), arrow.BinaryTypes.String, 3, 0)
	defer a.Release()
	rec := oneColumn(a)
	defer rec.Release()
	for _, r := range []int32{3, -1} {
		_, err := TakeRecord(context.Background(), memory.DefaultAllocator, rec, []int32{0, r})
		require.ErrorContains(t, err, "take of row "+strconv.Itoa(int(r))+" from 3 rows")
	}
	_, err := TakeRecord(context.Background(), memory.DefaultAllocator, rec, []int64{0, 1 << 40})
	require.ErrorContains(t, err, "take of row 1099511627776 from 3 rows")
}
