package lakestream

import (
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/lake"
)

// pins keeps snapshot expiration (in this process) from removing files that
// a read of this process still needs: a read pins the snapshot it uses
// until it ends, and an expiration keeps the oldest pinned snapshot and
// everything newer.
//
// Choosing a snapshot and pinning it are one step against an expiration's
// decision: a read chooses and pins under the read side of its table's
// lock (choose), and an expiration takes the oldest pinned snapshot under
// the write side (expire). A read therefore either pinned its snapshot
// before the decision, which then keeps it, or chose after it. A read that
// chooses the latest snapshot after it gets one at least as new as the
// latest snapshot the expiration read before deciding, and an expiration
// never deletes that one (nor anything newer).
//
// A read that chooses an older snapshot (time travel by id, a changelog's
// start, a stream's anchor) may choose one that a running expiration has
// decided to delete: from the decision until the expiration ends, pinning
// such a snapshot is refused with an error matching fs.ErrNotExist, as
// reading it will be. Once the expiration ended, the snapshot is either
// kept, and pinned from then on, or gone, which reading it notices. A read
// whose choice takes a search (changelog, stream) does not hold the lock
// over it: it pins the snapshot found (pin) and then checks that the
// snapshot still exists. A tag's snapshot is kept by the tag whatever its
// id, so pinning it is never refused.
//
// The lock is per table, so an expiration waits only for the reads of its
// table that are choosing at that moment, and holds up only theirs; it is
// held over one read of the latest snapshot (or of the snapshot named) on
// the read side and over no I/O on the write side.
type pins struct {
	mu sync.Mutex
	m  map[string]*tablePins // table id -> its pins, while in use
}

// tablePins is one table's part of pins. Fields but rw are guarded by
// pins.mu.
type tablePins struct {
	// rw's read side is held by reads choosing and pinning a snapshot,
	// its write side by an expiration taking the oldest pinned one.
	rw    sync.RWMutex
	users int // goroutines holding or waiting for rw
	// readers counts the running reads of each snapshot id.
	readers map[int64]int
	// expiring holds the bound of each running expiration: it may delete
	// snapshots below it.
	expiring []int64
}

// errExpiring is the error of pinning a snapshot that a running expiration
// may delete.
var errExpiring = fmt.Errorf("a running expiration may delete it: %w", fs.ErrNotExist)

// Hooks for tests: pinHook runs in choose after a read chose its snapshot
// (sid 0: none) and before it is pinned; expireBlockedHook runs when an
// expiration has to wait for reads that are choosing their snapshot.
var (
	pinHook           func(tableID string, sid int64)
	expireBlockedHook func(tableID string)
)

// use returns the entry of table id, counted as in use until done.
func (p *pins) use(id string) *tablePins {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*tablePins{}
	}
	e := p.m[id]
	if e == nil {
		e = &tablePins{readers: map[int64]int{}}
		p.m[id] = e
	}
	e.users++
	return e
}

// done ends a use of the entry of table id.
func (p *pins) done(id string, e *tablePins) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.users--
	p.dropLocked(id, e)
}

// dropLocked forgets the entry of table id once nothing refers to it.
func (p *pins) dropLocked(id string, e *tablePins) {
	if e.users == 0 && len(e.readers) == 0 && len(e.expiring) == 0 {
		delete(p.m, id)
	}
}

// choose runs read, which reads the snapshot a read of table id uses (nil:
// the table has none), and pins that snapshot, in one step against
// expiration (see pins). The returned func unpins it (call it once; a
// no-op when there is no snapshot). tagged says the snapshot is a tag's,
// which expiration keeps anyway.
func (p *pins) choose(id string, tagged bool, read func() (*lake.Snapshot, error)) (*lake.Snapshot, func(), error) {
	e := p.use(id)
	defer p.done(id, e)
	e.rw.RLock()
	defer e.rw.RUnlock()
	snap, err := read()
	if err != nil {
		return nil, nil, err
	}
	if pinHook != nil {
		var sid int64
		if snap != nil {
			sid = snap.ID
		}
		pinHook(id, sid)
	}
	if snap == nil {
		return nil, func() {}, nil
	}
	unpin, err := p.pinEntry(id, e, snap.ID, tagged)
	if err != nil {
		return nil, nil, err
	}
	return snap, unpin, nil
}

