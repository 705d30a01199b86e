package lake

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/s3"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// ---- a real S3 server: Versity S3 Gateway over a temp directory ----

const vgwBucket = "lake"

// versityGW is a running `versitygw posix` on loopback; its objects are files under Root/<bucket>/.
type versityGW struct {
	Endpoint string
	Root     string
}

// Options returns s3.Options with the gateway's root credentials.
func (g *versityGW) Options() s3.Options {
	return s3.Options{Endpoint: g.Endpoint, Region: testserver.S3Region,
		AccessKeyID: testserver.S3AccessKey, SecretAccessKey: testserver.S3SecretKey}
}

// FileIO returns an S3 FileIO over the gateway's bucket.
func (g *versityGW) FileIO(t testing.TB, opts func(*s3.Options)) *s3.FileIO {
	o := g.Options()
	if opts != nil {
		opts(&o)
	}
	fio, err := s3.New(context.Background(), vgwBucket, o)
	require.NoError(t, err)
	return fio
}

// startVersityGW starts the gateway with bucket vgwBucket (testserver.StartS3: skipped
// without a versitygw binary).
func startVersityGW(t testing.TB) *versityGW {
	endpoint, root := testserver.StartS3(t, vgwBucket)
	return &versityGW{Endpoint: endpoint, Root: root}
}

// ---- backends: the same scenarios on local disk and on S3 ----

// lakeBackend opens catalogs over one fresh warehouse; wrap (may be nil) decorates the FileIO.
type lakeBackend struct {
	name string
	open func(t *testing.T, wrap func(fileio.FileIO) fileio.FileIO) *Catalog
	// localPath is the file on local disk that holds a FileIO path (for S3: the gateway's file).
	localPath func(p string) string
}

func localBackend(t *testing.T) lakeBackend {
	dir := t.TempDir()
	return lakeBackend{name: "local",
		open: func(t *testing.T, wrap func(fileio.FileIO) fileio.FileIO) *Catalog {
			var fio fileio.FileIO = fileio.Local{}
			if wrap != nil {
				fio = wrap(fio)
			}
			c, err := OpenCatalogFileIO(context.Background(), dir, fio)
			require.NoError(t, err)
			return c
		},
		localPath: func(p string) string { return p },
	}
}

func s3Backend(t *testing.T, g *versityGW, prefix string) lakeBackend {
	return lakeBackend{name: "s3",
		open: func(t *testing.T, wrap func(fileio.FileIO) fileio.FileIO) *Catalog {
			var fio fileio.FileIO = g.FileIO(t, nil)
			if wrap != nil {
				fio = wrap(fio)
			}
			c, err := OpenCatalogFileIO(context.Background(), "/"+prefix, fio)
			require.NoError(t, err)
			return c
		},
		localPath: func(p string) string { return filepath.Join(g.Root, vgwBucket, p) },
	}
}

type lakeScenario struct {
	name string
	run  func(t *testing.T, b lakeBackend)
}

var lakeScenarios = []lakeScenario{
	{"CatalogCreateListDrop", scenarioCatalog},
	{"PrimaryKeyTwoCommits", scenarioPrimaryKeyTwoCommits},
	{"AppendPartitioned", scenarioAppendPartitioned},
	{"CommitFencing", scenarioCommitFencing},
	{"RacingWriters", scenarioRacingWriters},
	{"MissingFileNamesKey", scenarioMissingFile},
	{"TableErrorsNameWarehousePaths", scenarioTableErrorsNameWarehousePaths},
	{"LatestSnapshotRemembered", scenarioLatestSnapshotRemembered},
}

// TestLakeScenarios runs every scenario on local disk and on a real S3 server (Versity S3
// Gateway; skipped only when no versitygw binary is available).
func TestLakeScenarios(t *testing.T) { runOnBackends(t, lakeScenarios) }

// runOnBackends runs each scenario on a fresh warehouse on local disk and
// on S3, side by side: each has a warehouse (and on S3 a prefix) of its own.
func runOnBackends(t *testing.T, scenarios []lakeScenario) {
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, localBackend(t))
			})
		}
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		g := startVersityGW(t)
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, s3Backend(t, g, "wh/"+sc.name))
			})
		}
	})
}

func openWithDB(t *testing.T, b lakeBackend) *Catalog {
	c := b.open(t, nil)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	return c
}

