package logstore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// syncRecorder wraps the store's file system calls and keeps, as a strict file system would
// after a power cut, what is not yet durable: names created in a directory that was not
// synced since, and files written since their last fdatasync. It sees the store's own files
// (its directories and segment files), not Badger's.
type syncRecorder struct {
	mu       sync.Mutex
	unsynced map[string]bool // path whose directory entry is not durable
	dirty    map[string]bool // file with writes not yet fdatasynced
	creates  int
	ops      sysOps
}

func newSyncRecorder() *syncRecorder {
	r := &syncRecorder{unsynced: map[string]bool{}, dirty: map[string]bool{}}
	r.ops = sysOps{
		stat: osOps.stat,
		mkdir: func(name string, perm fs.FileMode) error {
			err := osOps.mkdir(name, perm)
			if err == nil {
				r.mu.Lock()
				r.unsynced[filepath.Clean(name)] = true
				r.creates++
				r.mu.Unlock()
			}
			return err
		},
		create: func(name string) (*os.File, error) {
			f, err := osOps.create(name)
			if err == nil {
				r.mu.Lock()
				r.unsynced[filepath.Clean(name)] = true
				r.creates++
				r.mu.Unlock()
			}
			return f, err
		},
		writeAt: func(f *os.File, b []byte, off int64) (int, error) {
			r.mu.Lock()
			r.dirty[f.Name()] = true
			r.mu.Unlock()
			return osOps.writeAt(f, b, off)
		},
		fdatasync: func(f *os.File) error {
			err := osOps.fdatasync(f)
			if err == nil {
				r.mu.Lock()
				delete(r.dirty, f.Name())
				r.mu.Unlock()
			}
			return err
		},
		syncDir: func(dir string) error {
			err := osOps.syncDir(dir)
			if err == nil {
				r.mu.Lock()
				for p := range r.unsynced {
					if filepath.Dir(p) == filepath.Clean(dir) {
						delete(r.unsynced, p)
					}
				}
				r.mu.Unlock()
			}
			return err
		},
	}
	return r
}

// notDurable lists what a power cut now would lose.
func (r *syncRecorder) notDurable() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for p := range r.unsynced {
		out = append(out, "name of "+p)
	}
	for p := range r.dirty {
		out = append(out, "data of "+p)
	}
	sort.Strings(out)
	return out
}

// TestAppendAckedBeforeNewLogDirectoryIsDurable: an acknowledged Append must not depend on
// anything a power cut can take, including the directories the store created for itself
// (the store's directory and its missing parents, segments/) and new segment files. After
// Open and after every acknowledged Append, every name the store created has had its
// directory synced and every segment write has been fdatasynced.
func TestAppendAckedBeforeNewLogDirectoryIsDurable(t *testing.T) {
	ctx := context.Background()
	rec := newSyncRecorder()
	dir := filepath.Join(t.TempDir(), "a", "b", "log") // missing parents too
	opts := DefaultOptions()
	opts.SegmentSize = 1 << 20
	opts.sys = &rec.ops
	b := Bucket{Table: "t", Bucket: 0}
	payload := make([]byte, 300<<10) // above ValueThreshold: a segment record
	for reopen := 0; reopen < 2; reopen++ {
		s, err := Open(dir, opts)
		require.NoError(t, err)
		require.Empty(t, rec.notDurable(), "after Open")
		for i := 0; i < 8; i++ { // rotates the segment twice per Open
			_, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 1, Payload: payload}, {Bucket: b, Rows: 1, Payload: []byte("small")}})
			require.NoError(t, err)
			require.Empty(t, rec.notDurable(), "append %d acknowledged", i)
		}
		require.NoError(t, s.Close())
	}
	// dirs a, b, log, segments and at least 2 segment files per Open
	require.GreaterOrEqual(t, rec.creates, 4+2*2)
}
