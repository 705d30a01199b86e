//go:build duckdb_arrow

package query

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// readAheadBatches is how many batches a view's scan reads ahead of
// DuckDB.
const readAheadBatches = 2

// readAhead reads its scan's batches on a goroutine of its own, up to
// readAheadBatches ahead of the reader, so that decoding the lake's files
// runs beside DuckDB's work on the batches before instead of inside
// DuckDB's call for the next one (an Arrow stream is read by one DuckDB
// thread at a time).
type readAhead struct {
	src  array.RecordReader
	refs atomic.Int64
	ch   chan arrow.RecordBatch
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once // starts the goroutine at the first Next
	cur  arrow.RecordBatch
	err  error // set before ch closes
}

func newReadAhead(src array.RecordReader) *readAhead {
	r := &readAhead{src: src, ch: make(chan arrow.RecordBatch, readAheadBatches), stop: make(chan struct{})}
	r.refs.Store(1)
	return r
}

func (r *readAhead) start() {
	src := r.src
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(r.ch)
		for src.Next() {
			rec := src.RecordBatch()
			rec.Retain()
			select {
			case r.ch <- rec:
			case <-r.stop:
				rec.Release()
				return
			}
		}
		r.err = src.Err()
	}()
}

func (r *readAhead) Schema() *arrow.Schema { return r.src.Schema() }

func (r *readAhead) Retain() { r.refs.Add(1) }

func (r *readAhead) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	started := true
	r.once.Do(func() { started = false })
	close(r.stop)
	if started {
		for rec := range r.ch {
			rec.Release()
		}
		r.wg.Wait()
	}
	r.src.Release()
}

func (r *readAhead) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.once.Do(r.start)
	rec, ok := <-r.ch
	if !ok {
		return false
	}
	r.cur = rec
	return true
}

func (r *readAhead) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated spelling of RecordBatch.
func (r *readAhead) Record() arrow.RecordBatch { return r.cur }

// Err is the scan's error once Next has returned false.
func (r *readAhead) Err() error { return r.err }