func scenarioCatalog(t *testing.T, b lakeBackend) {
	c := b.open(t, nil)
	dbs, err := c.ListDatabases(t.Context())
	require.NoError(t, err)
	require.Empty(t, dbs)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	require.ErrorIs(t, c.CreateDatabase(t.Context(), "db", false), ErrDatabaseExists)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", true))
	require.NoError(t, c.CreateDatabase(t.Context(), "a", false)) // empty database: must still exist
	dbs, err = c.ListDatabases(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "db"}, dbs)
	tables, err := c.ListTables(t.Context(), "a")
	require.NoError(t, err)
	require.Empty(t, tables)

	s := paimontype.Schema{Columns: []paimontype.Column{{Name: "k", Type: mustType(t, "INT")}, {Name: "v", Type: mustType(t, "STRING")}}, PrimaryKeys: []string{"k"}}
	for _, n := range []string{"t2", "t1"} {
		_, err = c.CreateTable(t.Context(), "db", n, s, false)
		require.NoError(t, err)
	}
	_, err = c.CreateTable(t.Context(), "db", "t1", s, false)
	require.ErrorIs(t, err, ErrTableExists)
	_, err = c.CreateTable(t.Context(), "nope", "t1", s, false)
	require.ErrorIs(t, err, ErrDatabaseNotFound)
	_, err = c.CreateTable(t.Context(), "db", "bad", paimontype.Schema{Columns: s.Columns, PrimaryKeys: []string{"zz"}}, false)
	require.Error(t, err)
	_, err = c.CreateTable(t.Context(), "db", "bad", paimontype.Schema{Columns: append(s.Columns, s.Columns[0])}, false)
	require.Error(t, err)
	tables, err = c.ListTables(t.Context(), "db")
	require.NoError(t, err)
	require.Equal(t, []string{"t1", "t2"}, tables)
	tb, err := c.GetTable(t.Context(), "db", "t1")
	require.NoError(t, err)
	require.Equal(t, "INT NOT NULL", tb.Schema().Fields[0].Type.String())
	tb2, err := c.AlterTableOptions(context.Background(), "db", "t1", map[string]string{"x": "1"})
	require.NoError(t, err)
	require.Equal(t, int64(1), tb2.Schema().ID)
	tb3, err := c.GetTable(t.Context(), "db", "t1")
	require.NoError(t, err)
	require.Equal(t, "1", tb3.Schema().Options["x"])

	_, err = c.GetTable(t.Context(), "db", "missing")
	require.ErrorIs(t, err, ErrTableNotFound)
	require.Contains(t, err.Error(), "db.missing")
	require.NoError(t, c.DropTable(t.Context(), "db", "t1", false))
	require.ErrorIs(t, c.DropTable(t.Context(), "db", "t1", false), ErrTableNotFound)
	require.NoError(t, c.DropTable(t.Context(), "db", "t1", true))
	tables, err = c.ListTables(t.Context(), "db")
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, tables)
	require.ErrorIs(t, c.DropDatabase(t.Context(), "db", false, false), ErrDatabaseNotEmpty)
	require.NoError(t, c.DropDatabase(t.Context(), "db", false, true))
	require.ErrorIs(t, c.DropDatabase(t.Context(), "db", false, false), ErrDatabaseNotFound)
	require.NoError(t, c.DropDatabase(t.Context(), "a", false, false))
	dbs, err = c.ListDatabases(t.Context())
	require.NoError(t, err)
	require.Empty(t, dbs)
}

