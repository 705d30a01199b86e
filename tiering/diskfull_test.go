package tiering

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

// fullWarehouse is a local warehouse whose disk fills up on demand: while fault is
// set, the writes it names fail with ENOSPC.
type fullWarehouse struct {
	fileio.FileIO

	mu      sync.Mutex
	fault   string // "", "data" (the writes of data files), "manifest", "snapshot"
	dataAt  int    // with "data": the data file (1, 2, ...) from which writes fail
	creates int    // data files created since the fault was set
	hits    int    // writes failed
}

func (f *fullWarehouse) set(fault string, dataAt int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.dataAt, f.creates, f.hits = fault, dataAt, 0, 0
}

func (f *fullWarehouse) failing(fault string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fault == fault {
		f.hits++
		return true
	}
	return false
}

func noSpace(op, p string) error { return &fs.PathError{Op: op, Path: p, Err: syscall.ENOSPC} }

func (f *fullWarehouse) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	w, err := f.FileIO.Create(ctx, p)
	if err != nil || !strings.Contains(p, "/bucket-") {
		return w, err
	}
	f.mu.Lock()
	f.creates++
	full := f.fault == "data" && f.creates >= f.dataAt
	f.mu.Unlock()
	if !full {
		return w, nil
	}
	return &fillingWriter{WriteCloser: w, f: f, path: p, room: 512}, nil
}

// fillingWriter takes room bytes, then fails every write with ENOSPC.
type fillingWriter struct {
	io.WriteCloser
	f    *fullWarehouse
	path string
	room int
}

func (w *fillingWriter) Write(b []byte) (int, error) {
	if len(b) <= w.room {
		w.room -= len(b)
		return w.WriteCloser.Write(b)
	}
	n, _ := w.WriteCloser.Write(b[:w.room])
	w.room = 0
	w.f.failing("data")
	return n, noSpace("write", w.path)
}

func (f *fullWarehouse) CreateExclusive(ctx context.Context, p string, data []byte) error {
	switch {
	case strings.Contains(p, "/manifest/") && f.failing("manifest"),
		strings.Contains(p, "/snapshot/") && f.failing("snapshot"):
		return noSpace("open", p)
	}
	return f.FileIO.CreateExclusive(ctx, p, data)
}

// TestFullWarehouseDiskFailsTheRoundWhole: a round whose data file, manifest or
// snapshot write fails for lack of space fails whole: no snapshot, the lake's log
// offsets unchanged, every row still served from the log, the error in sys.tiering.
// Once there is space, one round commits every row exactly once.
func TestFullWarehouseDiskFailsTheRoundWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	disk := &fullWarehouse{FileIO: fileio.Local{}}
	cat, err := lake.OpenCatalogFileIO(ctx, filepath.Join(dir, "warehouse"), disk)
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ls := lakestream.New(cat, log, lakestream.Options{})
	e := &env{dir: dir, cat: cat, log: log, ls: ls, tr: New(ls, Options{MaxRowsPerRound: 50, CompactMinFiles: 3,
		Expire: lake.ExpireOptions{RetainMin: 1, RetainMax: 3, OlderThan: time.Millisecond}})}

	createTable(t, e, "ap", 0) // an append table: a row tiered twice would show
	createTable(t, e, "pk", 4)
	var want []string
	write := func(from, n int) {
		ids, vals := make([]int64, n), make([]string, n)
		for i := range ids {
			ids[i], vals[i] = int64(from+i), "v"
		}
		for _, table := range []string{"ap", "pk"} {
			rec := batch(ids, vals)
			_, err := e.ls.Write(ctx, "db", table, rec)
			rec.Release()
			require.NoError(t, err)
		}
		want = sorted(append(want, scanRows(ids)...))
	}
	lakeState := func(table string) (int64, *lakestream.Offsets) {
		tbl := mustTable(t, e, table)
		snap, err := tbl.LatestSnapshot(ctx)
		require.NoError(t, err)
		offs, err := lakestream.LakeOffsets(ctx, tbl, snap)
		require.NoError(t, err)
		if snap == nil {
			return 0, offs
		}
		return snap.ID, offs
	}

	write(0, 60) // the lake holds these before the disk fills
	for _, table := range []string{"ap", "pk"} {
		require.NoError(t, e.tr.Drain(ctx, "db", table))
	}
	// Where a data file's write fails: the append table's round writes one file (of
	// at most MaxRowsPerRound rows), the primary-key table's one per bucket, so
	// there the second file fails, after the first was written.
	dataAt := map[string]int{"ap": 1, "pk": 2}
	for i, fault := range []string{"data", "manifest", "snapshot"} {
		write(1000*(i+1), 120)
		for _, table := range []string{"ap", "pk"} {
			before := scan(t, e, table, false)
			snapBefore, offsBefore := lakeState(table)
			disk.set(fault, dataAt[table])
			_, err := e.tr.TierTable(ctx, "db", table)
			require.ErrorIs(t, err, syscall.ENOSPC, "%s %s", table, fault)
			disk.mu.Lock()
			require.Positive(t, disk.hits, "%s %s: the fault was hit", table, fault)
			disk.mu.Unlock()
			disk.set("", 0)

			snapAfter, offsAfter := lakeState(table)
			require.Equal(t, snapBefore, snapAfter, "%s %s: no snapshot committed", table, fault)
			require.Equal(t, offsBefore, offsAfter, "%s %s: the lake's log offsets unchanged", table, fault)
			require.Equal(t, before, scan(t, e, table, false), "%s %s: the lake unchanged", table, fault)
			require.Equal(t, want, scan(t, e, table, true), "%s %s: the log still serves every row", table, fault)
			st := statusOf(t, e, table)
			require.EqualValues(t, 1, st.failedRounds, "%s %s", table, fault)
			require.NotNil(t, st.lastError)
			require.Contains(t, *st.lastError, "no space left on device", "%s %s: sys.tiering says why", table, fault)

			require.NoError(t, e.tr.Drain(ctx, "db", table), "%s %s: space is back", table, fault)
			require.Equal(t, want, scan(t, e, table, false), "%s %s: every row in the lake exactly once", table, fault)
			_, offs := lakeState(table)
			for b, hw := range e.log.HighWatermarks(lakestream.TableID(mustTable(t, e, table))) {
				require.Equal(t, hw, offs.Of(b), "%s %s: bucket %d tiered up to the log's end", table, fault, b)
			}
			require.Zero(t, statusOf(t, e, table).failedRounds, "%s %s", table, fault)
		}
	}
}

func scanRows(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%d=v", id)
	}
	return out
}
