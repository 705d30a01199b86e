//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/membudget"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/sqlparse"
)

// insertBatchRows is how many rows an INSERT gathers into one log write.
const insertBatchRows = 64 << 10

// writable refuses a write to a name that reads but cannot be written:
// t$rt and t$changelog, which are views of t, and flightd's system tables.
// Their base tables exist, so "not found" (what looking the name up as a
// table says) would be wrong.
func (e *Engine) writable(ctx context.Context, db, table string) error {
	if strings.EqualFold(db, SystemDatabase) {
		return fmt.Errorf("%w: %s.%s is one of flightd's read-only system tables", engine.ErrInvalid, db, table)
	}
	suffix := lakestream.ReservedSuffix(table)
	if suffix == "" {
		return nil
	}
	base := table[:len(table)-len(suffix)]
	if _, err := e.ls.Table(ctx, db, base); err != nil {
		return fmt.Errorf("%w: table %s.%s does not exist, so neither does %s.%s", engine.ErrNotFound, db, base, db, table)
	}
	what := "real-time view"
	switch suffix {
	case lakestream.ChangelogSuffix:
		what = "changelog"
	case lakestream.RealtimeSuffix:
	default:
		what = "system table"
	}
	return fmt.Errorf("%w: %s.%s is the read-only %s of %s.%s; write to %s.%s", engine.ErrInvalid, db, table, what, db, base, db, base)
}

// insert runs INSERT INTO t [(cols)] <query>: the query runs on DuckDB with
// its columns cast to t's types, and the rows go to t's log.
func (e *Engine) insert(ctx context.Context, sql string) (int64, error) {
	st, err := sqlparse.ParseInsert(sql)
	if err != nil {
		return 0, invalid(err)
	}
	db := dbOr(ctx, st.Name.Database)
	if err := e.writable(ctx, db, st.Name.Table); err != nil {
		return 0, err
	}
	schema, err := e.ls.ArrowSchema(ctx, db, st.Name.Table)
	if err != nil {
		return 0, mapErr(err)
	}
	cols := insertColumns(st, schema)
	target, err := checkValuesCount(db, st, cols)
	if err != nil {
		return 0, err
	}
	var sel []string
	var alias []string
	for i, c := range cols {
		idx := fieldIndex(schema, c)
		if idx < 0 {
			return 0, fmt.Errorf("%w: table %s.%s has no column %q", engine.ErrInvalid, db, st.Name.Table, c)
		}
		f := schema.Field(idx)
		a := fmt.Sprintf("__c%d", i)
		alias = append(alias, a)
		if t, ok := duckType(f.Type); ok {
			sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", a, t, quoteIdent(f.Name)))
		} else {
			sel = append(sel, fmt.Sprintf("%s AS %s", a, quoteIdent(f.Name)))
		}
	}
	// The query's columns past the aliased ones come out too, so that a
	// query returning more values than the INSERT fills is refused instead
	// of losing them; one returning fewer fails to bind its aliases.
	q := fmt.Sprintf("SELECT %s, COLUMNS(* EXCLUDE (%s)) FROM (%s) AS __flightd_insert(%s)", strings.Join(sel, ", "), strings.Join(alias, ", "), st.Query, strings.Join(alias, ", "))
	r, err := e.query(ctx, q, false)
	if err != nil {
		if m := aliasMismatch.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return 0, fmt.Errorf("%w: %s but the query returns %d", engine.ErrInvalid, target, n)
		}
		return 0, err
	}
	defer r.Release()
	if n := r.Schema().NumFields(); n != len(cols) {
		return 0, fmt.Errorf("%w: %s but the query returns %d", engine.ErrInvalid, target, n)
	}
	all, err := e.readAll(r)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", engine.ErrInvalid, cleanDuckErr(err))
	}
	defer all.Release()
	return e.writeAll(ctx, db, st.Name.Table, all)
}

