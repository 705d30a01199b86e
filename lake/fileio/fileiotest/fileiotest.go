// Package fileiotest is the conformance suite of fileio.FileIO: the behaviour the lake relies
// on, run against every FileIO (fileio.Local on the operating system and on StrictMem, a
// fileio.Rooted over each, the S3 FileIO against a real S3 server) with the same tests. It
// also holds StrictMem, the file system in memory of the power-cut tests.
package fileiotest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
)

// Harness opens FileIOs for the suite.
type Harness struct {
	// Open returns the FileIO under test and a directory of it, empty and not shared with
	// other calls, for the test to work in: an absolute path, or "" for a *fileio.Rooted
	// (its root). The parent directory of a Rooted's root must hold nothing else: the suite
	// checks that nothing is created beside the root.
	Open func(t *testing.T) (fio fileio.FileIO, dir string)
	// LargeFile is the size of a file that crosses the FileIO's streaming limits (S3: more
	// than one multipart part); 0 means 13 MiB and a bit.
	LargeFile int
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.LargeFile == 0 {
		h.LargeFile = 13<<20 + 12345
	}
	t.Run("ReadOpen", func(t *testing.T) { testReadOpen(t, h) })
	t.Run("CreateLarge", func(t *testing.T) { testCreateLarge(t, h) })
	t.Run("CreateRefusesExisting", func(t *testing.T) { testCreateRefusesExisting(t, h) })
	t.Run("WriteAtomicReplacesWhole", func(t *testing.T) { testWriteAtomic(t, h) })
	t.Run("CreateExclusive", func(t *testing.T) { testCreateExclusive(t, h) })
	t.Run("CreateExclusiveRace", func(t *testing.T) { testCreateExclusiveRace(t, h) })
	t.Run("List", func(t *testing.T) { testList(t, h) })
	t.Run("Exists", func(t *testing.T) { testExists(t, h) })
	t.Run("Version", func(t *testing.T) { testVersion(t, h) })
	t.Run("Remove", func(t *testing.T) { testRemove(t, h) })
	t.Run("RemoveAll", func(t *testing.T) { testRemoveAll(t, h) })
	t.Run("MkdirAll", func(t *testing.T) { testMkdirAll(t, h) })
	t.Run("SyncDir", func(t *testing.T) { testSyncDir(t, h) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, h) })
	t.Run("RenameDir", func(t *testing.T) { testRenameDir(t, h) })
	t.Run("PathConfinement", func(t *testing.T) { testConfinement(t, h) })
}

// open opens a FileIO and returns a function that names paths in its directory.
func open(t *testing.T, h Harness) (fileio.FileIO, func(elem ...string) string) {
	t.Helper()
	fio, dir := h.Open(t)
	return fio, func(elem ...string) string { return path.Join(append([]string{dir}, elem...)...) }
}

// PseudoRandom returns n bytes of a xorshift sequence from seed: test data that does not
// compress and differs by seed.
func PseudoRandom(n int, seed uint64) []byte {
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

func write(t *testing.T, fio fileio.FileIO, p string, data []byte) {
	t.Helper()
	require.NoError(t, fio.WriteAtomic(context.Background(), p, data), p)
}

func read(t *testing.T, fio fileio.FileIO, p string) string {
	t.Helper()
	got, err := fio.Read(context.Background(), p)
	require.NoError(t, err, p)
	return string(got)
}

func exists(t *testing.T, fio fileio.FileIO, p string) bool {
	t.Helper()
	ok, err := fio.Exists(context.Background(), p)
	require.NoError(t, err, p)
	return ok
}

// create writes data with Create in chunks of chunk bytes and closes the file, returning
// the first error of Create, Write or Close.
func create(ctx context.Context, fio fileio.FileIO, p string, data []byte, chunk int) error {
	w, err := fio.Create(ctx, p)
	if err != nil {
		return err
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), chunk)
		k, err := w.Write(rest[:n])
		if err != nil {
			_ = w.Close()
			return err
		}
		if k != n {
			_ = w.Close()
			return fmt.Errorf("short write: %d of %d", k, n)
		}
		rest = rest[n:]
	}
	return w.Close()
}

