package tiering

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

// TestTwoNodesRaceForOneSnapshot: two nodes (each with its own catalog,
// service and tiering over one warehouse and one log, as during an
// ownership handover both believe they own the table) run a round of the
// same table at once, both planned on the same snapshot. Exactly one
// commits it; the other's commit fails with ErrCommitConflict and leaves
// nothing; its next round plans from the winner's offsets. No row is lost
// or doubled, and both nodes keep serving.
func TestTwoNodesRaceForOneSnapshot(t *testing.T) {
	dir := t.TempDir()
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	node := func() *env {
		cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
		require.NoError(t, err)
		ls := lakestream.New(cat, log, lakestream.Options{})
		return &env{dir: dir, cat: cat, ls: ls, tr: New(ls, Options{MaxRowsPerRound: 1 << 20, CompactMinFiles: 100})}
	}
	a, b := node(), node()
	createTable(t, a, "kv", 4)
	createTable(t, a, "ap", 0)

	model := map[int64]string{}
	appended := 0
	write := func(n *env, from, to int) {
		var ids []int64
		var vs []string
		for i := from; i < to; i++ {
			ids = append(ids, int64(i%37))
			vs = append(vs, fmt.Sprintf("v%d", i))
			model[int64(i%37)] = fmt.Sprintf("v%d", i)
		}
		for _, tbl := range []string{"kv", "ap"} {
			rec := batch(ids, vs)
			_, err := n.ls.Write(t.Context(), "db", tbl, rec)
			rec.Release()
			require.NoError(t, err)
		}
		appended += to - from
	}
	write(a, 0, 50)
	write(b, 50, 100)

	for _, tbl := range []string{"kv", "ap"} {
		// Both rounds wait at their commit until both got there: both
		// planned on the same (no) snapshot.
		var arrived atomic.Int32
		both := make(chan struct{})
		beforeCommitHook = func(string) {
			if arrived.Add(1) == 2 {
				close(both)
			}
			<-both
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, n := range []*env{a, b} {
			wg.Go(func() { _, errs[i] = n.tr.TierTable(t.Context(), "db", tbl) })
		}
		wg.Wait()
		beforeCommitHook = nil
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, lake.ErrCommitConflict, "%s: the losing round", tbl)
			}
		}
		require.Equal(t, 1, won, "%s: exactly one round commits snapshot 1 (errors %v)", tbl, errs)
		snap, err := mustTable(t, a, tbl).LatestSnapshot(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, 1, snap.ID, "%s: one snapshot", tbl)
	}

	// Both keep serving; more rows, tiered by the node that lost.
	write(b, 100, 160)
	for _, n := range []*env{a, b} {
		for _, tbl := range []string{"kv", "ap"} {
			_, err := n.tr.TierTable(t.Context(), "db", tbl)
			require.NoError(t, err)
		}
	}
	for i, n := range []*env{a, b} {
		require.Equal(t, modelRows(model), scan(t, n, "kv", false), "node %d: the lake holds every key's newest row once", i)
		require.Equal(t, modelRows(model), scan(t, n, "kv", true), "node %d: t$rt", i)
		require.Len(t, scan(t, n, "ap", false), appended, "node %d: every appended row exactly once", i)
	}
}

// TestExpiryKeepsASnapshotAnotherNodeReads: the node that expires a
// table's snapshots keeps the one a running read on another node uses (the
// other node publishes its oldest pinned snapshots; here handed over
// directly), and expires it once that read ended.
func TestExpiryKeepsASnapshotAnotherNodeReads(t *testing.T) {
	dir := t.TempDir()
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	var reader *env
	node := func(pinned func(string) int64) *env {
		cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
		require.NoError(t, err)
		ls := lakestream.New(cat, log, lakestream.Options{})
		return &env{dir: dir, cat: cat, ls: ls, tr: New(ls, Options{MaxRowsPerRound: 1 << 20, CompactMinFiles: 3,
			Expire: lake.ExpireOptions{RetainMin: 1, RetainMax: 2, OlderThan: time.Millisecond}, PinnedElsewhere: pinned})}
	}
	owner := node(func(id string) int64 { return reader.ls.OldestPins()[id] })
	reader = node(nil)
	createTable(t, owner, "kv", 1)
	ctx := t.Context()
	round := func(i int) {
		rec := batch([]int64{int64(i % 3), int64(100 + i)}, []string{fmt.Sprint("r", i), fmt.Sprint("n", i)})
		_, err := owner.ls.Write(ctx, "db", "kv", rec)
		rec.Release()
		require.NoError(t, err)
		_, err = owner.tr.TierTable(ctx, "db", "kv")
		require.NoError(t, err)
		_, err = owner.tr.ExpireTable(ctx, "db", "kv", time.Now().Add(time.Hour))
		require.NoError(t, err)
	}
	for i := range 3 {
		round(i)
	}
	r, err := reader.ls.Scan(ctx, "db", "kv", false) // pins the latest snapshot on the reader
	require.NoError(t, err)
	pinned := reader.ls.OldestPins()[lakestream.TableID(mustTable(t, reader, "kv"))]
	require.Positive(t, pinned)
	for i := 3; i < 12; i++ {
		round(i)
	}
	_, err = mustTable(t, owner, "kv").Snapshot(ctx, pinned)
	require.NoError(t, err, "snapshot %d, which the other node reads, is kept", pinned)
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	require.NoError(t, r.Err(), "the other node's read finds its files")
	require.EqualValues(t, 6, n, "3 rounds of 2 new keys")
	r.Release()
	round(12)
	_, err = mustTable(t, owner, "kv").Snapshot(ctx, pinned)
	require.Error(t, err, "once the read ended, snapshot %d expires", pinned)
}

// TestATableTakenOverIsTieredAtOnce: a table another node owned, which
// this node takes over (the owner left or died), is tiered at the next
// pass, not one interval later: its rows waited while ownership moved.
func TestATableTakenOverIsTieredAtOnce(t *testing.T) {
	e := open(t, t.TempDir())
	var owned atomic.Bool
	e.tr.opts.Owns = func(string) bool { return owned.Load() }
	e.tr.opts.Interval = time.Hour
	createTable(t, e, "kv", 2)
	rec := batch([]int64{1, 2}, []string{"a", "b"})
	_, err := e.ls.Write(t.Context(), "db", "kv", rec)
	rec.Release()
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.tr.runDue(t.Context(), t0) // another node owns it
	require.Empty(t, scan(t, e, "kv", false))
	owned.Store(true)
	e.tr.runDue(t.Context(), t0.Add(time.Second))
	require.Equal(t, []string{"1=a", "2=b"}, scan(t, e, "kv", false), "tiered at the first pass after the takeover")
}
