package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/arrowconv"
	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/membudget"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
)

// Writer writes Arrow batches to flightd's tables: ingest streams, the
// rows of INSERTs and of parameter batches. It is safe for concurrent use.
type Writer struct {
	ls   *lakestream.Service
	opts Options
}

// Options configure a Writer.
type Options struct {
	// Allocator holds converted batches (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Budget bounds the bytes of ingest batches held in memory across
	// streams (nil: unbounded; see ingestMemory). Reserve is what a stream
	// reserves before reading its first batch (its largest message), Wait
	// the longest it waits for that.
	Budget  *membudget.Budget
	Reserve int64
	Wait    time.Duration
	// QueueBytes is what a stream's queued writes may hold before it waits
	// for them (at least one write is always queued); 0: DefaultQueueBytes.
	QueueBytes int64
}

// New returns a Writer to ls's tables.
func New(ls *lakestream.Service, opts Options) *Writer {
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.QueueBytes == 0 {
		opts.QueueBytes = DefaultQueueBytes
	}
	return &Writer{ls: ls, opts: opts}
}

// Ingest appends r to db.table, which the caller has checked takes
// writes; with create, a missing table is created from r's schema as an
// append table. Each batch's columns are first brought to the table's
// types exactly (arrowconv.Record). A table is created only once the stream's
// first batch has been converted to it, so a batch the table would refuse
// leaves no table behind.
func (w *Writer) Ingest(ctx context.Context, db, table string, create bool, r array.RecordReader) (int64, error) {
	schema, serr := w.ls.ArrowSchema(ctx, db, table)
	mem := w.newMemory()
	var first arrow.RecordBatch // converted; written first
	var firstHeld int64         // the budget first holds
	defer func() {
		mem.done()
		mem.b.Release(firstHeld)
		if first != nil {
			first.Release()
		}
	}()
	if serr != nil {
		if !create {
			return 0, lakeerr.Map(serr)
		}
		sc, err := ingestSchema(db, table, r.Schema())
		if err != nil {
			return 0, err
		}
		target := arrowSchemaOf(sc)
		ok, held, err := mem.next(ctx, r)
		if err != nil {
			return 0, err
		}
		firstHeld = held
		if ok {
			if first, err = w.convertBatch(ctx, target, r.RecordBatch(), db, table); err != nil {
				return 0, err
			}
			if err := checkNotNull(target, first, db, table); err != nil {
				return 0, err
			}
		} else if err := r.Err(); err != nil {
			return 0, fmt.Errorf("%w: read ingest stream: %w", engine.ErrInvalid, err)
		}
		if err := lakeerr.Map(w.ls.CreateTable(ctx, db, table, sc, true)); err != nil {
			return 0, err
		}
		if schema, err = w.ls.ArrowSchema(ctx, db, table); err != nil {
			return 0, lakeerr.Map(err)
		}
	}
	// A pipeline: this goroutine reads, checks and queues batch i+1 while a
	// second one waits for batch i to be durable, so the stream is not held
	// up by each commit. Batches are queued in stream order; the waits
	// happen on their own goroutine so that a table switch (ALTER TABLE,
	// which waits for in-flight writes) never waits on this reader.
	type pending struct {
		wait func() (int64, error)
		held int64 // of the ingest memory budget, until durable
	}
	waits := make(chan pending, ingestWindow)
	var total int64
	var waitErr error
	var failed atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range waits {
			n, err := p.wait()
			mem.durable(p.held)
			if err != nil {
				if waitErr == nil {
					waitErr = err
					failed.Store(true)
				}
				continue
			}
			total += n
		}
	}()
	var err error // of this loop
	for !failed.Load() {
		rec, held := first, firstHeld
		first, firstHeld = nil, 0
		if rec == nil {
			var ok bool
			if ok, held, err = mem.next(ctx, r); err != nil || !ok {
				break
			}
			if rec, err = w.convertBatch(ctx, schema, r.RecordBatch(), db, table); err != nil {
				mem.b.Release(held)
				break
			}
		}
		mem.queue(held)
		var wait func() (int64, error)
		wait, err = w.ls.WriteAsync(ctx, db, table, rec)
		rec.Release() // the write has taken what it needs
		if err != nil {
			mem.durable(held)
			break
		}
		waits <- pending{wait, held}
	}
	close(waits)
	<-done
	switch {
	case waitErr != nil:
		return total, lakeerr.Map(waitErr)
	case err != nil:
		return total, lakeerr.Map(err)
	}
	if err := r.Err(); err != nil {
		return total, fmt.Errorf("%w: read ingest stream: %w", engine.ErrInvalid, err)
	}
	return total, nil
}

