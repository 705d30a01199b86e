package lake

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/paimontype"
)

// recordingFileIO records the operation of every FileIO call.
type recordingFileIO struct {
	fileio.FileIO
	mu    sync.Mutex
	calls []string
}

func (r *recordingFileIO) record(op, p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, op+" "+p)
}

func (r *recordingFileIO) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func (r *recordingFileIO) Read(ctx context.Context, p string) ([]byte, error) {
	r.record("read", p)
	return r.FileIO.Read(ctx, p)
}

func (r *recordingFileIO) Open(ctx context.Context, p string) (fileio.ReadAtSeekCloser, error) {
	r.record("open", p)
	return r.FileIO.Open(ctx, p)
}

func (r *recordingFileIO) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	r.record("create", p)
	return r.FileIO.Create(ctx, p)
}

func (r *recordingFileIO) WriteAtomic(ctx context.Context, p string, data []byte) error {
	r.record("writeatomic", p)
	return r.FileIO.WriteAtomic(ctx, p, data)
}

func (r *recordingFileIO) CreateExclusive(ctx context.Context, p string, data []byte) error {
	r.record("createexclusive", p)
	return r.FileIO.CreateExclusive(ctx, p, data)
}

func (r *recordingFileIO) List(ctx context.Context, dir string) ([]fileio.FileInfo, error) {
	r.record("list", dir)
	return r.FileIO.List(ctx, dir)
}

func (r *recordingFileIO) Exists(ctx context.Context, p string) (bool, error) {
	r.record("exists", p)
	return r.FileIO.Exists(ctx, p)
}

func (r *recordingFileIO) Version(ctx context.Context, p string) (string, error) {
	r.record("version", p)
	return r.FileIO.Version(ctx, p)
}

func (r *recordingFileIO) Remove(ctx context.Context, p string) error {
	r.record("remove", p)
	return r.FileIO.Remove(ctx, p)
}

func (r *recordingFileIO) RemoveAll(ctx context.Context, p string) error {
	r.record("removeall", p)
	return r.FileIO.RemoveAll(ctx, p)
}

func (r *recordingFileIO) MkdirAll(ctx context.Context, dir string) error {
	r.record("mkdirall", dir)
	return r.FileIO.MkdirAll(ctx, dir)
}

func (r *recordingFileIO) SyncDir(ctx context.Context, dir string) error {
	r.record("syncdir", dir)
	return r.FileIO.SyncDir(ctx, dir)
}

// A catalog call whose context is cancelled returns context.Canceled and
// touches no storage: a local FileIO does not look at the context itself.
func TestCatalogCancelledContext(t *testing.T) {
	fio := &recordingFileIO{FileIO: fileio.Local{}}
	c, err := OpenCatalogFileIO(t.Context(), t.TempDir(), fio)
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	_, err = c.CreateTable(t.Context(), "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	fio.take()

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.GetTable(ctx, "db", "t")
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.ListTables(ctx, "db")
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.CreateTable(ctx, "db", "u", paimontype.Schema{Columns: testCols}, false)
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, true)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, c.CreateDatabase(ctx, "db2", false), context.Canceled)
	_, err = c.DatabaseExists(ctx, "db")
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.ListDatabases(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, c.DropTable(ctx, "db", "t", false), context.Canceled)
	require.ErrorIs(t, c.DropDatabase(ctx, "db", false, true), context.Canceled)
	require.Empty(t, fio.take(), "a cancelled call touched storage")

	// The same calls under a live context reach storage, and nothing was
	// created or dropped above.
	tables, err := c.ListTables(t.Context(), "db")
	require.NoError(t, err)
	require.Equal(t, []string{"t"}, tables)
	dbs, err := c.ListDatabases(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"db"}, dbs)
	_, err = c.GetTable(t.Context(), "db", "t")
	require.NoError(t, err)
	require.NotEmpty(t, fio.take())
}