func scenarioPrimaryKeyTwoCommits(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb, err := c.CreateTable(ctx, "db", "pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "2"}}, false)
	require.NoError(t, err)
	snap, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Nil(t, snap)
	require.Empty(t, scanAll(t, tb, nil, nil))

	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}, {2, sp("b"), "x"}, {3, nil, "x"}, {1, sp("a2"), "x"}, {4, sp("d"), "x"}},
		[]RowKind{Insert, Insert, Insert, UpdateAfter, Insert}, []int64{1, 2, 3, 4, 5})
	s1, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1, ExpectedLatest: 0, Properties: map[string]string{"log.seq": "5"}})
	require.NoError(t, err)
	require.Equal(t, int64(1), s1.ID)
	require.Equal(t, int64(4), s1.TotalRecordCount)
	require.Equal(t, []string{"1,a2,x", "2,b,x", "3,null,x", "4,d,x"}, scanAll(t, tb, s1, nil))

	w2 := tb.NewWrite(ctx)
	writeRows(t, w2, tb, []row{{2, sp("b2"), "x"}, {3, nil, "x"}, {5, sp("e"), "x"}, {5, sp("e"), "x"}},
		[]RowKind{UpdateAfter, Delete, Insert, Delete}, []int64{6, 7, 8, 9})
	s2, err := w2.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 1, Properties: map[string]string{"log.seq": "9"}})
	require.NoError(t, err)
	require.Equal(t, int64(2), s2.ID)
	require.Equal(t, "9", s2.Properties["log.seq"])
	require.Equal(t, []string{"1,a2,x", "2,b2,x", "4,d,x"}, scanAll(t, tb, s2, nil))
	require.Equal(t, []string{"a2", "b2", "d"}, scanAll(t, tb, s2, []string{"name"}))
	// old snapshot still readable
	require.Equal(t, []string{"1,a2,x", "2,b,x", "3,null,x", "4,d,x"}, scanAll(t, tb, s1, nil))
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), latest.ID)

	// delete row counts and min/max keys are exact
	entries, _, err := tb.dataFiles(ctx, s2)
	require.NoError(t, err)
	var dels int64
	for _, e := range entries {
		dels += *e.File.DeleteRowCount
		require.Equal(t, int32(2), e.TotalBuckets)
	}
	require.Equal(t, int64(2), dels) // id 3 and id 5 retracts

	// A second catalog (another process) sees the same state through LATEST.
	c2 := b.open(t, nil)
	tb2, err := c2.GetTable(ctx, "db", "pk")
	require.NoError(t, err)
	latest, err = tb2.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), latest.ID)
	require.Equal(t, []string{"1,a2,x", "2,b2,x", "4,d,x"}, scanAll(t, tb2, latest, nil))

	// The layout is Paimon's, byte for byte where a local reader looks: open the files the
	// backend stored with a local catalog and read the same rows.
	hint, err := os.ReadFile(b.localPath(filepath.Join(tb.Path(), "snapshot", "LATEST")))
	require.NoError(t, err)
	require.Equal(t, "2", string(hint))
	for _, p := range []string{"schema/schema-0", "snapshot/snapshot-1", "snapshot/snapshot-2", "bucket-0", "bucket-1", "manifest"} {
		_, err := os.Stat(b.localPath(filepath.Join(tb.Path(), p)))
		require.NoError(t, err, p)
	}
	lc, err := OpenCatalog(b.localPath(filepath.Dir(filepath.Dir(tb.Path()))))
	require.NoError(t, err)
	ltb, err := lc.GetTable(ctx, "db", "pk")
	require.NoError(t, err)
	ls, err := ltb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"1,a2,x", "2,b2,x", "4,d,x"}, scanAll(t, ltb, ls, nil))
}

func scenarioAppendPartitioned(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "2024-01-01"}, {2, sp("b"), "2024-01-02"}, {1, sp("a"), "2024-01-01"}, {3, nil, ""}}, nil, nil)
	s1, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	w = tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{4, sp("d"), "2024-01-02"}}, nil, nil)
	s2, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: s1.ID})
	require.NoError(t, err)
	require.Equal(t, int64(5), s2.TotalRecordCount)
	require.Equal(t, []string{"1,a,2024-01-01", "1,a,2024-01-01", "2,b,2024-01-02", "3,null,", "4,d,2024-01-02"}, scanAll(t, tb, s2, nil))
	fio := c.FileIO()
	ents, err := fio.List(ctx, tb.Path())
	require.NoError(t, err)
	var dirs []string
	for _, e := range ents {
		if e.IsDir {
			dirs = append(dirs, e.Name)
		}
	}
	require.Equal(t, []string{"dt=2024-01-01", "dt=2024-01-02", "dt=__DEFAULT_PARTITION__", "manifest", "schema", "snapshot"}, dirs)
	for _, d := range []string{"dt=2024-01-01/bucket-0", "dt=2024-01-02/bucket-0", "dt=__DEFAULT_PARTITION__/bucket-0"} {
		files, err := fio.List(ctx, filepath.Join(tb.Path(), d))
		require.NoError(t, err, d)
		require.NotEmpty(t, files, d)
		for _, f := range files {
			require.False(t, f.IsDir)
			require.True(t, strings.HasPrefix(f.Name, "data-") && strings.HasSuffix(f.Name, ".parquet"), f.Name)
			require.Positive(t, f.Size, f.Name)
		}
	}
	// empty commit still advances properties
	w = tb.NewWrite(ctx)
	s3, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 3, ExpectedLatest: s2.ID, Properties: map[string]string{"p": "3"}})
	require.NoError(t, err)
	require.Equal(t, int64(3), s3.ID)
	require.Equal(t, int64(0), s3.DeltaRecordCount)
	require.Len(t, scanAll(t, tb, s3, nil), 5)
}