// ingestWindow bounds the batches of one ingest stream queued but not yet
// durable; the bytes they hold are bounded by Options.QueueBytes (about 15
// batches of 10k rows of 8 columns) and the ingest budget. A log whose
// acknowledgement takes a round trip (Kafka: ~20 ms a transaction) needs
// the depth: one 10M-row stream into the Kafka log went from 2.7 to 3.0 M
// rows/s with 32 instead of 8; the Badger log did not change.
const ingestWindow = 32

// ingestMemory is one ingest stream's use of the ingest memory budget
// (Options.Budget).
//
// A stream is admitted once, before it reads its first batch: it waits, in
// arrival order, until the budget has room for what its largest message
// and the copies made of it hold (Copies times Options.Reserve, at
// most a quarter of the budget), which holds its client back through
// gRPC's flow control, since nothing is read; past Options.Wait it is
// refused (ErrExhausted). Admitted, it never waits for another stream
// (streams that hold memory and wait for each other's would deadlock):
// what it holds follows what it reads, past the budget if need be, and
// new streams wait until the budget is back under. It holds the received
// message until it reads the next one (the reader keeps it until then),
// and each batch's converted copy and log entry until the write is
// durable; it queues writes up to Options.QueueBytes, and while the budget
// stands above its limit, one at a time. So the memory of ingest stays
// near the budget: above it by at most a message and its copies per
// admitted stream, and streams are admitted only while it is under.
// (Measured: 32 streams of two 48 MiB batches under a 2 GiB limit.)
type ingestMemory struct {
	b          *membudget.Budget
	reserve    int64
	wait       time.Duration
	queueBytes int64
	admitted   bool
	raw        int64 // the received message the reader holds

	mu      sync.Mutex
	cond    *sync.Cond
	queued  int64 // copies held by writes not yet durable
	pending int   // writes not yet durable
}

