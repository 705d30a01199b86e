package lake

import (
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/paimontype"
)

// fakeClock is a Catalog's clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recentCatalog opens a warehouse in dir through a storeCounter, with a fake clock and
// recent reads on as RefreshEvery(time.Second) sets them, without its background loop: the
// tests run the loop's refresh themselves.
func recentCatalog(t *testing.T, dir string) (*Catalog, *storeCounter, *fakeClock) {
	t.Helper()
	counter := &storeCounter{FileIO: fileio.Local{}}
	c, err := OpenCatalogFileIO(t.Context(), dir, counter)
	require.NoError(t, err)
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c.now = clk.Now
	c.states.every = time.Second
	return c, counter, clk
}

// A read of the latest snapshot and schema makes no request while what is known is
// recent: a snapshot this process committed is used by its next read (read your writes),
// another process's commit and ALTER are used once the background refresh found them, and
// past twice the interval without a refresh a read checks the store itself.
func TestRecentSnapshotFromCommitsAndRefresh(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	c, counter, clk := recentCatalog(t, dir)
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	commit := func(tb *Table, id int64) {
		t.Helper()
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, []row{{id, sp("a"), "x"}}, []RowKind{Insert}, []int64{id})
		_, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: id, ExpectedLatest: id - 1})
		require.NoError(t, err)
	}
	recent := func() int64 {
		t.Helper()
		s, err := tb.RecentSnapshot(ctx)
		require.NoError(t, err)
		return snapID(s)
	}
	lookup := func(s *Snapshot, id int64) []int64 {
		t.Helper()
		rr, err := tb.Scan(ctx, s, ScanOptions{Columns: []string{"id"}, Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{id}}}})
		require.NoError(t, err)
		defer rr.Release()
		var ids []int64
		for rr.Next() {
			ids = append(ids, rr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
		}
		require.NoError(t, rr.Err())
		return ids
	}

	require.Equal(t, int64(0), recent(), "no snapshot yet")
	counter.take()
	require.Equal(t, int64(0), recent())
	require.Empty(t, counter.take(), "no snapshot is known too")

	commit(tb, 1)
	counter.take()
	require.Equal(t, int64(1), recent(), "this process's commit is read at once")
	require.Empty(t, counter.take())

	// A point query: schema check, snapshot, scan. The first reads the schema file,
	// manifests, the footer and pages; the same query again asks nothing.
	query := func(id int64) []int64 {
		state, err := tb.CheckSchemaRecent(ctx)
		require.NoError(t, err)
		require.Equal(t, SchemaCurrent, state)
		s, err := tb.RecentSnapshot(ctx)
		require.NoError(t, err)
		return lookup(s, id)
	}
	require.Equal(t, []int64{1}, query(1))
	counter.take()
	require.Equal(t, []int64{1}, query(1))
	require.Equal(t, []int64(nil), query(7))
	require.Empty(t, counter.take(), "a steady-state point query makes no request")

	// Another process commits snapshot 2 and alters the table.
	other, err := OpenCatalog(dir)
	require.NoError(t, err)
	otb, err := other.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	commit(otb, 2)
	_, err = other.AlterTableOptions(ctx, "db", "t", map[string]string{"p": "1"})
	require.NoError(t, err)
	clk.advance(500 * time.Millisecond)
	require.Equal(t, int64(1), recent(), "not yet refreshed: the snapshot known")
	state, err := tb.CheckSchemaRecent(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaCurrent, state)
	require.Empty(t, counter.take())

	clk.advance(500 * time.Millisecond)
	c.refresh(ctx)
	require.NotEmpty(t, counter.take(), "the refresh asks the store")
	require.Equal(t, int64(2), recent(), "found by the refresh")
	state, err = tb.CheckSchemaRecent(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaNewer, state, "the ALTER is found by the refresh")
	counter.take()
	ntb, err := c.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	counter.take()
	state, err = ntb.CheckSchemaRecent(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaCurrent, state)
	require.Empty(t, counter.take(), "GetTable found the latest schema: no check")
	tb = ntb
	require.Equal(t, int64(2), recent())
	require.Empty(t, counter.take(), "the table at its new schema shares what is known")

	// Without a refresh for twice the interval a read checks itself.
	commit(otb, 3)
	clk.advance(1999 * time.Millisecond)
	require.Equal(t, int64(2), recent())
	require.Empty(t, counter.take())
	clk.advance(time.Millisecond)
	require.Equal(t, int64(3), recent(), "too old to trust: checked")
	require.NotEmpty(t, counter.take())
	require.Equal(t, int64(3), recent())
	require.Empty(t, counter.take())

	// Another process rolls snapshot 3 back (removes it): the refresh finds 2 again.
	require.NoError(t, other.FileIO().Remove(ctx, tb.snapshotPath(3)))
	clk.advance(time.Second)
	c.refresh(ctx)
	require.Equal(t, int64(2), recent())

	// A table nobody reads is not refreshed.
	clk.advance(idleRefresh * time.Second)
	counter.take()
	c.refresh(ctx)
	require.Empty(t, counter.take(), "idle tables are left alone")
	require.Equal(t, int64(2), recent(), "and checked by the next read")
	require.NotEmpty(t, counter.take())

	// Dropped by this process: nothing known survives it.
	require.NoError(t, c.DropTable(ctx, "db", "t", false))
	_, _, known := tb.latest.get()
	require.False(t, known)
	_, err = c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	tb2, err := c.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	s, err := tb2.RecentSnapshot(ctx)
	require.NoError(t, err)
	require.Nil(t, s, "the new table of the name has no snapshot")
}

// Without RefreshEvery (a local warehouse) every read checks: another process's commit
// is read by the next call.
func TestRecentSnapshotChecksWithoutRefresh(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	counter := &storeCounter{FileIO: fileio.Local{}}
	c, err := OpenCatalogFileIO(ctx, dir, counter)
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	other, err := OpenCatalog(dir)
	require.NoError(t, err)
	otb, err := other.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	for id := int64(1); id <= 2; id++ {
		w := otb.NewWrite(ctx)
		writeRows(t, w, otb, []row{{id, sp("a"), "x"}}, nil, nil)
		_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: id, ExpectedLatest: id - 1})
		require.NoError(t, err)
		s, err := tb.RecentSnapshot(ctx)
		require.NoError(t, err)
		require.Equal(t, id, s.ID)
	}
	counter.take()
	_, err = tb.RecentSnapshot(ctx)
	require.NoError(t, err)
	require.Len(t, counter.take(), 2, "two stats")
}

// RefreshEvery's loop stops with stop (TestMain checks for leaked goroutines), after which
// reads check at every call again.
func TestRefreshEveryStops(t *testing.T) {
	c := newTestCatalog(t)
	stop := c.RefreshEvery(time.Hour)
	require.Equal(t, time.Hour, c.refreshInterval())
	stop()
	stop()
	require.Equal(t, time.Duration(0), c.refreshInterval())
	c.RefreshEvery(time.Hour)()
}
