package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// ---- a real S3 server: Versity S3 Gateway over a temp directory ----

const (
	vgwAccessKey = testserver.S3AccessKey
	vgwSecretKey = testserver.S3SecretKey
	vgwBucket    = "lake"
)

// versityGW is a running `versitygw posix` on loopback; its objects are files under Root/<bucket>/.
type versityGW struct {
	Endpoint string
	Root     string
}

// Options returns S3Options with the gateway's root credentials.
func (g *versityGW) Options() S3Options {
	return S3Options{Endpoint: g.Endpoint, Region: "us-east-1", AccessKeyID: vgwAccessKey, SecretAccessKey: vgwSecretKey}
}

// versityGWBinary finds the gateway: $VERSITYGW, else `versitygw` on PATH, else the test is skipped.
// startVersityGW starts the gateway (see testserver.StartVersityGW) and
// creates bucket vgwBucket.
func startVersityGW(t testing.TB) *versityGW {
	endpoint, root := testserver.StartVersityGW(t)
	g := &versityGW{Endpoint: endpoint, Root: root}
	fio, err := NewS3FileIO(context.Background(), vgwBucket, g.Options())
	require.NoError(t, err)
	_, err = fio.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(vgwBucket)})
	require.NoError(t, err, "create bucket")
	return g
}

// ---- backends: the same scenarios on local disk and on S3 ----

// lakeBackend opens catalogs over one fresh warehouse; wrap (may be nil) decorates the FileIO.
type lakeBackend struct {
	name string
	open func(t *testing.T, wrap func(FileIO) FileIO) *Catalog
	// keyPath is the file on local disk that holds a FileIO path (for S3: the gateway's file).
	localPath func(p string) string
}

func localBackend(t *testing.T) lakeBackend {
	dir := t.TempDir()
	return lakeBackend{name: "local",
		open: func(t *testing.T, wrap func(FileIO) FileIO) *Catalog {
			var fio FileIO = LocalFileIO{}
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
		open: func(t *testing.T, wrap func(FileIO) FileIO) *Catalog {
			ctx := context.Background()
			if wrap == nil {
				c, err := OpenCatalogURL(ctx, "s3://"+vgwBucket+"/"+prefix, g.Options())
				require.NoError(t, err)
				return c
			}
			s3fio, err := NewS3FileIO(ctx, vgwBucket, g.Options())
			require.NoError(t, err)
			c, err := OpenCatalogFileIO(ctx, "/"+prefix, wrap(s3fio))
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
	{"LatestSnapshotRemembered", scenarioLatestSnapshotRemembered},
}

// TestLakeScenarios runs every scenario on local disk and on a real S3 server (Versity S3
// Gateway; skipped only when no versitygw binary is available).
func TestLakeScenarios(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		for _, sc := range lakeScenarios {
			t.Run(sc.name, func(t *testing.T) { sc.run(t, localBackend(t)) })
		}
	})
	t.Run("s3", func(t *testing.T) {
		g := startVersityGW(t)
		for _, sc := range lakeScenarios {
			t.Run(sc.name, func(t *testing.T) { sc.run(t, s3Backend(t, g, "wh/"+sc.name)) })
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
	require.NoError(t, c.CreateDatabase(t.Context(), "a", false)) // empty database: must still exist
	dbs, err = c.ListDatabases(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "db"}, dbs)
	tables, err := c.ListTables(t.Context(), "a")
	require.NoError(t, err)
	require.Empty(t, tables)

	s := Schema{Columns: []Column{{Name: "k", Type: mustType(t, "INT")}, {Name: "v", Type: mustType(t, "STRING")}}, PrimaryKeys: []string{"k"}}
	for _, n := range []string{"t2", "t1"} {
		_, err = c.CreateTable(t.Context(), "db", n, s, false)
		require.NoError(t, err)
	}
	_, err = c.CreateTable(t.Context(), "db", "t1", s, false)
	require.ErrorIs(t, err, ErrTableExists)
	tables, err = c.ListTables(t.Context(), "db")
	require.NoError(t, err)
	require.Equal(t, []string{"t1", "t2"}, tables)
	tb2, err := c.AlterTableOptions(context.Background(), "db", "t1", map[string]string{"x": "1"})
	require.NoError(t, err)
	require.Equal(t, int64(1), tb2.Schema().ID)
	tb3, err := c.GetTable(t.Context(), "db", "t1")
	require.NoError(t, err)
	require.Equal(t, "1", tb3.Schema().Options["x"])

	require.NoError(t, c.DropTable(t.Context(), "db", "t1", false))
	require.ErrorIs(t, c.DropTable(t.Context(), "db", "t1", false), ErrTableNotFound)
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
	tb, err := c.CreateTable(ctx, "db", "pk", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "2"}}, false)
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
	require.Equal(t, []string{"1,a2,x", "2,b,x", "3,null,x", "4,d,x"}, scanAll(t, tb, s1, nil))

	// A second catalog (another process) sees the same state through LATEST.
	c2 := b.open(t, nil)
	tb2, err := c2.GetTable(ctx, "db", "pk")
	require.NoError(t, err)
	latest, err := tb2.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), latest.ID)
	require.Equal(t, []string{"1,a2,x", "2,b2,x", "4,d,x"}, scanAll(t, tb2, latest, nil))

	// The layout is Paimon's, byte for byte where a local reader looks: open the files the
	// backend stored with a LocalFileIO catalog and read the same rows.
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
	tb, err := c.CreateTable(ctx, "db", "ap", Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
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
	w = tb.NewWrite(ctx)
	s3, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 3, ExpectedLatest: s2.ID, Properties: map[string]string{"p": "3"}})
	require.NoError(t, err)
	require.Equal(t, int64(3), s3.ID)
	require.Len(t, scanAll(t, tb, s3, nil), 5)
}

