// Package membudget is a memory budget in bytes that requests wait for.
//
// Acquire waits, first come first served, until the bytes fit under the
// limit; a request larger than the whole limit is let in when nothing else
// holds any, so it waits but never deadlocks. Grow adds bytes without
// waiting, for memory that is already taken (a message whose size is
// known only once it arrived): the budget may then stand above its limit,
// and new requests wait until it is back under. So the bytes held stay
// under the limit plus what the holders grew past their reservations.
package membudget

import (
	"container/list"
	"context"
	"sync"
)

// Budget is safe for concurrent use. A nil *Budget is unlimited.
type Budget struct {
	limit int64

	mu      sync.Mutex
	used    int64
	waiters list.List // of *waiter, FIFO
}

type waiter struct {
	n     int64
	ready chan struct{}
}

// New returns a budget of limit bytes (at least 1).
func New(limit int64) *Budget {
	return &Budget{limit: max(limit, 1)}
}

// Limit is the budget's size.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Used is the bytes held now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Over reports whether the bytes held stand above the limit (after Grow).
func (b *Budget) Over() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used > b.limit
}

// fits reports whether n more bytes may be taken now (under mu).
func (b *Budget) fits(n int64) bool { return b.used+n <= b.limit || b.used == 0 }

// Acquire takes n bytes, waiting for room until ctx ends (then it returns
// ctx's cause and holds nothing).
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.fits(n) {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted meanwhile: give it back.
			b.used -= n
		default:
			b.waiters.Remove(e)
		}
		b.grant()
		b.mu.Unlock()
		return context.Cause(ctx)
	}
}

// Grow takes n more bytes at once, past the limit if need be.
func (b *Budget) Grow(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// Release gives n bytes back.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		b.mu.Unlock()
		panic("membudget: released more than was taken")
	}
	b.grant()
	b.mu.Unlock()
}

// grant lets in the waiters at the head of the queue that fit (under mu).
func (b *Budget) grant() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*waiter)
		if !b.fits(w.n) {
			return
		}
		b.used += w.n
		b.waiters.Remove(e)
		close(w.ready)
	}
}