// newMemory is a new stream's use of the ingest memory budget.
func (w *Writer) newMemory() *ingestMemory {
	b := w.opts.Budget
	m := &ingestMemory{b: b, reserve: min(Copies*w.opts.Reserve, b.Limit()/4), wait: w.opts.Wait, queueBytes: w.opts.QueueBytes}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// next reads r's next batch under the budget. ok is false at the end of
// the stream; held is what the caller passes to queue and durable.
func (m *ingestMemory) next(ctx context.Context, r array.RecordReader) (ok bool, held int64, err error) {
	if !m.admitted && m.b != nil {
		actx, cancel := context.WithTimeoutCause(ctx, m.wait, errIngestWait)
		err := m.b.Acquire(actx, m.reserve)
		cancel()
		if errors.Is(err, errIngestWait) {
			return false, 0, fmt.Errorf("%w: the ingest stream waited %s (--queue-timeout) for memory: ingest streams hold %d MiB of the %d MiB ingest budget (a quarter of --memory-limit); retry later or send smaller batches", engine.ErrExhausted, m.wait, m.b.Used()>>20, m.b.Limit()>>20)
		}
		if err != nil {
			return false, 0, err
		}
		m.admitted, m.raw = true, m.reserve // the first message is read into the reservation
	}
	ok = r.Next() // drops the previous message
	if !ok {
		return false, 0, nil
	}
	size := arrowutil.RecordBytes(r.RecordBatch())
	if size > m.raw {
		m.b.Grow(size - m.raw)
	} else {
		m.b.Release(m.raw - size)
	}
	m.raw, held = size, (Copies-1)*size
	m.b.Grow(held)
	return true, held, nil
}

// queue waits until the stream's writes not yet durable hold little
// enough to queue one more that holds held: at most its queueBytes, and
// none while the budget stands above its limit. It waits for the stream's
// own writes only, which always end, so streams never wait for each other.
func (m *ingestMemory) queue(held int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.pending > 0 && (m.queued+held > max(held, m.queueBytes) || m.b.Over()) {
		m.cond.Wait()
	}
	m.queued += held
	m.pending++
}

// durable gives back what a queued write held.
func (m *ingestMemory) durable(held int64) {
	m.b.Release(held)
	m.mu.Lock()
	m.queued -= held
	m.pending--
	m.cond.Broadcast()
	m.mu.Unlock()
}

// done gives back what the stream's reader holds, once it is no longer read.
func (m *ingestMemory) done() {
	m.b.Release(m.raw)
	m.raw = 0
}

// errIngestWait is the cause of an ingest stream's wait for memory that
// ran out of IngestWait.
var errIngestWait = errors.New("ingest memory wait")

// DefaultQueueBytes is Options.QueueBytes by default.
const DefaultQueueBytes = 32 << 20

// Copies is how many times its Arrow size a received batch holds in
// memory: the message gRPC received and decoded, the batch converted from
// it (often the same buffers), and the log entry encoded from it.
const Copies = 3

// ingestSchema is the schema of an append table created by ingest from
// the stream's schema s. A change-kind column is refused: an append table
// takes inserts only, and making it a column would store the kinds as data.
func ingestSchema(db, table string, s *arrow.Schema) (paimontype.Schema, error) {
	var sc paimontype.Schema
	for _, f := range s.Fields() {
		if f.Name == lakestream.ChangeKindColumn {
			return paimontype.Schema{}, fmt.Errorf("%w: create %s.%s from ingest: the batch has a %s column, but ingest creates append tables, which take inserts only; create the primary-key table with CREATE TABLE first, then ingest into it", engine.ErrInvalid, db, table, f.Name)
		}
		ts, err := arrowconv.PaimonType(f.Type)
		if err != nil {
			return paimontype.Schema{}, fmt.Errorf("%w: create %s.%s from ingest: column %q: %w", engine.ErrInvalid, db, table, f.Name, err)
		}
		if !f.Nullable {
			ts += " NOT NULL"
		}
		t, err := paimontype.ParseType(ts)
		if err != nil {
			return paimontype.Schema{}, fmt.Errorf("%w: create %s.%s from ingest: column %q: %w", engine.ErrInvalid, db, table, f.Name, err)
		}
		sc.Columns = append(sc.Columns, paimontype.Column{Name: f.Name, Type: t})
	}
	return sc, nil
}

// arrowSchemaOf is the Arrow schema a table of schema sc reads and writes.
func arrowSchemaOf(sc paimontype.Schema) *arrow.Schema {
	fs := make([]arrow.Field, len(sc.Columns))
	for i, c := range sc.Columns {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable()}
	}
	return arrow.NewSchema(fs, nil)
}

// convertBatch is arrowconv.Record with the error an ingest reports.
func (w *Writer) convertBatch(ctx context.Context, schema *arrow.Schema, rec arrow.RecordBatch, db, table string) (arrow.RecordBatch, error) {
	// The casts index the client's buffers: they must hold together first.
	if err := arrowutil.ValidateRecord(rec); err != nil {
		return nil, fmt.Errorf("%w: ingest into %s.%s: the batch's buffers are inconsistent: %v", engine.ErrInvalid, db, table, err)
	}
	out, err := arrowconv.Record(ctx, w.opts.Allocator, schema, rec)
	if err != nil {
		return nil, fmt.Errorf("%w: ingest into %s.%s: %w", engine.ErrInvalid, db, table, err)
	}
	return out, nil
}

// checkNotNull refuses nulls in rec's columns that schema says are NOT
// NULL (the write path checks it too; a table about to be created is
// checked before it exists).
func checkNotNull(schema *arrow.Schema, rec arrow.RecordBatch, db, table string) error {
	for i, f := range rec.Schema().Fields() {
		if j := schema.FieldIndices(f.Name); len(j) > 0 && !schema.Field(j[0]).Nullable && rec.Column(i).NullN() > 0 {
			return fmt.Errorf("%w: ingest into %s.%s: column %q is NOT NULL (its Arrow field is not nullable) but the batch has %d null value(s)", engine.ErrInvalid, db, table, f.Name, rec.Column(i).NullN())
		}
	}
	return nil
}