func scenarioCommitFencing(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb, err := c.CreateTable(ctx, "db", "f", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
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
	FileIO
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
	_, err := c.CreateTable(ctx, "db", "r", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	const writers, rounds = 3, 4
	for round := 0; round < rounds; round++ {
		var barrier sync.WaitGroup
		barrier.Add(writers)
		tables := make([]*Table, writers)
		arrived := make([]sync.Once, writers)
		for i := range tables {
			wc := b.open(t, func(f FileIO) FileIO { return snapshotBarrier{FileIO: f, wg: &barrier, arrived: &arrived[i]} })
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
	tb, err := c.CreateTable(ctx, "db", "c", Schema{Columns: testCols}, false)
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
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), metas[0].FileName)
	require.NoError(t, fio.Remove(ctx, mpath))
	_, err = tb.Scan(ctx, s, ScanOptions{})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), metas[0].FileName)
}

// ---- S3-only tests ----

func newTestS3FileIO(t *testing.T, g *versityGW, opts func(*S3Options)) *S3FileIO {
	o := g.Options()
	if opts != nil {
		opts(&o)
	}
	fio, err := NewS3FileIO(context.Background(), vgwBucket, o)
	require.NoError(t, err)
	return fio
}

func pseudoRandom(n int, seed uint64) []byte {
	out := make([]byte, n)
	x := seed | 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = byte(x)
	}
	return out
}

