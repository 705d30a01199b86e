package lakestream_test

import (
	"context"
	"io/fs"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lakestream"
)

// scanIDs reads the id column of every row r returns, sorted, and
// releases r.
func scanIDs(t *testing.T, r array.RecordReader) []int64 {
	t.Helper()
	defer r.Release()
	var ids []int64
	for r.Next() {
		ids = append(ids, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	require.NoError(t, r.Err())
	slices.Sort(ids)
	return ids
}

// TestScanSnapshotExpiredBeforePinStillReads runs an expiration between a
// scan's choice of the latest snapshot and its pin, after a newer snapshot
// was committed: the expiration waits for the pin and keeps the snapshot,
// and the scan reads its rows. (Pinned in a second step, the snapshot was
// expired under the scan, which then failed.)
func TestScanSnapshotExpiredBeforePinStillReads(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	write := func(ids ...int64) {
		t.Helper()
		rec := dataBatch(ids, make([]string, len(ids)))
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
	}
	write(1, 2)
	require.NoError(t, e.tr.Drain(ctx, "db", "ap"))
	write(3)
	tbl, err := e.ls.Table(ctx, "db", "ap")
	require.NoError(t, err)
	id := lakestream.TableID(tbl)

	chosen, proceed := make(chan int64), make(chan struct{})
	var once atomic.Bool
	defer lakestream.SetPinHook(func(table string, sid int64) {
		if table == id && once.CompareAndSwap(false, true) {
			chosen <- sid
			<-proceed
		}
	})()
	blocked := make(chan struct{}, 1)
	defer lakestream.SetExpireBlockedHook(func(table string) {
		if table == id {
			select {
			case blocked <- struct{}{}:
			default:
			}
		}
	})()

	type scanned struct {
		r   array.RecordReader
		err error
	}
	read := make(chan scanned, 1)
	go func() {
		r, err := e.ls.ScanWith(ctx, "db", "ap", lakestream.ScanOptions{})
		read <- scanned{r, err}
	}()
	sid := <-chosen
	require.Positive(t, sid)

	// A newer snapshot, then an expiration that, by itself, keeps only it.
	require.NoError(t, e.tr.Drain(ctx, "db", "ap"))
	latest, err := tbl.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Greater(t, latest.ID, sid)
	later := time.Now().Add(48 * time.Hour)
	type result struct {
		n   int
		err error
	}
	expired := make(chan result, 1)
	go func() {
		n, err := e.tr.ExpireTable(ctx, "db", "ap", later)
		expired <- result{n, err}
	}()
	var exp *result
	select {
	case <-blocked: // waits for the scan to pin its snapshot
	case r := <-expired:
		exp = &r
	}
	close(proceed)
	got := <-read
	if exp == nil {
		r := <-expired
		exp = &r
	}
	require.NoError(t, exp.err)
	_, err = tbl.Snapshot(ctx, sid)
	require.NoError(t, err, "expiration kept snapshot %d, which the scan uses", sid)
	require.NoError(t, got.err)
	require.Equal(t, []int64{1, 2}, scanIDs(t, got.r), "the rows of snapshot %d", sid)

	// Released, the snapshot is no longer protected.
	_, err = e.tr.ExpireTable(ctx, "db", "ap", later)
	require.NoError(t, err)
	_, err = tbl.Snapshot(ctx, sid)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestTravelToSnapshotBeingExpiredIsRefused: while an expiration that may
// delete a snapshot runs, a read of it fails as a read of an expired
// snapshot does, a read of the latest one does not, and once the
// expiration ended (here without deleting it) the snapshot reads again.
func TestTravelToSnapshotBeingExpiredIsRefused(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	for _, v := range []int64{1, 2} {
		rec := dataBatch([]int64{v}, []string{""})
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
		require.NoError(t, e.tr.Drain(ctx, "db", "ap"))
	}
	tbl, err := e.ls.Table(ctx, "db", "ap")
	require.NoError(t, err)
	latest, err := tbl.LatestSnapshot(ctx)
	require.NoError(t, err)
	old, err := e.ls.TravelCut(ctx, "db", "ap", lakestream.Travel{Snapshot: latest.ID - 1})
	require.NoError(t, err)

	protect, done := e.ls.BeginExpire(lakestream.TableID(tbl), latest.ID)
	require.Equal(t, latest.ID, protect)
	_, err = e.ls.ScanWith(ctx, "db", "ap", lakestream.ScanOptions{At: &old})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NotContains(t, err.Error(), e.dir)
	require.Equal(t, []int64{1, 2}, scanIDs(t, mustScan(t, e, lakestream.ScanOptions{})))
	done()
	require.Equal(t, []int64{1}, scanIDs(t, mustScan(t, e, lakestream.ScanOptions{At: &old})))
}

func mustScan(t *testing.T, e *env, opts lakestream.ScanOptions) array.RecordReader {
	t.Helper()
	r, err := e.ls.ScanWith(context.Background(), "db", "ap", opts)
	require.NoError(t, err)
	return r
}