func scenarioCommitFencing(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb, err := c.CreateTable(ctx, "db", "f", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, []RowKind{Insert}, []int64{1})
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	w = tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{2, sp("b"), "x"}}, []RowKind{Insert}, []int64{2})
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 0})
	require.ErrorIs(t, err, ErrCommitConflict)
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), latest.ID)
	s2, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 2, ExpectedLatest: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x", "2,b,x"}, scanAll(t, tb, s2, nil))

	// A snapshot created by someone else after the latest check is also a conflict (the
	// LATEST hint is stale: the reader must find snapshot-3 anyway).
	w = tb.NewWrite(ctx)
	require.NoError(t, c.FileIO().CreateExclusive(ctx, tb.snapshotPath(3), []byte("{}")))
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 3, ExpectedLatest: 2})
	require.ErrorIs(t, err, ErrCommitConflict)
	w.Abort()
	id, err := tb.latestSnapshotID(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), id)
}

// snapshotBarrier holds every CreateExclusive of a snapshot file until n callers arrived, so
// racing committers all pass the ExpectedLatest check before any snapshot exists.
type snapshotBarrier struct {
	fileio.FileIO
	wg      *sync.WaitGroup
	arrived *sync.Once // a writer that fails before its snapshot arrives on exit (no deadlock)
}

func (s snapshotBarrier) CreateExclusive(ctx context.Context, p string, data []byte) error {
	if strings.Contains(p, "/snapshot/snapshot-") {
		s.arrived.Do(s.wg.Done)
		s.wg.Wait()
	}
	return s.FileIO.CreateExclusive(ctx, p, data)
}

func scenarioRacingWriters(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	_, err := c.CreateTable(ctx, "db", "r", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	const writers, rounds = 3, 4
	for round := 0; round < rounds; round++ {
		var barrier sync.WaitGroup
		barrier.Add(writers)
		tables := make([]*Table, writers)
		arrived := make([]sync.Once, writers)
		for i := range tables {
			wc := b.open(t, func(f fileio.FileIO) fileio.FileIO {
				return snapshotBarrier{FileIO: f, wg: &barrier, arrived: &arrived[i]}
			})
			tables[i], err = wc.GetTable(ctx, "db", "r")
			require.NoError(t, err)
		}
		errs := make([]error, writers)
		var done sync.WaitGroup
		for i, tb := range tables {
			done.Add(1)
			go func() {
				defer done.Done()
				defer arrived[i].Do(barrier.Done)
				w := tb.NewWrite(ctx)
				id := int64(round*writers + i + 1)
				rec := buildRows(t, tb, []row{{id, sp(fmt.Sprintf("w%d", i)), "x"}})
				defer rec.Release()
				if err := w.Write(ctx, 0, rec, []RowKind{Insert}, []int64{id}); err != nil {
					errs[i] = err
					return
				}
				_, errs[i] = w.Commit(ctx, CommitOptions{CommitUser: fmt.Sprintf("w%d", i), Identifier: int64(round + 1), ExpectedLatest: int64(round)})
			}()
		}
		done.Wait()
		wins := 0
		for i, err := range errs {
			if err == nil {
				wins++
				continue
			}
			require.ErrorIs(t, err, ErrCommitConflict, "writer %d", i)
			require.Contains(t, err.Error(), "created concurrently")
		}
		require.Equal(t, 1, wins, "round %d: exactly one writer must win", round)
		tb, err := c.GetTable(ctx, "db", "r")
		require.NoError(t, err)
		s, err := tb.LatestSnapshot(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(round+1), s.ID)
		require.Len(t, scanAll(t, tb, s, nil), round+1)
	}
}

func scenarioMissingFile(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	fio := c.FileIO()
	tb, err := c.CreateTable(ctx, "db", "c", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, nil, nil)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	missing := filepath.Join(tb.Path(), "snapshot", "snapshot-99")
	_, err = fio.Read(ctx, missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), "db.db/c/snapshot/snapshot-99", "named relative to the warehouse")
	require.NotContains(t, err.Error(), missing)
	_, err = fio.Open(ctx, missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), "db.db/c/snapshot/snapshot-99")
	require.NotContains(t, err.Error(), missing)
	_, err = tb.Snapshot(ctx, 99)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), "snapshot-99")
	ok, err := fio.Exists(ctx, missing)
	require.NoError(t, err)
	require.False(t, ok)
	ents, err := fio.List(ctx, filepath.Join(tb.Path(), "nodir"))
	require.NoError(t, err)
	require.Empty(t, ents)
	require.NoError(t, fio.Remove(ctx, missing))

	metas, err := tb.readManifestList(ctx, s.DeltaManifestList)
	require.NoError(t, err)
	require.Len(t, metas, 1)
	mpath := tb.manifestPath(metas[0].FileName)
	require.ErrorIs(t, fio.CreateExclusive(ctx, mpath, []byte("x")), os.ErrExist)
	require.NoError(t, fio.WriteAtomic(ctx, mpath, []byte("garbage")))
	_, err = tb.Scan(ctx, s, ScanOptions{})
	require.ErrorIs(t, err, manifest.ErrCorrupt)
	require.Contains(t, err.Error(), metas[0].FileName)
	require.NoError(t, fio.Remove(ctx, mpath))
	_, err = tb.Scan(ctx, s, ScanOptions{})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), metas[0].FileName)
}

