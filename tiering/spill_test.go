package tiering

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

// A primary-key round holds a bounded share of the log at once: a backlog
// of many flushes is sorted into runs (rows loaded in key order straight
// into the buckets' files, upserts of earlier keys spilled and merged at
// the commit), a round spills at most maxRoundRuns runs and says there is
// more, every round leaves the spill directory empty, adds at most two
// files per bucket, and the lake ends equal to a model of the writes.
func TestPrimaryKeyRoundsSpillInBoundedMemory(t *testing.T) {
	rng, seed := seeded(t, 2)
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	defer log.Close()
	ls := lakestream.New(cat, log, lakestream.Options{})
	spill := filepath.Join(dir, "spill")
	require.NoError(t, os.MkdirAll(spill, 0o755))
	const perFlush = 300 // rows per flush: a third of MaxRowsPerRound
	tr := New(ls, Options{MaxRowsPerRound: 3 * perFlush, SpillDir: spill, CompactMinFiles: 1000,
		Expire: lake.ExpireOptions{RetainMin: 1000, RetainMax: 1000, OlderThan: time.Hour}})
	e := &env{dir: dir, cat: cat, log: log, ls: ls, tr: tr}
	ctx := context.Background()
	const buckets = 3
	createTable(t, e, "pk", buckets)
	model := map[int64]string{}
	var next int64
	total := 0
	for step := 0; step < 20; step++ {
		// entries of over 4096 rows per bucket, which reads do not join:
		// a flush each
		n := 13_000 + rng.IntN(2000)
		ids := make([]int64, n)
		vals := make([]string, n)
		kinds := make([]string, n)
		for i := range ids {
			if rng.IntN(4) > 0 { // a bulk load in key order
				ids[i] = next
				next++
			} else { // an upsert or delete of an earlier key
				ids[i] = rng.Int64N(next + 1)
			}
			vals[i] = fmt.Sprintf("s%d-%d", step, i)
			kinds[i] = "+I"
			if rng.IntN(10) == 0 {
				kinds[i] = "-D"
				delete(model, ids[i])
			} else {
				model[ids[i]] = vals[i]
			}
		}
		rec := kindBatch(ids, vals, kinds)
		_, err := ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
		total += n
	}
	files := func() int {
		rr, err := ls.Meta(ctx, "db", "pk", lakestream.FilesSuffix)
		require.NoError(t, err)
		defer rr.Release()
		n := 0
		for rr.Next() {
			n += int(rr.RecordBatch().NumRows())
		}
		require.NoError(t, rr.Err())
		return n
	}
	rounds, capped := 0, false
	for {
		before := files()
		res, err := tr.TierTable(ctx, "db", "pk")
		require.NoError(t, err)
		if res.Rows == 0 {
			break
		}
		rounds++
		t.Logf("round %d: %d rows, more %v", rounds, res.Rows, res.More)
		capped = capped || res.More
		left, err := os.ReadDir(spill)
		require.NoError(t, err)
		require.Empty(t, left, "round %d left spill files", rounds)
		require.LessOrEqual(t, files()-before, 2*buckets, "round %d: at most two files per bucket", rounds)
		if res.More { // capped at maxRoundRuns flushes of at least perFlush rows
			require.GreaterOrEqual(t, res.Rows, int64(maxRoundRuns*perFlush), "round %d", rounds)
		}
	}
	require.True(t, capped, "%d rows in %d rounds, none capped", total, rounds)
	require.Equal(t, modelRows(model), scan(t, e, "pk", false), "seed %d", seed)
	require.Equal(t, modelRows(model), scan(t, e, "pk", true), "seed %d", seed)
}