func TestS3FileIO(t *testing.T) {
	g := startVersityGW(t)
	ctx := context.Background()
	fio := newTestS3FileIO(t, g, func(o *S3Options) { o.PartSize = minPartSize })

	t.Run("MultipartStreamingWriteRangedRead", func(t *testing.T) {
		data := pseudoRandom(13<<20+12345, 7) // three parts
		w, err := fio.Create(ctx, "/big/data-1.parquet")
		require.NoError(t, err)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 777777)
			k, err := w.Write(rest[:n])
			require.NoError(t, err)
			require.Equal(t, n, k)
			rest = rest[n:]
		}
		ok, err := fio.Exists(ctx, "/big/data-1.parquet")
		require.NoError(t, err)
		require.False(t, ok, "not visible before Close")
		require.NoError(t, w.Close())
		got, err := fio.Read(ctx, "/big/data-1.parquet")
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, got))
		ents, err := fio.List(ctx, "/big")
		require.NoError(t, err)
		require.Equal(t, []FileInfo{{Name: "data-1.parquet", Size: int64(len(data))}}, withoutModTime(t, ents))

		r, err := fio.Open(ctx, "s3://"+vgwBucket+"/big/data-1.parquet")
		require.NoError(t, err)
		defer r.Close()
		size, err := r.Seek(0, 2)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), size)
		for _, rg := range [][2]int{{0, 10}, {5<<20 - 3, 7}, {len(data) - 100, 100}, {1 << 20, 3 << 20}} {
			buf := make([]byte, rg[1])
			n, err := r.ReadAt(buf, int64(rg[0]))
			require.NoError(t, err)
			require.Equal(t, rg[1], n)
			require.True(t, bytes.Equal(data[rg[0]:rg[0]+rg[1]], buf), "range %v", rg)
		}
		buf := make([]byte, 10)
		n, err := r.ReadAt(buf, int64(len(data)-4))
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, 4, n)
		_, err = r.Seek(int64(len(data)-2), 0)
		require.NoError(t, err)
		n, err = r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		_, err = r.Read(buf)
		require.ErrorIs(t, err, io.EOF)

		// Create never replaces: multipart and single-part uploads both fail on an existing key.
		w, err = fio.Create(ctx, "/big/data-1.parquet")
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		require.ErrorIs(t, w.Close(), os.ErrExist)
		w, err = fio.Create(ctx, "/big/data-1.parquet")
		require.NoError(t, err)
		_, err = w.Write([]byte("small"))
		require.NoError(t, err)
		require.ErrorIs(t, w.Close(), os.ErrExist)
		got, err = fio.Read(ctx, "/big/data-1.parquet")
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, got))
	})

	t.Run("CanceledUploadIsAborted", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		w, err := fio.Create(cctx, "/big/canceled")
		require.NoError(t, err)
		_, err = w.Write(pseudoRandom(6<<20, 3))
		require.NoError(t, err)
		cancel()
		_, _ = w.Write(pseudoRandom(6<<20, 4))
		require.Error(t, w.Close())
		ok, err := fio.Exists(ctx, "/big/canceled")
		require.NoError(t, err)
		require.False(t, ok)
		ups, err := fio.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(vgwBucket)})
		require.NoError(t, err)
		require.Empty(t, ups.Uploads, "the multipart upload was aborted")
	})

	t.Run("CreateExclusiveRace", func(t *testing.T) {
		const n = 8
		for round := 0; round < 5; round++ {
			key := fmt.Sprintf("/race/snapshot-%d", round)
			var start, done sync.WaitGroup
			start.Add(1)
			errs := make([]error, n)
			for i := 0; i < n; i++ {
				done.Add(1)
				go func() {
					defer done.Done()
					start.Wait()
					errs[i] = fio.CreateExclusive(ctx, key, []byte(fmt.Sprintf("writer-%d", i)))
				}()
			}
			start.Done()
			done.Wait()
			winner := -1
			for i, err := range errs {
				if err == nil {
					require.Equal(t, -1, winner, "two winners")
					winner = i
				} else {
					require.ErrorIs(t, err, os.ErrExist)
					require.Contains(t, err.Error(), "s3://"+vgwBucket+key)
				}
			}
			require.NotEqual(t, -1, winner)
			got, err := fio.Read(ctx, key)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("writer-%d", winner), string(got))
		}
	})

	t.Run("CreateExclusiveIdempotentAndFallback", func(t *testing.T) {
		// A retried PUT whose first attempt succeeded finds its own bytes: success.
		require.NoError(t, fio.CreateExclusive(ctx, "/idem/snapshot-1", []byte("same")))
		require.NoError(t, fio.CreateExclusive(ctx, "/idem/snapshot-1", []byte("same")))
		require.ErrorIs(t, fio.CreateExclusive(ctx, "/idem/snapshot-1", []byte("other")), os.ErrExist)
		// Without conditional writes: HEAD then PUT still refuses an existing key.
		nc := newTestS3FileIO(t, g, func(o *S3Options) { o.DisableConditionalWrites = true })
		require.ErrorIs(t, nc.CreateExclusive(ctx, "/idem/snapshot-1", []byte("other")), os.ErrExist)
		require.NoError(t, nc.CreateExclusive(ctx, "/idem/snapshot-2", []byte("x")))
	})

	t.Run("WriteAtomicOverwrites", func(t *testing.T) {
		require.NoError(t, fio.WriteAtomic(ctx, "/hint/LATEST", []byte("1")))
		require.NoError(t, fio.WriteAtomic(ctx, "/hint/LATEST", []byte("22")))
		got, err := fio.Read(ctx, "/hint/LATEST")
		require.NoError(t, err)
		require.Equal(t, "22", string(got))
	})

	t.Run("DirectoriesArePrefixes", func(t *testing.T) {
		require.NoError(t, fio.MkdirAll(ctx, "/d/empty"))
		require.NoError(t, fio.MkdirAll(ctx, "/d/empty"))
		require.NoError(t, fio.WriteAtomic(ctx, "/d/full/x/y", []byte("1")))
		require.NoError(t, fio.WriteAtomic(ctx, "/d/f", []byte("22")))
		ents, err := fio.List(ctx, "/d")
		require.NoError(t, err)
		require.Equal(t, []FileInfo{{Name: "empty", IsDir: true}, {Name: "f", Size: 2}, {Name: "full", IsDir: true}}, withoutModTime(t, ents))
		for _, p := range []string{"/d", "/d/empty", "/d/full", "/d/full/x", "/d/f"} {
			ok, err := fio.Exists(ctx, p)
			require.NoError(t, err)
			require.True(t, ok, p)
		}
		require.NoError(t, fio.RemoveAll(ctx, "/d"))
		for _, p := range []string{"/d", "/d/empty", "/d/full/x/y"} {
			ok, err := fio.Exists(ctx, p)
			require.NoError(t, err)
			require.False(t, ok, p)
		}
		ents, err = fio.List(ctx, "/")
		require.NoError(t, err)
		for _, e := range ents {
			require.NotEqual(t, "d", e.Name)
		}
	})

	t.Run("ErrorsNameBucketAndKey", func(t *testing.T) {
		other := newTestS3FileIO(t, g, nil)
		other.bucket = "no-such-bucket"
		_, err := other.Read(ctx, "/x/y")
		require.Error(t, err)
		require.Contains(t, err.Error(), "s3://no-such-bucket/x/y")
		require.False(t, errors.Is(err, os.ErrNotExist), "a missing bucket is not a missing file: %v", err)
		_, err = OpenCatalogURL(ctx, "s3://no-such-bucket/wh", g.Options())
		require.Error(t, err)
		require.Contains(t, err.Error(), "no-such-bucket")

		bad := newTestS3FileIO(t, g, func(o *S3Options) { o.SecretAccessKey = "wrong" })
		_, err = bad.Read(ctx, "/x/y")
		require.Error(t, err)
		require.Contains(t, err.Error(), "s3://"+vgwBucket+"/x/y")
		require.False(t, errors.Is(err, os.ErrNotExist))

		_, err = fio.Read(ctx, "s3://other-bucket/x")
		require.ErrorContains(t, err, "not in bucket")
	})

	t.Run("BigTableFileMultipart", func(t *testing.T) {
		c, err := OpenCatalogURL(ctx, "s3://"+vgwBucket+"/bigwh", S3Options{Endpoint: g.Endpoint,
			AccessKeyID: vgwAccessKey, SecretAccessKey: vgwSecretKey, PartSize: minPartSize})
		require.NoError(t, err)
		require.NoError(t, c.CreateDatabase(ctx, "db", false))
		tb, err := c.CreateTable(ctx, "db", "big", Schema{Columns: testCols, Options: map[string]string{"file.compression": "none"}}, false)
		require.NoError(t, err)
		const n = 120000
		rows := make([]row, n)
		noise := pseudoRandom(n*24, 11)
		for i := range rows {
			rows[i] = row{int64(i), sp(fmt.Sprintf("%x", noise[i*24:i*24+24])), "x"}
		}
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, rows, nil, nil)
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
		require.NoError(t, err)
		files, err := c.FileIO().List(ctx, filepath.Join(tb.Path(), "bucket-0"))
		require.NoError(t, err)
		require.Len(t, files, 1)
		require.Greater(t, files[0].Size, int64(minPartSize), "the data file took a multipart upload")
		got := scanAll(t, tb, s, []string{"id"})
		require.Len(t, got, n)
	})
}

