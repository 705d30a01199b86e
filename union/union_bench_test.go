package union

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkPrimaryKey merges log batches (no lake) of 10k rows each.
func BenchmarkPrimaryKey(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d/lake=0", n), func(b *testing.B) {
			var recs []arrow.RecordBatch
			for start := 0; start < n; start += 10_000 {
				rows := make([]row, 10_000)
				for i := range rows {
					rows[i] = row{int64(start + i), "k", int64(i)}
				}
				recs = append(recs, build(memory.DefaultAllocator, rows))
			}
			for b.Loop() {
				log := make([]LogBatch, len(recs))
				for i, r := range recs {
					r.Retain()
					log[i] = LogBatch{Rec: r}
				}
				r, err := PrimaryKey(context.Background(), memory.DefaultAllocator, testSchema, []int{0}, nil, log)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for r.Next() {
					got += int(r.RecordBatch().NumRows())
				}
				r.Release()
				if got != n {
					b.Fatalf("got %d rows", got)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			for _, r := range recs {
				r.Release()
			}
		})
	}
}