// testReadOpen: Read returns the whole file; an opened file reads at any offset (io.EOF with
// the bytes there are past the end), seeks from the start, the current position and the end,
// and reads on from where it is.
func testReadOpen(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	data := PseudoRandom(100_000, 3)
	write(t, fio, p("f"), data)
	require.Equal(t, string(data), read(t, fio, p("f")))
	write(t, fio, p("empty"), nil)
	require.Empty(t, read(t, fio, p("empty")))

	r, err := fio.Open(ctx, p("f"))
	require.NoError(t, err)
	defer r.Close()
	if s, ok := r.(interface{ Size() int64 }); ok {
		require.Equal(t, int64(len(data)), s.Size())
	}
	size, err := r.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), size)
	for _, rg := range [][2]int{{0, 10}, {4093, 7}, {len(data) - 100, 100}, {1000, 50_000}} {
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
	require.Equal(t, data[len(data)-4:], buf[:4])
	n, err = r.ReadAt(buf, int64(len(data)))
	require.ErrorIs(t, err, io.EOF)
	require.Zero(t, n)

	pos, err := r.Seek(100, io.SeekStart)
	require.NoError(t, err)
	require.Equal(t, int64(100), pos)
	_, err = io.ReadFull(r, buf)
	require.NoError(t, err)
	require.Equal(t, data[100:110], buf)
	pos, err = r.Seek(5, io.SeekCurrent)
	require.NoError(t, err)
	require.Equal(t, int64(115), pos)
	_, err = io.ReadFull(r, buf)
	require.NoError(t, err)
	require.Equal(t, data[115:125], buf)
	_, err = r.Seek(-2, io.SeekEnd)
	require.NoError(t, err)
	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, data[len(data)-2:], buf[:2])
	_, err = r.Read(buf)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, r.Close())
}

// testCreateLarge: a file written with Create in uneven writes, larger than the FileIO's
// streaming limits, reads back whole and at any offset, listed with its size; Create makes
// the directories above the file; writing after Close fails.
func testCreateLarge(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	data := PseudoRandom(h.LargeFile, 7)
	w, err := fio.Create(ctx, p("big", "sub", "data-1.parquet"))
	require.NoError(t, err)
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 777_777)
		k, err := w.Write(rest[:n])
		require.NoError(t, err)
		require.Equal(t, n, k)
		rest = rest[n:]
	}
	require.NoError(t, w.Close())
	_, err = w.Write([]byte("x"))
	require.Error(t, err, "a write after Close")

	got, err := fio.Read(ctx, p("big", "sub", "data-1.parquet"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))
	ents, err := fio.List(ctx, p("big", "sub"))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "data-1.parquet", Size: int64(len(data))}}, withoutModTime(t, ents))
	require.True(t, exists(t, fio, p("big")))

	r, err := fio.Open(ctx, p("big", "sub", "data-1.parquet"))
	require.NoError(t, err)
	defer r.Close()
	size, err := r.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), size)
	for _, rg := range [][2]int{{0, 10}, {5<<20 - 3, 7}, {8<<20 - 5, 10}, {len(data) - 100, 100}, {1 << 20, 3 << 20}} {
		buf := make([]byte, rg[1])
		n, err := r.ReadAt(buf, int64(rg[0]))
		require.NoError(t, err)
		require.Equal(t, rg[1], n)
		require.True(t, bytes.Equal(data[rg[0]:rg[0]+rg[1]], buf), "range %v", rg)
	}
}

// testCreateRefusesExisting: Create never replaces a file, small or large: Create or Close
// fails with fs.ErrExist and the file keeps its content.
func testCreateRefusesExisting(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	data := PseudoRandom(h.LargeFile, 9)
	require.NoError(t, create(ctx, fio, p("d", "data-1"), data, 1<<20))
	require.ErrorIs(t, create(ctx, fio, p("d", "data-1"), PseudoRandom(h.LargeFile, 10), 1<<20), fs.ErrExist, "large")
	require.ErrorIs(t, create(ctx, fio, p("d", "data-1"), []byte("small"), 1<<20), fs.ErrExist, "small")
	got, err := fio.Read(ctx, p("d", "data-1"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "the file kept its content")
	write(t, fio, p("d", "hint"), []byte("1"))
	require.ErrorIs(t, create(ctx, fio, p("d", "hint"), []byte("2"), 1), fs.ErrExist)
	require.Equal(t, "1", read(t, fio, p("d", "hint")))
}

// testWriteAtomic: WriteAtomic creates the file (and the directories above it) or replaces
// it whole, longer or shorter.
func testWriteAtomic(t *testing.T, h Harness) {
	fio, p := open(t, h)
	write(t, fio, p("hint", "LATEST"), []byte("1"))
	require.Equal(t, "1", read(t, fio, p("hint", "LATEST")))
	write(t, fio, p("hint", "LATEST"), []byte("22"))
	require.Equal(t, "22", read(t, fio, p("hint", "LATEST")))
	write(t, fio, p("hint", "LATEST"), []byte("3"))
	require.Equal(t, "3", read(t, fio, p("hint", "LATEST")))
	ents, err := fio.List(context.Background(), p("hint"))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "LATEST", Size: 1}}, withoutModTime(t, ents), "no temporary file left")
}

