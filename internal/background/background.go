// Package background runs CPU-heavy maintenance work (Parquet encoding of
// tiering rounds, compaction) so that it yields the cores to queries and
// ingest.
//
// Do runs a task on an OS thread of its own whose scheduling priority is
// lowered (on Linux: nice +10 for that thread only; elsewhere unchanged),
// and at most Workers tasks run at once. The thread is discarded when the
// task ends, so its priority never leaks to other goroutines. The main
// thread is never lowered (ps and top show its priority as the process's):
// a task that starts there moves to another thread, and the main thread,
// left locked, runs nothing else afterwards.
//
// Priority alone cannot help inside one Go process: a goroutine runs only
// on one of GOMAXPROCS Ps, and a low-priority thread still holds its P. So
// the server runs with more Ps than cores (cmd/flightd: twice as many) and
// Workers at the number of cores: background tasks can hold at most that
// many Ps, the other Ps stay free for a query to start on at once, and the
// kernel gives the cores to the query's thread first.
package background

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// Nice is the priority increment of a background thread.
const Nice = 10

var (
	mu    sync.Mutex
	slots = make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
)

// SetWorkers sets how many tasks run at once (at least 1). Call it at
// start, before any task runs.
func SetWorkers(n int) {
	mu.Lock()
	defer mu.Unlock()
	slots = make(chan struct{}, max(n, 1))
}

// Workers is how many tasks run at once.
func Workers() int {
	mu.Lock()
	defer mu.Unlock()
	return cap(slots)
}

// Do runs fn as a background task and returns when it is done, waiting
// first for a free worker. fn must not call Do (it could wait for its own
// worker). A panic in fn is raised again in the caller.
func Do(fn func()) {
	mu.Lock()
	s := slots
	mu.Unlock()
	s <- struct{}{}
	defer func() { <-s }()
	if p := runLowered(fn); p != nil {
		panic(fmt.Sprintf("background task: %v", p))
	}
}

// runLowered runs fn on a goroutine locked to a thread of its own at
// lowered priority and returns what fn panicked with.
func runLowered(fn func()) (p any) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { p = recover() }()
		// Never unlocked: the thread exits with this goroutine, and its
		// lowered priority with it.
		runtime.LockOSThread()
		if onMainThread() {
			// lowerPriority leaves the main thread alone: holding it,
			// start again, on another thread.
			p = runLowered(fn)
			return
		}
		lowerPriority()
		fn()
	}()
	<-done
	return p
}

type lowKey struct{}

// WithLowPriority marks ctx's work as long work that yields the cores to
// short work: scans that see the mark decode on lowered threads
// (LowerThread). The server marks the statements of its long admission
// lane.
func WithLowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowKey{}, true)
}

// LowPriority reports whether ctx carries WithLowPriority's mark.
func LowPriority(ctx context.Context) bool {
	low, _ := ctx.Value(lowKey{}).(bool)
	return low
}

// longSteps bounds the steps of long work (Step) running at once.
var longSteps = make(chan struct{}, max(runtime.NumCPU(), 1))

// Step runs fn, a bounded piece of CPU work of a long statement that does
// not wait on other such pieces (one batch of a scan's decoding), holding
// one of as many tokens as there are cores. A lowered thread still holds
// its P while it runs, and the server has twice as many Ps as cores: with
// at most a core's worth of long steps at once, half the Ps stay free for
// short work to start on at once, whatever number of scans run.
func Step(fn func()) {
	longSteps <- struct{}{}
	defer func() { <-longSteps }()
	fn()
}

// LowerThread locks the calling goroutine to its thread for good and
// lowers the thread's priority by Nice, so that the kernel gives the cores
// to other threads first; the thread exits with the goroutine, and its
// priority with it. Call it only at the start of a goroutine that ends
// (a worker), never on a goroutine of the caller's. On the main thread it
// does nothing.
func LowerThread() {
	runtime.LockOSThread()
	if onMainThread() {
		runtime.UnlockOSThread()
		return
	}
	lowerPriority()
}
