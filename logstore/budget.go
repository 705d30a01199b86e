package logstore

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// budgetRefresh is how often the store measures its directory and its
// file system's free space; between measurements it counts the bytes it
// appended.
const budgetRefresh = 2 * time.Second

// budget enforces Options.DiskBudget and Options.MinFree.
type budget struct {
	dir     string
	limit   int64 // DiskBudget; 0: none
	minFree int64 // MinFree; 0: none
	// free and now are the file system's free space and the clock (tests
	// replace them).
	free func(dir string) (int64, error)
	now  func() time.Time

	mu       sync.Mutex
	measured int64     // directory size at the last measurement
	freeAt   int64     // free space at the last measurement (-1: unknown)
	at       time.Time // when they were measured
	since    int64     // bytes appended since then
}

func newBudget(dir string, limit, minFree int64) *budget {
	return &budget{dir: dir, limit: limit, minFree: minFree, free: freeSpace, now: time.Now}
}

// admit reports ErrDiskBudget when n more bytes would take the log past its
// budget, ErrDiskFull when they would leave its file system less than
// MinFree, and otherwise counts them.
func (b *budget) admit(n int64) error {
	if b == nil || b.limit <= 0 && b.minFree <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := b.now(); now.Sub(b.at) > budgetRefresh {
		b.at, b.since = now, 0
		if b.limit > 0 {
			b.measured = DirSize(b.dir)
		}
		b.freeAt = -1
		if b.minFree > 0 {
			if f, err := b.free(b.dir); err == nil {
				b.freeAt = f
			}
		}
	}
	used := b.measured + b.since
	if b.limit > 0 && used+n > b.limit {
		return fmt.Errorf("%w: the log uses %d MiB of its %d MiB budget and this write needs %d KiB more; "+
			"writes resume when tiering catches up and retention frees space (see sys.tiering)",
			ErrDiskBudget, used>>20, b.limit>>20, n>>10)
	}
	if free := b.freeAt - b.since; b.freeAt >= 0 && free-n < b.minFree {
		return fmt.Errorf("%w: the file system of the log at %s has %d MiB free, and the log keeps at least %d MiB free "+
			"(a full disk under the log's memory-mapped files could end the process); writes resume when space returns",
			ErrDiskFull, b.dir, max(free, 0)>>20, b.minFree>>20)
	}
	b.since += n
	return nil
}

// freeSpace is the space of dir's file system that unprivileged writers
// may still take.
func freeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// DirSize is the disk space the directory's files occupy: allocated
// blocks, not apparent sizes, since Badger preallocates and mmaps files
// much larger than what they hold. The disk budget counts this.
func DirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				} else {
					n += info.Size()
				}
			}
		}
		return nil
	})
	return n
}
