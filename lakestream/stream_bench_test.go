package lakestream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lakestream"
)

// BenchmarkStreamRound: a stream of a 4-bucket primary-key table whose log
// holds log=N un-tiered rows (written in batches of 1000 before the stream
// opened, never tiered) delivers a single-row write; the time from the
// write's return to its change (deliver-us; first-us for the first write,
// whose round replays the log either way). With carry=false every round
// replays the un-tiered rows below the stream's position, so it grows
// with N; with the key states carried between rounds it should not.
func BenchmarkStreamRound(b *testing.B) {
	for _, n := range []int{10_000, 200_000, 1_000_000} {
		for _, carry := range []bool{true, false} {
			b.Run(fmt.Sprintf("log=%d/carry=%v", n, carry), func(b *testing.B) {
				defer lakestream.SetStreamCarry(carry)()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				e := openEnv(b, b.TempDir(), 1<<30)
				createTable(b, e, "pk", 4)
				for start := 0; start < n; start += 1000 {
					ids := make([]int64, 1000)
					vals := make([]string, 1000)
					for i := range ids {
						ids[i] = int64(start + i)
						vals[i] = "v"
					}
					rec := dataBatch(ids, vals)
					_, err := e.ls.Write(ctx, "db", "pk", rec)
					rec.Release()
					require.NoError(b, err)
				}
				r, err := e.ls.Stream(ctx, "db", "pk", lakestream.StreamOptions{})
				require.NoError(b, err)
				defer r.Release()
				for r.Next() && r.RecordBatch().NumRows() > 0 { // the current rows
				}
				require.NoError(b, r.Err())
				id := int64(n)
				deliverOne := func() time.Duration {
					id++
					rec := dataBatch([]int64{id % int64(n)}, []string{fmt.Sprint(id)})
					_, err := e.ls.Write(ctx, "db", "pk", rec)
					rec.Release()
					require.NoError(b, err)
					start := time.Now()
					for got := false; !got; {
						require.True(b, r.Next(), "stream ended: %v", r.Err())
						got = r.RecordBatch().NumRows() > 0
					}
					return time.Since(start)
				}
				first := deliverOne() // its round replays the log either way
				var deliver time.Duration
				for b.Loop() {
					deliver += deliverOne()
				}
				b.ReportMetric(float64(first.Microseconds()), "first-us")
				b.ReportMetric(float64(deliver.Microseconds())/float64(b.N), "deliver-us")
			})
		}
	}
}
