package logstore

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// budgetRefresh is how often the store measures its directory; between
// measurements it adds the bytes it appended.
const budgetRefresh = 2 * time.Second

// budget enforces Options.DiskBudget.
type budget struct {
	dir   string
	limit int64

	mu       sync.Mutex
	measured int64     // directory size at the last measurement
	at       time.Time // when it was measured
	since    int64     // bytes appended since then
}

// admit reports ErrDiskBudget when n more bytes would take the log past its
// budget, and otherwise counts them.
func (b *budget) admit(n int64) error {
	if b == nil || b.limit <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.at) > budgetRefresh {
		b.measured, b.at, b.since = DirSize(b.dir), time.Now(), 0
	}
	used := b.measured + b.since
	if used+n > b.limit {
		return fmt.Errorf("%w: the log uses %d MiB of its %d MiB budget and this write needs %d KiB more; "+
			"writes resume when tiering catches up and retention frees space (see sys.tiering)",
			ErrDiskBudget, used>>20, b.limit>>20, n>>10)
	}
	b.since += n
	return nil
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