func TestOpenCatalogURL(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ in, bucket, prefix string }{
		{"s3://b/wh", "b", "wh"},
		{"s3://b/wh/", "b", "wh"},
		{"s3://b", "b", ""},
		{"s3://b/", "b", ""},
		{"s3a://b/a//c", "b", "a/c"},
	} {
		b, p, ok := ParseS3URL(c.in)
		require.True(t, ok, c.in)
		require.Equal(t, c.bucket, b, c.in)
		require.Equal(t, c.prefix, p, c.in)
	}
	for _, bad := range []string{"/tmp/x", "s3:/b", "s3://", "file:///x"} {
		_, _, ok := ParseS3URL(bad)
		require.False(t, ok, bad)
	}
	_, err := OpenCatalogURL(ctx, "s3:/b/x", S3Options{})
	require.ErrorContains(t, err, "s3://bucket/path")

	dir := t.TempDir()
	lc, err := OpenCatalogURL(ctx, "file://"+dir, S3Options{})
	require.NoError(t, err)
	require.Equal(t, dir, lc.Warehouse())
	lc, err = OpenCatalogURL(ctx, filepath.Join(dir, "w2"), S3Options{})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "w2"), lc.Warehouse())
	_, isLocal := lc.FileIO().(*rootedFileIO).inner.(LocalFileIO)
	require.True(t, isLocal)

	g := startVersityGW(t)
	// Everything from the environment (as `flightd serve` would get it).
	t.Setenv("AWS_ENDPOINT_URL", g.Endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", vgwAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", vgwSecretKey)
	c, err := OpenCatalogURL(ctx, "s3://"+vgwBucket+"/env/wh/", S3Options{})
	require.NoError(t, err)
	require.Equal(t, "s3://"+vgwBucket+"/env/wh", c.Warehouse())
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	_, err = os.Stat(filepath.Join(g.Root, vgwBucket, "env", "wh", "db.db"))
	require.NoError(t, err)
	// The bucket root works as a warehouse too.
	c, err = OpenCatalogURL(ctx, "s3://"+vgwBucket, S3Options{})
	require.NoError(t, err)
	dbs, err := c.ListDatabases(ctx)
	require.NoError(t, err)
	require.Empty(t, dbs) // env/ is not a database
	// Explicit options win over the environment.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	_, err = OpenCatalogURL(ctx, "s3://"+vgwBucket+"/env/wh", S3Options{})
	require.Error(t, err)
	_, err = OpenCatalogURL(ctx, "s3://"+vgwBucket+"/env/wh", g.Options())
	require.NoError(t, err)
}

// withoutModTime checks that files carry a recent ModTime (directories none) and clears it.
func withoutModTime(t *testing.T, ents []FileInfo) []FileInfo {
	out := append([]FileInfo{}, ents...)
	for i := range out {
		if out[i].IsDir {
			require.True(t, out[i].ModTime.IsZero(), out[i].Name)
		} else {
			require.WithinDuration(t, time.Now(), out[i].ModTime, time.Hour, out[i].Name)
		}
		out[i].ModTime = time.Time{}
	}
	return out
}

// countingFileIO counts the FileIO calls a snapshot lookup makes.
type countingFileIO struct {
	FileIO
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

func (c *countingFileIO) List(ctx context.Context, dir string) ([]FileInfo, error) {
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
	c := b.open(t, func(f FileIO) FileIO { counter.FileIO = f; return counter })
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	tb, err := c.CreateTable(ctx, "db", "l", Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
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
