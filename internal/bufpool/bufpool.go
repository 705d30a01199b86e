package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	minShift = 16 // 64 KiB: smaller buffers are cheap for Go's allocator
	maxShift = 28 // 256 MiB: larger ones are rare enough to leave to it
)

// poison fills freed buffers with 0xdb, so that a use after free reads
// wrong values in tests instead of passing silently: always under the race
// detector, and in tests that call Poison.
var poison atomic.Bool

func init() { poison.Store(raceEnabled) }

// Poison makes every Allocator fill the buffers it takes back with 0xdb
// (tests of packages that hand pooled buffers to code outside Go, such as
// DuckDB, which the race detector does not see).
func Poison() { poison.Store(true) }

// Allocator is a memory.Allocator that pools freed buffers by size class
// (see the package doc). The zero value is not usable: call New.
type Allocator struct {
	classes [maxShift - minShift + 1]sync.Pool
	go_     memory.GoAllocator
}

var _ memory.Allocator = (*Allocator)(nil)

// New returns an empty pool.
func New() *Allocator { return &Allocator{} }

// class returns the size class of a buffer of size bytes: the shift of the
// smallest power of two at least size, or -1 when it is not pooled.
func class(size int) int {
	if size < 1<<minShift || size > 1<<maxShift {
		return -1
	}
	return bits.Len(uint(size - 1))
}

// Allocate returns size zeroed bytes.
func (a *Allocator) Allocate(size int) []byte { return a.allocate(size, true) }

// allocate returns size bytes, cleared if zero.
func (a *Allocator) allocate(size int, zero bool) []byte {
	c := class(size)
	if c < 0 {
		return a.go_.Allocate(size)
	}
	if v := a.classes[c-minShift].Get(); v != nil {
		b := (*v.(*[]byte))[:size]
		if zero {
			clear(b)
		}
		return b
	}
	// A large object: the runtime aligns it to a page, more than the
	// 64 bytes Arrow asks for.
	return make([]byte, size, 1<<c)
}

// Unzeroed returns a view of the pool whose Allocate and Reallocate do not
// clear a reused buffer: for a reader that writes every byte of what it
// asks for (a Parquet reader of fixed-width values) and clears what it
// does not write (the slots under nulls) itself. Freed buffers go back to
// a, and come out of it cleared.
func (a *Allocator) Unzeroed() memory.Allocator { return unzeroed{a} }

// UnzeroedOf returns mem's unzeroed view when mem is an Allocator (or such
// a view), else mem, and whether it did.
func UnzeroedOf(mem memory.Allocator) (memory.Allocator, bool) {
	switch m := mem.(type) {
	case *Allocator:
		return m.Unzeroed(), true
	case unzeroed:
		return m, true
	}
	return mem, false
}

// unzeroed is the view Unzeroed returns.
type unzeroed struct{ a *Allocator }

func (u unzeroed) Allocate(size int) []byte { return u.a.allocate(size, false) }

func (u unzeroed) Reallocate(size int, b []byte) []byte { return u.a.reallocate(size, b, false) }

func (u unzeroed) Free(b []byte) { u.a.Free(b) }

// Reallocate returns b resized to size, its contents kept: b itself when
// its capacity allows, as Go's allocator does, else a new buffer, and b
// goes back to the pool. Arrow reallocates only a buffer it is still
// filling (a builder's, a Parquet reader's), which nothing else holds: a
// string column grows its data buffer this way a dozen times a batch.
func (a *Allocator) Reallocate(size int, b []byte) []byte { return a.reallocate(size, b, true) }

// reallocate is Reallocate; zero clears the bytes past b's length.
func (a *Allocator) reallocate(size int, b []byte, zero bool) []byte {
	if cap(b) >= size {
		if zero && size > len(b) {
			clear(b[len(b):size]) // a reused buffer's capacity is not clean
		}
		return b[:size]
	}
	nb := a.allocate(size, false)
	n := copy(nb, b)
	if zero {
		clear(nb[n:])
	}
	a.Free(b)
	return nb
}

// Free takes b back for reuse when it is one of the pool's buffers.
func (a *Allocator) Free(b []byte) {
	n := cap(b)
	c := class(n)
	if c < 0 || n != 1<<c {
		return
	}
	b = b[:n]
	if poison.Load() {
		// By doubling copies: a byte at a time is slow under the race
		// detector, which instruments each store.
		b[0] = 0xdb
		for i := 1; i < n; i *= 2 {
			copy(b[i:], b[:i])
		}
	}
	a.classes[c-minShift].Put(&b)
}