// countingFileIO counts the FileIO calls a snapshot lookup makes.
type countingFileIO struct {
	fileio.FileIO
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingFileIO) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countingFileIO) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.calls
	c.calls = map[string]int{}
	return m
}

func (c *countingFileIO) Read(ctx context.Context, p string) ([]byte, error) {
	c.count("read")
	return c.FileIO.Read(ctx, p)
}

func (c *countingFileIO) Exists(ctx context.Context, p string) (bool, error) {
	c.count("exists")
	return c.FileIO.Exists(ctx, p)
}

func (c *countingFileIO) List(ctx context.Context, dir string) ([]fileio.FileInfo, error) {
	c.count("list")
	return c.FileIO.List(ctx, dir)
}

func (c *countingFileIO) Version(ctx context.Context, p string) (string, error) {
	c.count("version")
	return c.FileIO.Version(ctx, p)
}

// A table remembers its latest snapshot: looking it up again costs two version checks and no
// read, and the lookup still sees a snapshot committed through another Table, a snapshot
// file replaced by other content (a dropped and re-created table, a rollback), and an
// expired one.
func scenarioLatestSnapshotRemembered(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	counter := &countingFileIO{calls: map[string]int{}}
	c := b.open(t, func(f fileio.FileIO) fileio.FileIO { counter.FileIO = f; return counter })
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	tb, err := c.CreateTable(ctx, "db", "l", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	commit := func(tb *Table, id int64, p string) {
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, []row{{id, sp("a"), "x"}}, []RowKind{Insert}, []int64{id})
		_, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: id, ExpectedLatest: id - 1, Properties: map[string]string{"p": p}})
		require.NoError(t, err)
	}
	latest := func() *Snapshot {
		s, err := tb.LatestSnapshot(ctx)
		require.NoError(t, err)
		return s
	}
	commit(tb, 1, "1")
	require.Equal(t, "1", latest().Properties["p"])
	counter.take()
	require.Equal(t, "1", latest().Properties["p"])
	require.Equal(t, map[string]int{"version": 2}, counter.take(), "a remembered latest snapshot is checked, not read")

	other, err := c.GetTable(ctx, "db", "l")
	require.NoError(t, err)
	commit(other, 2, "2")
	require.Equal(t, int64(2), latest().ID, "a snapshot committed through another Table")
	require.Equal(t, "2", latest().Properties["p"])

	// snapshot-2 replaced by other content under the same id
	s2 := *latest()
	s2.Properties = map[string]string{"p": "re-created"}
	data, err := json.Marshal(&s2)
	require.NoError(t, err)
	require.NoError(t, c.FileIO().Remove(ctx, tb.snapshotPath(2)))
	require.NoError(t, c.FileIO().CreateExclusive(ctx, tb.snapshotPath(2), data))
	require.Equal(t, "re-created", latest().Properties["p"])

	// snapshot-2 gone (rolled back): the latest is 1 again, whatever LATEST says
	require.NoError(t, c.FileIO().Remove(ctx, tb.snapshotPath(2)))
	require.Equal(t, int64(1), latest().ID)
	id, err := tb.latestSnapshotID(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), id)
}

// scenarioTableErrorsNameWarehousePaths: a table's errors name its files relative to the
// warehouse (not the directory or s3://bucket/prefix), and a data-file.prefix that would
// leave the table is refused.
func scenarioTableErrorsNameWarehousePaths(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	_, err = tb.Snapshot(ctx, 5)
	require.ErrorIs(t, err, fs.ErrNotExist)
	t.Log(err)
	require.NotContains(t, err.Error(), "s3://")
	require.NotContains(t, err.Error(), c.Warehouse())
	require.Contains(t, err.Error(), "db.db/t/snapshot/snapshot-5")
	_, err = c.AlterTableOptions(ctx, "db", "t", map[string]string{"data-file.prefix": "../../x-"})
	require.ErrorIs(t, err, ErrInvalidOption)
}
