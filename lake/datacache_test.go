package lake

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
)

// storeCounter stands for a FileIO over an object store (it is not a fileio.Local, so
// data files are read through the block cache) and counts the requests made of it:
// reads, stats, listings, opens and the reads of opened files.
type storeCounter struct {
	fileio.FileIO
	mu  sync.Mutex
	ops []string
}

func (s *storeCounter) count(op, p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, op+" "+p)
}

// take returns the requests made since the last take.
func (s *storeCounter) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := s.ops
	s.ops = nil
	sort.Strings(ops)
	return ops
}

func (s *storeCounter) Read(ctx context.Context, p string) ([]byte, error) {
	s.count("read", p)
	return s.FileIO.Read(ctx, p)
}

func (s *storeCounter) Exists(ctx context.Context, p string) (bool, error) {
	s.count("exists", p)
	return s.FileIO.Exists(ctx, p)
}

func (s *storeCounter) Version(ctx context.Context, p string) (string, error) {
	s.count("version", p)
	return s.FileIO.Version(ctx, p)
}

func (s *storeCounter) List(ctx context.Context, dir string) ([]fileio.FileInfo, error) {
	s.count("list", dir)
	return s.FileIO.List(ctx, dir)
}

func (s *storeCounter) Open(ctx context.Context, p string) (fileio.ReadAtSeekCloser, error) {
	s.count("open", p)
	f, err := s.FileIO.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return &countedFile{ReadAtSeekCloser: f, s: s, p: p}, nil
}

type countedFile struct {
	fileio.ReadAtSeekCloser
	s *storeCounter
	p string
}

func (f *countedFile) ReadAt(b []byte, off int64) (int, error) {
	f.s.count("get", f.p)
	return f.ReadAtSeekCloser.ReadAt(b, off)
}

func (f *countedFile) Read(b []byte) (int, error) {
	f.s.count("get", f.p)
	return f.ReadAtSeekCloser.Read(b)
}

// Reads through the block cache return the file's bytes for any range, and a range read
// before costs no request; a large read goes to the store and is not kept.
func TestDataBlockCache(t *testing.T) {
	ctx := t.Context()
	saved := DataCacheBytes
	defer func() { DataCacheBytes = saved }()
	DataCacheBytes = 64 << 20
	dir := t.TempDir()
	counter := &storeCounter{FileIO: fileio.Local{}}
	data := fileiotest.PseudoRandom(3*dataBlock+123, 5)
	path := dir + "/data-" + t.Name() + ".parquet"
	require.NoError(t, fileio.Local{}.WriteAtomic(ctx, path, data))

	f, err := openData(ctx, counter, path)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		off := rng.Int64N(int64(len(data)))
		n := rng.IntN(2*dataBlock) + 1
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, off)
		want := data[off:min(off+int64(n), int64(len(data)))]
		require.Equal(t, len(want), got)
		require.True(t, bytes.Equal(want, buf[:got]), "range %d+%d", off, n)
		if got < n {
			require.ErrorIs(t, err, io.EOF)
		} else {
			require.NoError(t, err)
		}
	}
	require.NoError(t, f.Close())
	counter.take()
	f, err = openData(ctx, counter, path)
	require.NoError(t, err)
	buf := make([]byte, 1000)
	_, err = f.ReadAt(buf, dataBlock-10)
	require.NoError(t, err)
	require.Equal(t, data[dataBlock-10:dataBlock+990], buf)
	end, err := f.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), end)
	require.Empty(t, counter.take(), "cached: neither opened nor read")

	big := make([]byte, dataCacheMaxRead+1)
	other := path + ".big"
	require.NoError(t, fileio.Local{}.WriteAtomic(ctx, other, fileiotest.PseudoRandom(len(big), 6)))
	g, err := openData(ctx, counter, other)
	require.NoError(t, err)
	for range 2 {
		_, err = g.ReadAt(big, 0)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"get " + other, "get " + other, "open " + other}, counter.take(), "large reads are not cached")
	require.NoError(t, g.Close())
	require.NoError(t, f.Close())
}
