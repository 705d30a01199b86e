// Package memguard keeps statements from taking the server's memory.
//
// DuckDB bounds what its operators hold with memory_limit, but a result it
// materialises before handing out its first row is not counted there: one
// SELECT of 10^12 rows grew the process by half a gigabyte a second until
// the kernel ended it. A Guard watches the process's resident memory and,
// when it passes a ceiling, cancels every statement running at that moment
// (their contexts end with ErrOverMemory, a RESOURCE_EXHAUSTED for the
// client). It cannot tell which statement holds the memory, so it ends
// them all: a safety net for the server, not a budget per statement.
//
// Memory a cancelled statement freed may stay with the allocator (DuckDB's
// jemalloc keeps pages for reuse, its buffer pool keeps up to memory_limit),
// so after a cut the next one is armed higher, at the memory then seen plus
// an eighth of the ceiling, until memory is seen at or under the ceiling
// again: new statements run, and one that grows is still stopped.
//
// What it promises: Check never cancels a statement while resident memory
// is at or under the ceiling; a statement running when memory is seen above
// the armed level is cancelled exactly once. Time is the caller's: Run
// polls on a ticker, tests call Check.
package memguard

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightd/flightd/engine"
)

// ErrOverMemory is the cause of a statement the guard ended or refused.
var ErrOverMemory = fmt.Errorf("%w: the server's memory passed its ceiling", engine.ErrExhausted)

// ErrOverSpill is the cause of a statement a spill guard (NewSpill) ended.
var ErrOverSpill = fmt.Errorf("%w: DuckDB's spill directory passed its bound", engine.ErrExhausted)

// Guard cancels statements while the process's memory is above a ceiling.
type Guard struct {
	ceiling int64
	rss     func() int64                     // the level watched
	over    func(level, ceiling int64) error // the cause given to the statements cut

	mu      sync.Mutex
	next    uint64
	running map[uint64]context.CancelCauseFunc
	armed   int64 // the level of the next cut: the ceiling, or higher after a cut
}

// New returns a guard with the given ceiling in bytes; rss reports the
// process's resident bytes (ResidentBytes if nil). A ceiling of 0 or less
// turns the guard off.
func New(ceiling int64, rss func() int64) *Guard {
	if rss == nil {
		rss = ResidentBytes
	}
	over := func(rss, ceiling int64) error {
		return fmt.Errorf("%w: %d MiB resident, ceiling %d MiB, so the statements running were cancelled (a result DuckDB builds whole is not bounded by --memory-limit: add LIMIT, aggregate, or read the table with a plain scan)",
			ErrOverMemory, rss>>20, ceiling>>20)
	}
	return &Guard{ceiling: ceiling, rss: rss, over: over, armed: ceiling, running: map[uint64]context.CancelCauseFunc{}}
}

// NewSpill returns a guard of the bytes in DuckDB's spill directory dir:
// DuckDB's own bound (max_temp_directory_size) does not hold for every
// operator (a sort of 6M rows spilled 600 MB under a 2 MiB bound), and its
// default is 90% of the free disk, which the log and the lake need.
func NewSpill(ceiling int64, dir string) *Guard {
	g := New(ceiling, func() int64 { return DirBytes(dir) })
	g.over = func(size, ceiling int64) error {
		return fmt.Errorf("%w: %d MiB spilled, bound %d MiB (--max-spill), so the statements running were cancelled", ErrOverSpill, size>>20, ceiling>>20)
	}
	return g
}

// DirBytes is the size of the files under dir (0 when it cannot be read).
func DirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed meanwhile
		}
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Start registers a statement. The returned context ends with
// ErrOverMemory if the guard cancels it; done must be called when the
// statement's result is released.
func (g *Guard) Start(ctx context.Context) (context.Context, func()) {
	if g == nil || g.ceiling <= 0 {
		return ctx, func() {}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	id := g.next
	g.next++
	g.running[id] = cancel
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			g.mu.Lock()
			delete(g.running, id)
			g.mu.Unlock()
			cancel(nil)
		})
	}
}

// Check reads resident memory once. Passing the armed level cancels the
// statements running: crossed is true and cancelled says how many.
func (g *Guard) Check() (crossed bool, cancelled int, rss int64) {
	if g == nil || g.ceiling <= 0 {
		return false, 0, 0
	}
	rss = g.rss()
	g.mu.Lock()
	defer g.mu.Unlock()
	if rss <= g.ceiling {
		g.armed = g.ceiling
		return false, 0, rss
	}
	if rss <= g.armed {
		return false, 0, rss
	}
	g.armed = rss + g.ceiling/8
	err := g.over(rss, g.ceiling)
	for id, cancel := range g.running {
		cancel(err)
		delete(g.running, id)
		cancelled++
	}
	return true, cancelled, rss
}

// Run calls Check every interval until stop is closed, reporting each cut
// to cut (which may be nil).
func (g *Guard) Run(stop <-chan struct{}, every time.Duration, cut func(cancelled int, rss int64)) {
	if g == nil || g.ceiling <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if crossed, n, rss := g.Check(); crossed && cut != nil {
				cut(n, rss)
			}
		}
	}
}

// ResidentBytes is the process's resident set size (Linux; 0 elsewhere).
func ResidentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