// testCreateExclusive: CreateExclusive creates a missing file (and the directories above
// it) and refuses an existing one with fs.ErrExist, whatever bytes it was given, the same
// included; the file keeps its content.
func testCreateExclusive(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	require.NoError(t, fio.CreateExclusive(ctx, p("s", "snapshot-1"), []byte("first")))
	require.Equal(t, "first", read(t, fio, p("s", "snapshot-1")))
	require.ErrorIs(t, fio.CreateExclusive(ctx, p("s", "snapshot-1"), []byte("other")), fs.ErrExist)
	require.ErrorIs(t, fio.CreateExclusive(ctx, p("s", "snapshot-1"), []byte("first")), fs.ErrExist, "the same bytes")
	require.Equal(t, "first", read(t, fio, p("s", "snapshot-1")))
	write(t, fio, p("s", "LATEST"), []byte("1"))
	require.ErrorIs(t, fio.CreateExclusive(ctx, p("s", "LATEST"), []byte("2")), fs.ErrExist)
	ents, err := fio.List(ctx, p("s"))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "LATEST", Size: 1}, {Name: "snapshot-1", Size: 5}}, withoutModTime(t, ents),
		"no temporary file left")
}

// testCreateExclusiveRace: of n goroutines creating one file at once, exactly one
// succeeds, the others fail with fs.ErrExist, and the file holds the winner's bytes; also
// when they all write the same bytes.
func testCreateExclusiveRace(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	const n = 8
	for round := 0; round < 6; round++ {
		same := round%2 == 1
		key := p("race", fmt.Sprintf("snapshot-%d", round))
		var start, done sync.WaitGroup
		start.Add(1)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				data := fmt.Sprintf("writer-%d", i)
				if same {
					data = "same"
				}
				errs[i] = fio.CreateExclusive(ctx, key, []byte(data))
			}()
		}
		start.Done()
		done.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "round %d: two winners", round)
				winner = i
			} else {
				require.ErrorIs(t, err, fs.ErrExist, "round %d", round)
			}
		}
		require.NotEqual(t, -1, winner, "round %d: no winner", round)
		want := fmt.Sprintf("writer-%d", winner)
		if same {
			want = "same"
		}
		require.Equal(t, want, read(t, fio, key))
	}
}

// tree makes d/empty (by MkdirAll), d/full/x/y and d/f.
func tree(t *testing.T, fio fileio.FileIO, p func(...string) string) {
	t.Helper()
	require.NoError(t, fio.MkdirAll(context.Background(), p("d", "empty")))
	write(t, fio, p("d", "full", "x", "y"), []byte("1"))
	write(t, fio, p("d", "f"), []byte("22"))
}

// testList: List returns files (with size and modification time) and directories (made by
// MkdirAll or holding files), sorted by name; an empty or a missing directory is empty.
func testList(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	tree(t, fio, p)
	require.NoError(t, create(ctx, fio, p("d", "a"), []byte("333"), 1))
	ents, err := fio.List(ctx, p("d"))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "a", Size: 3}, {Name: "empty", IsDir: true}, {Name: "f", Size: 2}, {Name: "full", IsDir: true}},
		withoutModTime(t, ents))
	ents, err = fio.List(ctx, p("d", "full"))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "x", IsDir: true}}, withoutModTime(t, ents))
	for _, d := range []string{p("d", "empty"), p("d", "missing"), p("missing", "deeper")} {
		ents, err := fio.List(ctx, d)
		require.NoError(t, err, d)
		require.Empty(t, ents, d)
	}
}

