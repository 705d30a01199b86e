//go:build duckdb_arrow

package query

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// countedScan is a scan of n one-row batches that fails after them when
// err is set, and counts its releases.
type countedScan struct {
	array.RecordReader
	released int
	err      error
}

func (c *countedScan) Release() { c.released++; c.RecordReader.Release() }
func (c *countedScan) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.RecordReader.Err()
}

func newCountedScan(t *testing.T, mem memory.Allocator, n int, err error) *countedScan {
	sc := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var recs []arrow.RecordBatch
	for i := 0; i < n; i++ {
		b := array.NewRecordBuilder(mem, sc)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	r, rerr := array.NewRecordReader(sc, recs)
	require.NoError(t, rerr)
	for _, rec := range recs {
		rec.Release()
	}
	return &countedScan{RecordReader: r, err: err}
}

// TestReadAheadReleasesItsScan: a view's read-ahead hands on every batch
// in order and the scan's error, and releases the scan and every batch
// it read ahead whether it was read to the end, in part or not at all.
func TestReadAheadReleasesItsScan(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fail := errors.New("file gone")
	for _, read := range []int{0, 1, 3, 10} {
		src := newCountedScan(t, mem, 10, fail)
		r := newReadAhead(src)
		for i := 0; i < read; i++ {
			require.True(t, r.Next())
			require.EqualValues(t, i, r.RecordBatch().Column(0).(*array.Int64).Value(0))
		}
		if read == 10 {
			require.False(t, r.Next())
			require.ErrorIs(t, r.Err(), fail)
		}
		r.Release()
		require.Equal(t, 1, src.released, "read %d", read)
	}
}
