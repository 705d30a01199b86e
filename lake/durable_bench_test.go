package lake

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/paimontype"
)

// noSyncFS is the operating system without fsync: the lake as it was before it synced.
type noSyncFS struct{ fileio.OSFS }

func (f noSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (fileio.File, error) {
	lf, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{lf}, nil
}
func (noSyncFS) SyncDir(string) error { return nil }

type noSyncFile struct{ fileio.File }

func (noSyncFile) Sync() error { return nil }

// countingFS is the operating system, counting file and directory syncs.
type countingFS struct {
	fileio.OSFS
	files, dirs *atomic.Int64
}

func (f countingFS) OpenFile(name string, flag int, perm fs.FileMode) (fileio.File, error) {
	lf, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{lf, f.files}, nil
}

func (f countingFS) SyncDir(name string) error {
	f.dirs.Add(1)
	return f.OSFS.SyncDir(name)
}

type countingFile struct {
	fileio.File
	n *atomic.Int64
}

func (f countingFile) Sync() error {
	f.n.Add(1)
	return f.File.Sync()
}

// BenchmarkCommitSmallFiles commits one row into each of N partitions (N data files, each in
// its own bucket directory, plus the manifests and the snapshot) to a local directory, with
// the syncs (fsync) and without (nosync, as before the lake synced), side by side. new: every
// commit creates N new partition directories; existing: the partitions exist.
func BenchmarkCommitSmallFiles(b *testing.B) {
	for _, n := range []int{1, 16} {
		for _, parts := range []string{"existing", "new"} {
			for _, mode := range []string{"nosync", "fsync"} {
				b.Run(fmt.Sprintf("files=%d/%s/%s", n, parts, mode), func(b *testing.B) {
					var files, dirs atomic.Int64
					fio := fileio.Local{FS: countingFS{files: &files, dirs: &dirs}}
					if mode == "nosync" {
						fio = fileio.Local{FS: noSyncFS{}}
					}
					ctx := context.Background()
					c, err := OpenCatalogFileIO(ctx, b.TempDir(), fio)
					require.NoError(b, err)
					require.NoError(b, c.CreateDatabase(b.Context(), "db", false))
					tb, err := c.CreateTable(b.Context(), "db", "t", paimontype.Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
					require.NoError(b, err)
					latest := int64(0)
					commit := func(round int) {
						var rows []row
						for i := 0; i < n; i++ {
							dt := fmt.Sprintf("p%d", i)
							if parts == "new" {
								dt = fmt.Sprintf("p%d-%d", round, i)
							}
							rows = append(rows, row{int64(i), sp("x"), dt})
						}
						w := tb.NewWrite(ctx)
						rec, err := buildRowsErr(tb, rows)
						require.NoError(b, err)
						require.NoError(b, w.Write(ctx, 0, rec, nil, nil))
						rec.Release()
						s, err := w.Commit(ctx, CommitOptions{CommitUser: "b", Identifier: latest + 1, ExpectedLatest: latest})
						require.NoError(b, err)
						latest = s.ID
					}
					commit(-1)
					files.Store(0)
					dirs.Store(0)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						commit(i)
					}
					if mode == "fsync" {
						b.ReportMetric(float64(files.Load())/float64(b.N), "fsyncs/op")
						b.ReportMetric(float64(dirs.Load())/float64(b.N), "dirsyncs/op")
					}
				})
			}
		}
	}
}

// BenchmarkSyncDirs syncs 16 directories, each with a new entry (as a commit into 16
// buckets), one after the other and as fileio.SyncDirs does (concurrently).
func BenchmarkSyncDirs(b *testing.B) {
	root := b.TempDir()
	dirs := map[string]bool{}
	for i := 0; i < 16; i++ {
		d := filepath.Join(root, strconv.Itoa(i))
		require.NoError(b, os.Mkdir(d, 0o755))
		dirs[d] = true
	}
	n := 0
	for _, mode := range []string{"sequential", "concurrent"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				n++
				for d := range dirs {
					f, err := os.Create(filepath.Join(d, strconv.Itoa(n)))
					require.NoError(b, err)
					require.NoError(b, f.Close())
				}
				if mode == "concurrent" {
					require.NoError(b, fileio.SyncDirs(context.Background(), fileio.Local{}, dirs))
					continue
				}
				for d := range dirs {
					require.NoError(b, fileio.OSFS{}.SyncDir(d))
				}
			}
		})
	}
}
