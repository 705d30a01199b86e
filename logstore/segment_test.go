package logstore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
)

func segFiles(t *testing.T, dir string) []uint64 {
	t.Helper()
	ids, err := listSegments(filepath.Join(dir, segDirName))
	require.NoError(t, err)
	return ids
}

// TestSegmentsFollowTruncation: large entries go to segment files, which are deleted
// once every entry in them is truncated or dropped, and not before.
func TestSegmentsFollowTruncation(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	small := func(o *Options) { o.SegmentSize = 1 << 20 }
	s := newTestStore(t, dir, small)
	a, b, gone := Bucket{"a", 0}, Bucket{"a", 1}, Bucket{"gone", 0}
	big := func(c byte) []byte { return bytes.Repeat([]byte{c}, 300<<10) }
	// Four 300 KiB entries per segment: a's bucket 0 and 1 alternate, "gone" in between.
	for i := range 12 {
		bk := []Bucket{a, b, gone}[i%3]
		_, err := s.Append(ctx, []Entry{{Bucket: bk, Rows: 10, Payload: big(byte('a' + i))}})
		require.NoError(t, err)
	}
	require.Len(t, segFiles(t, dir), 3)
	require.NoError(t, s.CollectGarbage())
	require.Len(t, segFiles(t, dir), 3, "nothing truncated")

	// Truncating bucket 0 alone frees nothing: every segment holds bucket 1 or gone.
	require.NoError(t, s.Truncate(ctx, a, 40))
	require.NoError(t, s.CollectGarbage())
	require.Len(t, segFiles(t, dir), 3)
	require.NoError(t, s.DropTable(ctx, "gone"))
	require.NoError(t, s.Truncate(ctx, b, 20)) // b's entries 1 and 4: all of segment 1 is gone now
	require.NoError(t, s.CollectGarbage())
	ids := segFiles(t, dir)
	require.Len(t, ids, 2, "the first segment is free")
	require.Len(t, readAll(t, s, b, 20, 40), 2)
	require.NoError(t, s.Close())

	s2 := newTestStore(t, dir, small)
	require.Equal(t, ids, segFiles(t, dir), "reopening deletes nothing still needed")
	got := readAll(t, s2, b, 20, 40)
	require.Equal(t, []readEntry{{20, 10, string(big('a' + 7))}, {30, 10, string(big('a' + 10))}}, got)
	require.NoError(t, s2.Truncate(ctx, b, 40))
	require.NoError(t, s2.Truncate(ctx, a, 40))
	require.NoError(t, s2.CollectGarbage())
	require.Empty(t, segFiles(t, dir))
}

// TestSegmentLeftByCrashIsDeleted: a segment whose entries were never committed (the
// process died between the segment write and the Badger commit) goes on open.
func TestSegmentLeftByCrashIsDeleted(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t, dir)
	_, err := s.Append(context.Background(), []Entry{{Bucket: Bucket{"t", 0}, Rows: 1, Payload: make([]byte, 1<<20)}})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	orphan := filepath.Join(dir, segDirName, segName(99))
	require.NoError(t, os.WriteFile(orphan, []byte("never committed"), 0o644))
	s2 := newTestStore(t, dir)
	require.NoFileExists(t, orphan)
	require.Len(t, segFiles(t, dir), 1)
	require.Len(t, readAll(t, s2, Bucket{"t", 0}, 0, 1), 1)
}

// TestSegmentCorruptionIsReported: a flipped byte in a segment is an ErrCorrupt naming
// the entry, not a wrong payload.
func TestSegmentCorruptionIsReported(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t, dir)
	b := Bucket{"t", 0}
	_, err := s.Append(context.Background(), []Entry{{Bucket: b, Rows: 1, Payload: bytes.Repeat([]byte("x"), 100<<10)}})
	require.NoError(t, err)
	path := filepath.Join(dir, segDirName, segName(segFiles(t, dir)[0]))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)/2] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o644))
	err = s.Read(context.Background(), b, 0, 1, func(int64, int64, []byte) error { return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "crc32c")
}

// TestFormat1StoreStaysReadable: a store written before segment files (large values in
// Badger's value log, format 1) opens, reads, and takes new entries in segments.
func TestFormat1StoreStaysReadable(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	db, err := badger.Open(opts.badgerOptions(dir, &badgerLogger{l: opts.Logger}))
	require.NoError(t, err)
	b := Bucket{"old", 2}
	old := bytes.Repeat([]byte("v1"), 100<<10)
	require.NoError(t, db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(formatKey, []byte{1}); err != nil {
			return err
		}
		if err := txn.Set(entryKey(nil, b, 0), appendRecord(nil, 7, old)); err != nil {
			return err
		}
		return txn.Set(entryKey(nil, b, 7), appendRecord(nil, 1, []byte("small")))
	}))
	require.NoError(t, db.Close())

	s := newTestStore(t, dir)
	require.Equal(t, int64(8), s.HighWatermark(b))
	_, err = s.Append(context.Background(), []Entry{{Bucket: b, Rows: 2, Payload: bytes.Repeat([]byte("v2"), 100<<10)}})
	require.NoError(t, err)
	got := readAll(t, s, b, 0, 10)
	require.Equal(t, []readEntry{{0, 7, string(old)}, {7, 1, "small"}, {8, 2, string(bytes.Repeat([]byte("v2"), 100<<10))}}, got)
	require.Len(t, segFiles(t, dir), 1)
	require.NoError(t, s.Close())

	db, err = badger.Open(opts.badgerOptions(dir, &badgerLogger{l: opts.Logger}))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(formatKey)
		require.NoError(t, err)
		v, err := item.ValueCopy(nil)
		require.Equal(t, []byte{formatVersion}, v, "upgraded, so an older build refuses to open it")
		return err
	}))
}

// Records of any size read back as written, in groups and across
// rotations.
func TestSegmentWritesReadBack(t *testing.T) {
	for _, sync := range []bool{true, false} {
		s, err := openSegments(t.TempDir(), 3<<20, sync, osOps)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 2))
		type written struct {
			p   segPtr
			rec []byte
		}
		var all []written
		for g := 0; g < 40; g++ {
			recs := make([][]byte, 1+rng.IntN(4))
			for i := range recs {
				recs[i] = make([]byte, 1+rng.IntN(300<<10))
				for j := range recs[i] {
					recs[i][j] = byte(rng.Uint32())
				}
			}
			ptrs, err := s.write(recs)
			require.NoError(t, err)
			for i, p := range ptrs {
				all = append(all, written{p, recs[i]})
			}
		}
		require.Greater(t, s.activeID, uint64(2), "the segments rotated")
		for i, w := range all {
			got, err := s.read(w.p, nil)
			require.NoError(t, err, "record %d", i)
			require.Equal(t, w.rec, got, "record %d", i)
		}
		require.NoError(t, s.close())
	}
}