// withoutModTime checks that files carry a recent ModTime (directories none) and clears it.
func withoutModTime(t *testing.T, ents []fileio.FileInfo) []fileio.FileInfo {
	t.Helper()
	out := append([]fileio.FileInfo{}, ents...)
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

// testExists: files and directories exist (made by MkdirAll or holding files), missing
// paths do not.
func testExists(t *testing.T, h Harness) {
	fio, p := open(t, h)
	tree(t, fio, p)
	for _, q := range []string{p("d"), p("d", "empty"), p("d", "full"), p("d", "full", "x"), p("d", "full", "x", "y"), p("d", "f")} {
		require.True(t, exists(t, fio, q), q)
	}
	for _, q := range []string{p("d", "g"), p("d", "fu"), p("missing", "x")} {
		require.False(t, exists(t, fio, q), q)
	}
}

// testVersion: a file's version stays while it is unchanged and changes when it is replaced
// by WriteAtomic (with as many bytes included) or removed and created again with other
// bytes; a missing file's is an error matching fs.ErrNotExist.
func testVersion(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	_, err := fio.Version(ctx, p("f"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	version := func() string {
		t.Helper()
		v, err := fio.Version(ctx, p("f"))
		require.NoError(t, err)
		require.NotEmpty(t, v)
		return v
	}
	write(t, fio, p("f"), []byte("aaaa"))
	prev := version()
	require.Equal(t, prev, version(), "unchanged")
	for i, data := range []string{"bbbb", "cccc", "dddd"} {
		write(t, fio, p("f"), []byte(data))
		v := version()
		require.NotEqual(t, prev, v, "rewrite %d kept the version", i)
		prev = v
	}
	require.NoError(t, fio.Remove(ctx, p("f")))
	_, err = fio.Version(ctx, p("f"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, fio.CreateExclusive(ctx, p("f"), []byte("re-created")))
	require.NotEqual(t, prev, version(), "a file created again")
}

// testRemove: Remove removes a file; a missing one is not an error.
func testRemove(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	write(t, fio, p("d", "f"), []byte("1"))
	write(t, fio, p("d", "g"), []byte("2"))
	require.NoError(t, fio.Remove(ctx, p("d", "f")))
	require.False(t, exists(t, fio, p("d", "f")))
	_, err := fio.Read(ctx, p("d", "f"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Equal(t, "2", read(t, fio, p("d", "g")))
	require.NoError(t, fio.Remove(ctx, p("d", "f")), "already removed")
	require.NoError(t, fio.Remove(ctx, p("missing", "f")), "in a missing directory")
}

// testRemoveAll: RemoveAll removes a tree (files, empty directories) or a file, and nothing
// beside it (a sibling whose name it prefixes included); a missing path is not an error.
func testRemoveAll(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	tree(t, fio, p)
	require.NoError(t, create(ctx, fio, p("d", "full", "z"), []byte("2"), 1))
	write(t, fio, p("d2", "keep"), []byte("k"))
	write(t, fio, p("dfile"), []byte("k"))
	require.NoError(t, fio.RemoveAll(ctx, p("d")))
	for _, q := range []string{p("d"), p("d", "empty"), p("d", "full", "x", "y"), p("d", "f")} {
		require.False(t, exists(t, fio, q), q)
	}
	ents, err := fio.List(ctx, p(""))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "d2", IsDir: true}, {Name: "dfile", Size: 1}}, withoutModTime(t, ents))
	require.Equal(t, "k", read(t, fio, p("d2", "keep")))
	require.NoError(t, fio.RemoveAll(ctx, p("d")), "already removed")
	require.NoError(t, fio.RemoveAll(ctx, p("missing", "x")))
	require.NoError(t, fio.RemoveAll(ctx, p("dfile")), "a file")
	require.False(t, exists(t, fio, p("dfile")))
}

// testMkdirAll: MkdirAll creates a directory and its parents, again without error.
func testMkdirAll(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	require.NoError(t, fio.MkdirAll(ctx, p("a", "b", "c")))
	require.NoError(t, fio.MkdirAll(ctx, p("a", "b", "c")))
	require.NoError(t, fio.MkdirAll(ctx, p("a")))
	for _, q := range []string{p("a"), p("a", "b"), p("a", "b", "c")} {
		require.True(t, exists(t, fio, q), q)
	}
	ents, err := fio.List(ctx, p("a"))
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "b", IsDir: true}}, ents)
	write(t, fio, p("a", "b", "c", "f"), []byte("1"))
	require.NoError(t, fio.MkdirAll(ctx, p("a", "b", "c")), "a directory holding a file")
}

