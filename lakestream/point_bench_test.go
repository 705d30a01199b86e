package lakestream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lakestream"
)

// BenchmarkPointReadAfterWrite: a point read of t$rt right after a
// single-row write, as a client that writes and reads back does, over a
// 4-bucket primary-key table whose log already holds log=N single-row
// entries. Only the read is timed (read-us).
func BenchmarkPointReadAfterWrite(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("log=%d", n), func(b *testing.B) {
			ctx := context.Background()
			e := openEnv(b, b.TempDir(), 1<<30)
			createTable(b, e, "pk", 4)
			write := func(id int64) {
				rec := dataBatch([]int64{id}, []string{"v"})
				_, err := e.ls.Write(ctx, "db", "pk", rec)
				rec.Release()
				require.NoError(b, err)
			}
			id := int64(0)
			for ; id < int64(n); id++ {
				write(id)
			}
			var read time.Duration
			for b.Loop() {
				id++
				write(id)
				start := time.Now()
				r, err := e.ls.ScanWith(ctx, "db", "pk", lakestream.ScanOptions{Realtime: true,
					Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{id}}}})
				require.NoError(b, err)
				var rows int64
				for r.Next() {
					rows += r.RecordBatch().NumRows()
				}
				require.NoError(b, r.Err())
				r.Release()
				read += time.Since(start)
				if rows != 1 {
					b.Fatalf("key %d: %d rows", id, rows)
				}
			}
			b.ReportMetric(float64(read.Microseconds())/float64(b.N), "read-us")
		})
	}
}