// pin registers a read of snapshot sid of table id, chosen without the lock
// choose holds: it is refused while a running expiration may delete sid,
// and otherwise the caller must check that sid still exists before reading
// it (an expiration that ended may have deleted it). The returned func
// unregisters the read (call it once).
func (p *pins) pin(id string, sid int64) (func(), error) {
	e := p.use(id)
	defer p.done(id, e)
	return p.pinEntry(id, e, sid, false)
}

func (p *pins) pinEntry(id string, e *tablePins, sid int64, tagged bool) (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !tagged {
		for _, bound := range e.expiring {
			if sid < bound {
				return nil, fmt.Errorf("snapshot %d: %w", sid, errExpiring)
			}
		}
	}
	e.readers[sid]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if e.readers[sid]--; e.readers[sid] <= 0 {
				delete(e.readers, sid)
			}
			p.dropLocked(id, e)
		})
	}, nil
}

// expire starts an expiration of table id that keeps the snapshots from
// keep on, and returns the bound it may delete below: keep, lowered to the
// oldest pinned snapshot. keep must be at most the id of a latest snapshot
// read before the call. Call done when the expiration has ended.
func (p *pins) expire(id string, keep int64) (bound int64, done func()) {
	e := p.use(id)
	defer p.done(id, e)
	if !e.rw.TryLock() {
		if expireBlockedHook != nil {
			expireBlockedHook(id)
		}
		e.rw.Lock()
	}
	defer e.rw.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for sid := range e.readers {
		keep = min(keep, sid)
	}
	e.expiring = append(e.expiring, keep)
	var once sync.Once
	return keep, func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			i := slices.Index(e.expiring, keep)
			e.expiring = slices.Delete(e.expiring, i, i+1)
			p.dropLocked(id, e)
		})
	}
}

// oldest returns the oldest pinned snapshot of table id (0: none).
func (p *pins) oldest(id string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest int64
	if e := p.m[id]; e != nil {
		for sid := range e.readers {
			if oldest == 0 || sid < oldest {
				oldest = sid
			}
		}
	}
	return oldest
}

// OldestPinned returns the oldest snapshot of the table that a running read
// of this process uses (0: none). It is a moment's view: an expiration
// takes it with BeginExpire, which no read's choice of snapshot straddles.
func (s *Service) OldestPinned(tableID string) int64 { return s.pins.oldest(tableID) }

// BeginExpire starts an expiration of the table's snapshots that would keep
// those from keep on, and returns the bound it must keep instead: the
// snapshots from protect on (keep, lowered to the oldest snapshot a read of
// this process uses). keep must be at most the id of the latest snapshot
// read before the call: a read that chooses its snapshot after the call
// gets that one or a newer one. Until done is called, reads of a snapshot
// below protect (time travel) are refused with an error matching
// fs.ErrNotExist. Call done once the expiration has ended.
func (s *Service) BeginExpire(tableID string, keep int64) (protect int64, done func()) {
	return s.pins.expire(tableID, keep)
}

// pinnedReader unpins its snapshot when the last reference is released.
type pinnedReader struct {
	array.RecordReader
	refs  atomic.Int64
	unpin func()
}

func newPinnedReader(r array.RecordReader, unpin func()) *pinnedReader {
	p := &pinnedReader{RecordReader: r, unpin: unpin}
	p.refs.Store(1)
	return p
}

func (p *pinnedReader) Retain() {
	p.refs.Add(1)
	p.RecordReader.Retain()
}

func (p *pinnedReader) Release() {
	p.RecordReader.Release()
	if p.refs.Add(-1) == 0 {
		p.unpin()
	}
}

// OldestPins returns, by table id, the oldest snapshot a running read of
// this process uses (tables without one are left out): what a node
// publishes so that the node expiring snapshots keeps them.
func (s *Service) OldestPins() map[string]int64 {
	s.pins.mu.Lock()
	defer s.pins.mu.Unlock()
	var out map[string]int64
	for id, e := range s.pins.m {
		var oldest int64
		for sid, n := range e.readers {
			if n > 0 && (oldest == 0 || sid < oldest) {
				oldest = sid
			}
		}
		if oldest > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[id] = oldest
		}
	}
	return out
}
