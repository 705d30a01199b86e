package lakestream_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

// metaCounter counts the requests for snapshot and schema files (stats, reads, listings).
type metaCounter struct {
	fileio.FileIO
	mu  sync.Mutex
	ops []string
}

func (m *metaCounter) count(op, p string) {
	if strings.Contains(p, "/snapshot") || strings.Contains(p, "/schema") {
		m.mu.Lock()
		m.ops = append(m.ops, op+" "+p)
		m.mu.Unlock()
	}
}

func (m *metaCounter) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := m.ops
	m.ops = nil
	return ops
}

func (m *metaCounter) Read(ctx context.Context, p string) ([]byte, error) {
	m.count("read", p)
	return m.FileIO.Read(ctx, p)
}

func (m *metaCounter) Exists(ctx context.Context, p string) (bool, error) {
	m.count("exists", p)
	return m.FileIO.Exists(ctx, p)
}

func (m *metaCounter) Version(ctx context.Context, p string) (string, error) {
	m.count("version", p)
	return m.FileIO.Version(ctx, p)
}

func (m *metaCounter) List(ctx context.Context, dir string) ([]fileio.FileInfo, error) {
	m.count("list", dir)
	return m.FileIO.List(ctx, dir)
}

// On a warehouse whose catalog refreshes in the background (an object store), a point
// read of t$rt asks the store nothing about snapshots or schemas once warm, and a tiering
// round of this node is read by the next read of t at once: the interval here is an hour,
// so nothing but the node's own commit can have told it.
func TestReadsLearnSnapshotsWithoutTheStore(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	counter := &metaCounter{FileIO: fileio.Local{}}
	cat, err := lake.OpenCatalogFileIO(ctx, filepath.Join(dir, "warehouse"), counter)
	require.NoError(t, err)
	stop := cat.RefreshEvery(time.Hour)
	defer stop()
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	defer log.Close()
	ls := lakestream.New(cat, log, lakestream.Options{})
	tr := tiering.New(ls, tiering.Options{})
	e := &env{dir: dir, cat: cat, log: log, ls: ls, tr: tr}
	createTable(t, e, "pk", 2)

	write := func(ids []int64, v string) {
		t.Helper()
		vals := make([]string, len(ids))
		for i := range vals {
			vals[i] = v
		}
		rec := dataBatch(ids, vals)
		defer rec.Release()
		_, err := ls.Write(ctx, "db", "pk", rec)
		require.NoError(t, err)
	}
	read := func(realtime bool, id int64) []string {
		t.Helper()
		pctx := lakestream.Planning(ctx)
		_, err := ls.ArrowSchema(pctx, "db", "pk")
		require.NoError(t, err)
		r, err := ls.ScanWith(ctx, "db", "pk", lakestream.ScanOptions{Realtime: realtime,
			Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{id}}}})
		require.NoError(t, err)
		defer r.Release()
		var out []string
		for r.Next() {
			rec := r.RecordBatch()
			for i := range int(rec.NumRows()) {
				out = append(out, rec.Column(1).(*array.String).Value(i))
			}
		}
		require.NoError(t, r.Err())
		return out
	}

	write([]int64{1, 2, 3}, "lake")
	_, err = tr.TierTable(ctx, "db", "pk")
	require.NoError(t, err)
	write([]int64{2}, "log")
	require.Equal(t, []string{"log"}, read(true, 2))
	require.Equal(t, []string{"lake"}, read(true, 3))
	counter.take()
	for id := int64(1); id <= 3; id++ {
		want := "lake"
		if id == 2 {
			want = "log"
		}
		require.Equal(t, []string{want}, read(true, id))
	}
	require.Empty(t, counter.take(), "warm reads of t$rt ask nothing about snapshots or schemas")

	// Read your writes: this node's tiering commit is read by the next read of t.
	require.Equal(t, []string{"lake"}, read(false, 2))
	_, err = tr.TierTable(ctx, "db", "pk")
	require.NoError(t, err)
	counter.take()
	require.Equal(t, []string{"log"}, read(false, 2), "the round's snapshot is read at once")
	require.Equal(t, []string{"log"}, read(true, 2))
	ops := counter.take()
	require.False(t, slices.ContainsFunc(ops, func(op string) bool { return strings.Contains(op, "/snapshot") }),
		"the snapshot came from the commit, not the store: %v", ops)
}

// With other nodes running DDL (Options.OtherNodes) a read checks the schema at every
// statement, so another node's ALTER is used by the next read even when the catalog
// refreshes in the background; alone, the next read after the refresh interval.
func TestClusterReadsCheckSchemaAtOnce(t *testing.T) {
	ctx := t.Context()
	for _, cluster := range []bool{false, true} {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		open := func(name string) *lakestream.Service {
			cat, err := lake.OpenCatalog(wh)
			require.NoError(t, err)
			t.Cleanup(cat.RefreshEvery(time.Hour))
			log, err := logstore.Open(filepath.Join(dir, name), logstore.DefaultOptions())
			require.NoError(t, err)
			t.Cleanup(func() { log.Close() })
			return lakestream.New(cat, log, lakestream.Options{OtherNodes: cluster})
		}
		a, b := open("log-a"), open("log-b")
		createTable(t, &env{ls: a}, "pk", 2)
		columns := func() int {
			s, err := b.ArrowSchema(lakestream.Planning(ctx), "db", "pk")
			require.NoError(t, err)
			return s.NumFields()
		}
		require.Equal(t, 2, columns())
		bigint, err := paimontype.ParseType("BIGINT")
		require.NoError(t, err)
		require.NoError(t, a.AddColumn(ctx, "db", "pk", lake.AddColumn{Column: paimontype.Column{Name: "w", Type: bigint}}))
		if cluster {
			require.Equal(t, 3, columns(), "another node's ALTER, read at once")
		} else {
			require.Equal(t, 2, columns(), "another process's ALTER, not yet refreshed (an hour)")
		}
	}
}