// testSyncDir: SyncDir of a directory succeeds, before and after its entries changed; of a
// missing one it does nothing or fails with fs.ErrNotExist (local disks).
func testSyncDir(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	require.NoError(t, fio.MkdirAll(ctx, p("d")))
	require.NoError(t, fio.SyncDir(ctx, p("d")))
	write(t, fio, p("d", "f"), []byte("1"))
	require.NoError(t, fio.CreateExclusive(ctx, p("d", "g"), []byte("2")))
	require.NoError(t, fio.SyncDir(ctx, p("d")))
	require.NoError(t, fio.Remove(ctx, p("d", "f")))
	require.NoError(t, fio.SyncDir(ctx, p("d")))
	if err := fio.SyncDir(ctx, p("missing")); err != nil {
		require.ErrorIs(t, err, fs.ErrNotExist)
	}
}

// testNotFound: reading a missing file (Read, Open, Version), also in a missing directory,
// fails with an error matching fs.ErrNotExist that names the path (relative to the root,
// for a Rooted FileIO).
func testNotFound(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	write(t, fio, p("d", "f"), []byte("1"))
	for _, q := range []string{p("d", "snapshot-99"), p("missing", "snapshot-99")} {
		_, err := fio.Read(ctx, q)
		requireNotFound(t, fio, err, q)
		_, err = fio.Open(ctx, q)
		requireNotFound(t, fio, err, q)
		_, err = fio.Version(ctx, q)
		require.ErrorIs(t, err, fs.ErrNotExist, q)
	}
}

func requireNotFound(t *testing.T, fio fileio.FileIO, err error, p string) {
	t.Helper()
	require.ErrorIs(t, err, fs.ErrNotExist, p)
	require.ErrorContains(t, err, p)
	if r, ok := fio.(*fileio.Rooted); ok {
		require.NotContains(t, err.Error(), r.Root()+"/", "named relative to the root")
		require.NotContains(t, err.Error(), r.Location()+"/", "named relative to the root")
	}
}

// renamer returns fio as a DirRenamer when it renames directories (a Rooted FileIO does
// when the FileIO under it does).
func renamer(fio fileio.FileIO) (fileio.DirRenamer, bool) {
	dr, ok := fio.(fileio.DirRenamer)
	if r, rooted := fio.(*fileio.Rooted); rooted {
		_, ok = r.Unwrap().(fileio.DirRenamer)
	}
	return dr, ok
}

// testRenameDir: a DirRenamer renames a directory with what it holds, never over an existing
// name (an empty directory included: fs.ErrExist).
func testRenameDir(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, p := open(t, h)
	dr, ok := renamer(fio)
	if !ok {
		if dr, ok := fio.(fileio.DirRenamer); ok {
			require.ErrorIs(t, dr.RenameDir(ctx, p("a"), p("b")), errors.ErrUnsupported)
		}
		t.Skip("not a DirRenamer")
	}
	write(t, fio, p("db", "t", "schema", "schema-0"), []byte("s"))
	write(t, fio, p("db", "t", "f"), []byte("f"))
	require.NoError(t, fio.MkdirAll(ctx, p("db", "empty")))
	require.NoError(t, fio.MkdirAll(ctx, p("other")))
	require.ErrorIs(t, dr.RenameDir(ctx, p("db", "t"), p("db", "empty")), fs.ErrExist)
	require.Equal(t, "s", read(t, fio, p("db", "t", "schema", "schema-0")))
	require.NoError(t, dr.RenameDir(ctx, p("db", "t"), p("other", "u")))
	require.False(t, exists(t, fio, p("db", "t")))
	require.Equal(t, "s", read(t, fio, p("other", "u", "schema", "schema-0")))
	require.Equal(t, "f", read(t, fio, p("other", "u", "f")))
	require.Error(t, dr.RenameDir(ctx, p("db", "t"), p("db", "t2")), "a missing directory")
	require.Error(t, dr.RenameDir(ctx, p("other", "u", "f"), p("db", "t3")), "a file")
}

