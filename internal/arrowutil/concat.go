// Package arrowutil holds small Arrow helpers that arrow-go does not have.
package arrowutil

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ConcatRecords concatenates batches of one schema into one batch. A single
// batch is returned retained, not copied. The caller releases the result.
func ConcatRecords(recs []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("arrowutil: no batches to concatenate")
	}
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	sc := recs[0].Schema()
	cols := make([]arrow.Array, sc.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, fmt.Errorf("arrowutil: concatenate column %q: %w", sc.Field(i).Name, err)
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(sc, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}