// readAll reads the whole result of an INSERT's query into Go memory
// before anything is written: results stream, and a query that reads the
// table it inserts into must not see its own rows; and batches DuckDB's
// memory backs are not kept by the log's caches.
func (e *Engine) readAll(r array.RecordReader) (array.RecordReader, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for r.Next() {
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		cols := make([]arrow.Array, rec.NumCols())
		for i, c := range rec.Columns() {
			cp, err := array.Concatenate([]arrow.Array{c}, e.mem)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return nil, err
			}
			cols[i] = cp
		}
		recs = append(recs, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
		for _, c := range cols {
			c.Release()
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return array.NewRecordReader(r.Schema(), recs)
}

// checkValuesCount refuses an INSERT ... VALUES whose rows do not hold one
// value per column it fills (cols). target describes those columns for
// the errors of other source queries.
func checkValuesCount(db string, st *sqlparse.Insert, cols []string) (target string, err error) {
	target = fmt.Sprintf("INSERT INTO %s.%s: the table has %s", db, st.Name.Table, plural(len(cols), "column"))
	if len(st.Columns) > 0 {
		target = fmt.Sprintf("INSERT INTO %s.%s: the column list names %s", db, st.Name.Table, plural(len(cols), "column"))
	}
	if rows, ok := sqlparse.ValuesList(st.Query); ok {
		for i, row := range rows {
			if row.Values != len(cols) {
				return target, fmt.Errorf("%w: %s but VALUES row %d %s has %s", engine.ErrInvalid, target, i+1, clip(row.Text, 200), plural(row.Values, "value"))
			}
		}
	}
	return target, nil
}

// aliasMismatch is DuckDB's error for a query with fewer columns than the
// aliases the INSERT gives them.
var aliasMismatch = regexp.MustCompile(`table "__flightd_insert" has (\d+) columns available but \d+ columns specified`)

// plural spells n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// insertColumns is the column list of st: as written, else all of schema's
// columns in order.
func insertColumns(st *sqlparse.Insert, schema *arrow.Schema) []string {
	if len(st.Columns) > 0 {
		return st.Columns
	}
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = f.Name
	}
	return cols
}

// writeAll writes r's batches to db.table, gathering small batches.
func (e *Engine) writeAll(ctx context.Context, db, table string, r array.RecordReader) (int64, error) {
	var pending []arrow.RecordBatch
	var pendingRows, total int64
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		defer func() {
			for _, b := range pending {
				b.Release()
			}
			pending, pendingRows = nil, 0
		}()
		rec := pending[0]
		if len(pending) > 1 {
			var err error
			rec, err = arrowutil.ConcatRecords(pending, e.mem)
			if err != nil {
				return err
			}
			defer rec.Release()
		}
		n, err := e.ls.Write(ctx, db, table, rec)
		total += n
		return mapErr(err)
	}
	for r.Next() {
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		pending = append(pending, rec)
		pendingRows += rec.NumRows()
		if pendingRows >= insertBatchRows {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := r.Err(); err != nil {
		for _, b := range pending {
			b.Release()
		}
		return total, fmt.Errorf("%w: %s", engine.ErrInvalid, cleanDuckErr(err))
	}
	return total, flush()
}

func fieldIndex(s *arrow.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// Ingest appends r to db.table; with create, a missing table is created
// from r's schema as an append table. Each batch's columns are first
// brought to the table's types exactly (ingestConvert). A table is created
// only once the stream's first batch has been converted to it, so a batch
// the table would refuse leaves no table behind.
func (e *Engine) Ingest(ctx context.Context, db, table string, create bool, r array.RecordReader) (int64, error) {
	db = dbOr(ctx, db)
	if err := e.writable(ctx, db, table); err != nil {
		return 0, err
	}
	schema, serr := e.ls.ArrowSchema(ctx, db, table)
	mem := newIngestMemory(e.ingestMem, e.ingestReserve, e.ingestWait)
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
			return 0, mapErr(serr)
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
			if first, err = e.convertBatch(ctx, target, r.RecordBatch(), db, table); err != nil {
				return 0, err
			}
			if err := checkNotNull(target, first, db, table); err != nil {
				return 0, err
			}
		} else if err := r.Err(); err != nil {
			return 0, fmt.Errorf("%w: read ingest stream: %w", engine.ErrInvalid, err)
		}
		if err := mapErr(e.ls.CreateTable(ctx, db, table, sc, true)); err != nil {
			return 0, err
		}
		if schema, err = e.ls.ArrowSchema(ctx, db, table); err != nil {
			return 0, mapErr(err)
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
			if rec, err = e.convertBatch(ctx, schema, r.RecordBatch(), db, table); err != nil {
				mem.b.Release(held)
				break
			}
		}
		mem.queue(held)
		var w func() (int64, error)
		w, err = e.ls.WriteAsync(ctx, db, table, rec)
		rec.Release() // the write has taken what it needs
		if err != nil {
			mem.durable(held)
			break
		}
		waits <- pending{w, held}
	}
	close(waits)
	<-done
	switch {
	case waitErr != nil:
		return total, mapErr(waitErr)
	case err != nil:
		return total, mapErr(err)
	}
	if err := r.Err(); err != nil {
		return total, fmt.Errorf("%w: read ingest stream: %w", engine.ErrInvalid, err)
	}
	return total, nil
}

// ingestWindow bounds the batches of one ingest stream queued but not yet
// durable; the bytes they hold are bounded by ingestQueueBytes (about 15
// batches of 10k rows of 8 columns) and the ingest budget. A log whose
// acknowledgement takes a round trip (Kafka: ~20 ms a transaction) needs
// the depth: one 10M-row stream into the Kafka log went from 2.7 to 3.0 M
// rows/s with 32 instead of 8; the Badger log did not change.
const ingestWindow = 32

// ingestMemory is one ingest stream's use of the engine's ingest memory
// budget (Options.IngestMemory).
//
// A stream is admitted once, before it reads its first batch: it waits, in
// arrival order, until the budget has room for what its largest message
// and the copies made of it hold (ingestCopies times IngestReserve, at
// most a quarter of the budget), which holds its client back through
// gRPC's flow control, since nothing is read; past IngestWait it is
// refused (ErrExhausted). Admitted, it never waits for another stream
// (streams that hold memory and wait for each other's would deadlock):
// what it holds follows what it reads, past the budget if need be, and
// new streams wait until the budget is back under. It holds the received
// message until it reads the next one (the reader keeps it until then),
// and each batch's converted copy and log entry until the write is
// durable; it queues writes up to ingestQueueBytes, and while the budget
// stands above its limit, one at a time. So the memory of ingest stays
// near the budget: above it by at most a message and its copies per
// admitted stream, and streams are admitted only while it is under.
// (Measured: 32 streams of two 48 MiB batches under a 2 GiB limit.)
type ingestMemory struct {
	b        *membudget.Budget
	reserve  int64
	wait     time.Duration
	admitted bool
	raw      int64 // the received message the reader holds

	mu      sync.Mutex
	cond    *sync.Cond
	queued  int64 // copies held by writes not yet durable
	pending int   // writes not yet durable
}

func newIngestMemory(b *membudget.Budget, maxMessage int64, wait time.Duration) *ingestMemory {
	m := &ingestMemory{b: b, reserve: min(ingestCopies*maxMessage, b.Limit()/4), wait: wait}
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
	m.raw, held = size, (ingestCopies-1)*size
	m.b.Grow(held)
	return true, held, nil
}

// queue waits until the stream's writes not yet durable hold little
// enough to queue one more that holds held: at most ingestQueueBytes, and
// none while the budget stands above its limit. It waits for the stream's
// own writes only, which always end, so streams never wait for each other.
func (m *ingestMemory) queue(held int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.pending > 0 && (m.queued+held > max(held, ingestQueueBytes) || m.b.Over()) {
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

// ingestQueueBytes is what a stream's queued writes may hold before it
// waits for them (at least one write is always queued). A variable for
// tests.
var ingestQueueBytes int64 = 32 << 20

// ingestCopies is how many times its Arrow size a received batch holds in
// memory: the message gRPC received and decoded, the batch converted from
// it (often the same buffers), and the log entry encoded from it.
const ingestCopies = 3

// ingestSchema is the schema of an append table created by ingest from
// the stream's schema s. A change-kind column is refused: an append table
// takes inserts only, and making it a column would store the kinds as data.
func ingestSchema(db, table string, s *arrow.Schema) (lake.Schema, error) {
	var sc lake.Schema
	for _, f := range s.Fields() {
		if f.Name == lakestream.ChangeKindColumn {
			return lake.Schema{}, fmt.Errorf("%w: create %s.%s from ingest: the batch has a %s column, but ingest creates append tables, which take inserts only; create the primary-key table with CREATE TABLE first, then ingest into it", engine.ErrInvalid, db, table, f.Name)
		}
		ts, err := paimonType(f.Type)
		if err != nil {
			return lake.Schema{}, fmt.Errorf("%w: create %s.%s from ingest: column %q: %w", engine.ErrInvalid, db, table, f.Name, err)
		}
		if !f.Nullable {
			ts += " NOT NULL"
		}
		t, err := lake.ParseType(ts)
		if err != nil {
			return lake.Schema{}, fmt.Errorf("%w: create %s.%s from ingest: column %q: %w", engine.ErrInvalid, db, table, f.Name, err)
		}
		sc.Columns = append(sc.Columns, lake.Column{Name: f.Name, Type: t})
	}
	return sc, nil
}

// arrowSchemaOf is the Arrow schema a table of schema sc reads and writes.
func arrowSchemaOf(sc lake.Schema) *arrow.Schema {
	fs := make([]arrow.Field, len(sc.Columns))
	for i, c := range sc.Columns {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable()}
	}
	return arrow.NewSchema(fs, nil)
}

// convertBatch is ingestConvert with the error an ingest reports.
func (e *Engine) convertBatch(ctx context.Context, schema *arrow.Schema, rec arrow.RecordBatch, db, table string) (arrow.RecordBatch, error) {
	// The casts index the client's buffers: they must hold together first.
	if err := arrowutil.ValidateRecord(rec); err != nil {
		return nil, fmt.Errorf("%w: ingest into %s.%s: the batch's buffers are inconsistent: %v", engine.ErrInvalid, db, table, err)
	}
	out, err := ingestConvert(ctx, e.mem, schema, rec)
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