// testConfinement: a Rooted FileIO refuses, with fileio.ErrInvalidPath and before the
// underlying FileIO sees them, paths outside its root (relative with "..", absolute, as a URL
// of an object store, with a NUL byte), and the removal or renaming of the root itself;
// nothing beside the root is read, created or changed, and paths that stay inside, however
// spelt, work.
func testConfinement(t *testing.T, h Harness) {
	ctx := context.Background()
	fio, _ := h.Open(t)
	r, ok := fio.(*fileio.Rooted)
	if !ok {
		t.Skip("not a Rooted FileIO")
	}
	inner := r.Unwrap()
	root := r.Root()
	parent := path.Dir(root)
	sibling := path.Base(root) + "2" // shares the root's name as a prefix
	write(t, inner, path.Join(parent, "secret"), []byte("s"))
	require.NoError(t, inner.MkdirAll(ctx, path.Join(parent, sibling)))
	write(t, r, "sub/keep", []byte("k"))
	outside := []string{
		"../secret", "../x/y", "sub/../../secret", "../" + sibling + "/f", "..",
		path.Join(parent, "secret"), path.Join(parent, sibling, "f"), "/etc/passwd",
		"sub/a\x00b", root + "/../secret", parent,
	}
	if os, ok := inner.(fileio.ObjectStore); ok {
		outside = append(outside, os.URL(path.Join(parent, "secret")), os.URL(path.Join(parent, sibling, "f")))
	}
	dr, renames := renamer(fio)
	for _, q := range outside {
		_, err := r.Read(ctx, q)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", q)
		require.NotContains(t, err.Error(), parent, "%q: the error names no absolute path", q)
		require.NotContains(t, err.Error(), "\x00")
		_, err = r.Open(ctx, q)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", q)
		_, err = r.Create(ctx, q)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", q)
		require.ErrorIs(t, r.WriteAtomic(ctx, q, []byte("x")), fileio.ErrInvalidPath, "%q", q)
		require.ErrorIs(t, r.CreateExclusive(ctx, q, []byte("x")), fileio.ErrInvalidPath, "%q", q)
		_, err = r.List(ctx, q)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", q)
		_, err = r.Exists(ctx, q)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", q)
		_, err = r.Version(ctx, q)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", q)
		require.ErrorIs(t, r.Remove(ctx, q), fileio.ErrInvalidPath, "%q", q)
		require.ErrorIs(t, r.RemoveAll(ctx, q), fileio.ErrInvalidPath, "%q", q)
		require.ErrorIs(t, r.MkdirAll(ctx, q), fileio.ErrInvalidPath, "%q", q)
		require.ErrorIs(t, r.SyncDir(ctx, q), fileio.ErrInvalidPath, "%q", q)
		if renames {
			require.ErrorIs(t, dr.RenameDir(ctx, "sub", q), fileio.ErrInvalidPath, "%q", q)
			require.ErrorIs(t, dr.RenameDir(ctx, q, "sub2"), fileio.ErrInvalidPath, "%q", q)
		}
	}
	for _, q := range []string{"", ".", root, "sub/.."} {
		require.ErrorIs(t, r.RemoveAll(ctx, q), fileio.ErrInvalidPath, "%q: the root itself", q)
		if renames {
			require.ErrorIs(t, dr.RenameDir(ctx, q, "sub2"), fileio.ErrInvalidPath, "%q: the root itself", q)
		}
	}

	// Inside: relative, absolute, uncleaned (and URL) paths that stay below the root.
	write(t, r, "sub/f", []byte("1"))
	require.Equal(t, "1", read(t, r, path.Join(root, "sub", "f")))
	require.Equal(t, "1", read(t, r, "sub/x/../f"))
	require.Equal(t, "1", read(t, r, "./sub/f"))
	if os, ok := inner.(fileio.ObjectStore); ok {
		require.Equal(t, "1", read(t, r, os.URL(path.Join(root, "sub", "f"))))
	}
	require.NoError(t, r.Remove(ctx, "./sub/f"))
	require.False(t, exists(t, r, "sub/f"))
	ents, err := r.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []fileio.FileInfo{{Name: "sub", IsDir: true}}, ents)

	// Nothing beside the root changed.
	ents, err = inner.List(ctx, parent)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	require.ElementsMatch(t, []string{"secret", path.Base(root), sibling}, names, "files beside the root")
	require.Equal(t, "s", read(t, inner, path.Join(parent, "secret")))
	ents, err = inner.List(ctx, path.Join(parent, sibling))
	require.NoError(t, err)
	require.Empty(t, ents)
}
