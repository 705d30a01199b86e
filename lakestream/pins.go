package lakestream

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// pins counts the running reads of each snapshot, so that snapshot
// expiration (in this process) never removes files a read still needs.
type pins struct {
	mu sync.Mutex
	m  map[string]map[int64]int // table id -> snapshot id -> readers
}

// pin registers a reader of snapshot sid of table id; the returned func
// unregisters it (call it once).
func (p *pins) pin(id string, sid int64) func() {
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]map[int64]int{}
	}
	if p.m[id] == nil {
		p.m[id] = map[int64]int{}
	}
	p.m[id][sid]++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.m[id][sid]--; p.m[id][sid] <= 0 {
				delete(p.m[id], sid)
			}
			if len(p.m[id]) == 0 {
				delete(p.m, id)
			}
		})
	}
}

// oldest returns the oldest pinned snapshot of table id (0: none).
func (p *pins) oldest(id string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var min int64
	for sid := range p.m[id] {
		if min == 0 || sid < min {
			min = sid
		}
	}
	return min
}

// OldestPinned returns the oldest snapshot of the table that a running read
// of this process uses (0: none). Expiration must keep it and everything
// newer.
func (s *Service) OldestPinned(tableID string) int64 { return s.pins.oldest(tableID) }

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
