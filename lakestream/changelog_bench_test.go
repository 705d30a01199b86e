package lakestream_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkChangelog reads the changelog of a 4-bucket primary-key table
// whose lake holds 1M rows and whose retained log holds 1M updates of
// distinct keys (in random order) after the retention anchor: 2M output
// rows (-U from the lake, +U from the log). log=cached reads the updates
// from the log cache (not tiered yet); log=decoded after they were tiered,
// so they are read and decoded from the log. rows/s counts log rows read.
func BenchmarkChangelog(b *testing.B) {
	const n = 1_000_000
	const batch = 100_000
	ctx := context.Background()
	e := openEnv(b, b.TempDir(), 1<<30)
	createTable(b, e, "pk", 4)
	write := func(ids []int64, prefix string) {
		for start := 0; start < len(ids); start += batch {
			part := ids[start:min(start+batch, len(ids))]
			vals := make([]string, len(part))
			for i, id := range part {
				vals[i] = prefix + strconv.FormatInt(id, 10)
			}
			rec := dataBatch(part, vals)
			_, err := e.ls.Write(ctx, "db", "pk", rec)
			rec.Release()
			require.NoError(b, err)
		}
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	write(ids, "lake-")
	require.NoError(b, e.tr.Drain(ctx, "db", "pk"))
	later := time.Now().Add(48 * time.Hour)
	_, err := e.tr.CollectTable(ctx, "db", "pk", later)
	require.NoError(b, err)
	_, err = e.tr.ExpireTable(ctx, "db", "pk", later)
	require.NoError(b, err)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	write(ids, "log-")

	read := func(b *testing.B) {
		for b.Loop() {
			r, err := e.ls.Changelog(ctx, "db", "pk")
			if err != nil {
				b.Fatal(err)
			}
			var rows int64
			for r.Next() {
				rows += r.RecordBatch().NumRows()
			}
			if err := r.Err(); err != nil {
				b.Fatal(err)
			}
			r.Release()
			if rows != 2*n {
				b.Fatalf("got %d changelog rows, want %d", rows, 2*n)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	}
	b.Run("lake=1M/log=1M/log=cached", read)
	require.NoError(b, e.tr.Drain(ctx, "db", "pk"))
	b.Run("lake=1M/log=1M/log=decoded", read)
}
