package logstore

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// fullDisk wraps a syncRecorder's calls with an out-of-space fault. Its fdatasync
// models Linux after a failed fdatasync: the error is reported once, and later
// fdatasyncs of the file succeed without making the lost pages durable, so the
// recorder keeps the file as not durable for good.
type fullDisk struct {
	rec *syncRecorder
	ops sysOps

	mu        sync.Mutex
	fault     string          // "", "create", "write", "sync"
	failed    map[string]bool // files a write or sync failed on
	poisoned  map[string]bool // files whose fdatasync failed
	lastWrite string          // the file of the last successful write
	// entered and release, if set, hold the next faulty write until release is closed.
	entered, release chan struct{}
}

func newFullDisk() *fullDisk {
	d := &fullDisk{rec: newSyncRecorder(), failed: map[string]bool{}, poisoned: map[string]bool{}}
	d.ops = d.rec.ops
	d.ops.create = func(name string) (*os.File, error) {
		if d.faulty("create") {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
		}
		return d.rec.ops.create(name)
	}
	d.ops.writeAt = func(f *os.File, b []byte, off int64) (int, error) {
		if d.faulty("write") {
			d.mu.Lock()
			d.failed[f.Name()] = true
			entered, release := d.entered, d.release
			d.entered, d.release = nil, nil
			d.mu.Unlock()
			if entered != nil {
				close(entered)
				<-release
			}
			n, _ := d.rec.ops.writeAt(f, b[:len(b)/2], off) // a short write, then no space
			return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
		}
		n, err := d.rec.ops.writeAt(f, b, off)
		d.mu.Lock()
		d.lastWrite = f.Name()
		d.mu.Unlock()
		return n, err
	}
	d.ops.fdatasync = func(f *os.File) error {
		if d.faulty("sync") {
			d.mu.Lock()
			d.failed[f.Name()], d.poisoned[f.Name()] = true, true
			d.mu.Unlock()
			return &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.EDQUOT}
		}
		d.mu.Lock()
		poisoned := d.poisoned[f.Name()]
		d.mu.Unlock()
		if poisoned {
			return nil // reported success; the pages lost at the failure stay lost
		}
		return d.rec.ops.fdatasync(f)
	}
	return d
}

func (d *fullDisk) faulty(op string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fault == op
}

func (d *fullDisk) set(fault string) {
	d.mu.Lock()
	d.fault = fault
	d.mu.Unlock()
}

// check: the last acknowledged write went to a durable file, and whatever a power cut
// would take now is data in files a write or sync failed on (bytes nothing points at).
func (d *fullDisk) check(t *testing.T, msg string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	lost := d.rec.notDurable()
	require.NotContains(t, lost, "data of "+d.lastWrite, "%s: acknowledged into a file whose sync failed", msg)
	for _, l := range lost {
		name, ok := bytes.CutPrefix([]byte(l), []byte("data of "))
		require.True(t, ok && d.failed[string(name)], "%s: not durable: %s", msg, l)
	}
}

// TestDiskFullRefusesAppendsAndRecovers: an append whose segment create, write or
// sync fails for lack of space is refused with ErrDiskFull (which upper layers refuse
// as ErrDiskBudget) naming the log's directory; nothing of it becomes visible, reads
// keep serving what was acknowledged, the next append once space is back succeeds at
// the refused append's offsets, into a segment file that is durable, and a reopen
// finds exactly the acknowledged entries.
func TestDiskFullRefusesAppendsAndRecovers(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "log")
	disk := newFullDisk()
	s := newTestStore(t, dir, func(o *Options) { o.sys = &disk.ops })
	b := Bucket{Table: "t", Bucket: 0}
	big := func(c byte) string { return string(bytes.Repeat([]byte{c}, 100<<10)) } // a segment record

	_, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 3, Payload: []byte(big('a'))}})
	require.NoError(t, err)
	want := []readEntry{{0, 3, big('a')}}
	hw := int64(3)

	// A failed write seals the segment, so the create fault hits the next append.
	for i, faults := range [][]string{{"write", "create"}, {"sync"}} {
		for _, fault := range faults {
			disk.set(fault)
			_, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 2, Payload: []byte(big('x'))}, {Bucket: b, Rows: 1, Payload: []byte("small")}})
			require.ErrorIs(t, err, ErrDiskFull, fault)
			require.ErrorIs(t, err, ErrDiskBudget, "%s: refused like an append over the budget", fault)
			require.ErrorContains(t, err, dir, fault)
			require.ErrorContains(t, err, "nothing of this append was written", fault)
			require.Equal(t, hw, s.HighWatermark(b), fault)
			require.Equal(t, want, readAll(t, s, b, 0, 1<<40), "%s: reads keep serving what was acknowledged", fault)
		}

		disk.set("")
		p := big(byte('b' + i))
		bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 2, Payload: []byte(p)}, {Bucket: b, Rows: 1, Payload: []byte("small")}})
		require.NoError(t, err, "%v: space is back", faults)
		require.Equal(t, []int64{hw, hw + 2}, bases, "%v: the refused appends' offsets are reused", faults)
		want = append(want, readEntry{hw, 2, p}, readEntry{hw + 2, 1, "small"})
		hw += 3
		require.Equal(t, want, readAll(t, s, b, 0, 1<<40), faults)
		disk.check(t, faults[0])
	}
	require.NoError(t, s.Close())

	s2 := newTestStore(t, dir)
	require.Equal(t, hw, s2.HighWatermark(b))
	require.Equal(t, want, readAll(t, s2, b, 0, 1<<40))
	require.NoError(t, s2.CollectGarbage())
	require.Equal(t, want, readAll(t, s2, b, 0, 1<<40), "the sealed segments with acknowledged records stay")
}

// TestDiskFullFailsAppendsQueuedBehind: appends queued behind a group that failed
// for lack of space hold the offsets after it, so they fail too, with nothing
// written, and their offsets are handed out again.
func TestDiskFullFailsAppendsQueuedBehind(t *testing.T) {
	ctx := context.Background()
	disk := newFullDisk()
	s := newTestStore(t, "", func(o *Options) { o.sys = &disk.ops })
	b := Bucket{Table: "t", Bucket: 0}
	other := Bucket{Table: "u", Bucket: 1}
	_, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 1, Payload: []byte("acked")}})
	require.NoError(t, err)

	entered, release := make(chan struct{}), make(chan struct{})
	disk.mu.Lock()
	disk.entered, disk.release = entered, release
	disk.mu.Unlock()
	disk.set("write")
	first, err := s.AppendAsync(ctx, []Entry{{Bucket: b, Rows: 2, Payload: bytes.Repeat([]byte{1}, 100<<10)}})
	require.NoError(t, err)
	<-entered // the committer holds the first group in its segment write
	behind, err := s.AppendAsync(ctx, []Entry{{Bucket: b, Rows: 5, Payload: []byte("small")}, {Bucket: other, Rows: 1, Payload: []byte("o")}})
	require.NoError(t, err)
	close(release)

	_, err = first()
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = behind()
	require.ErrorIs(t, err, ErrDiskFull, "queued behind the failed group")
	require.Equal(t, int64(1), s.HighWatermark(b))
	require.Equal(t, int64(0), s.HighWatermark(other))

	disk.set("")
	bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 5, Payload: []byte("small")}, {Bucket: other, Rows: 1, Payload: []byte("o")}})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 0}, bases)
	require.Equal(t, []readEntry{{0, 1, "acked"}, {1, 5, "small"}}, readAll(t, s, b, 0, 100))
	require.Equal(t, []readEntry{{0, 1, "o"}}, readAll(t, s, other, 0, 100))
}
