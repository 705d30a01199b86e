//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"
	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
)

// Results as Arrow, streamed. A query runs as a DuckDB streaming result
// (duckdb_pending_prepared_streaming) and each chunk DuckDB produces is
// converted in C to an Arrow batch (duckdb_data_chunk_to_arrow) and
// imported without a copy: the batch's buffers are DuckDB's memory, freed
// when the last reference to the batch is released. So DuckDB computes
// only as fast as the caller reads, and the engine holds about one chunk
// (at most 2048 rows, DuckDB's vector size) plus DuckDB's own streaming
// buffer per statement, not the whole result.
//
// Why results once came from rows: values read from an Arrow batch after
// it was released read freed memory. arrow-go's cdata import wraps the C
// buffers (no copy) and releases them with the batch's last reference, and
// String.Value returns a string over the buffer, not a copy; a string kept
// past the batch's release (as the statement serialiser once did) reads
// whatever DuckDB wrote there next. Batches from Go allocators hide such a
// use because the garbage collector keeps the memory alive. The rule is
// Arrow's: a batch is valid until the reader's next Next or Release, and
// whoever keeps it (or a value of it) retains it or copies the value.
// TestResultStrings checks strings of every shape read after later batches
// were fetched and after the reader was released, from retained batches.
//
// duckdb-go (v2.10506.0) runs statements only to a materialised result and
// exposes no streaming call, so the connection and prepared statement
// handles are taken from its Conn and Stmt (rawHandle) and driven through
// duckdb-go-bindings, the C API duckdb-go itself calls.

// rawHandle returns the unexported field name of *v, which must be of
// type T. It fails, rather than misread memory, if duckdb-go changes the
// field's name or type.
func rawHandle[T any](v any, name string) (T, error) {
	var zero T
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("query: %T is not a pointer to a struct", v)
	}
	f := rv.Elem().FieldByName(name)
	if !f.IsValid() {
		return zero, fmt.Errorf("query: %T has no field %s", v, name)
	}
	if f.Type() != reflect.TypeOf(zero) {
		return zero, fmt.Errorf("query: %T.%s is %s, want %T", v, name, f.Type(), zero)
	}
	return *(*T)(unsafe.Pointer(f.UnsafeAddr())), nil
}

// arrowResultTypes reports whether every result column of st has the same
// Arrow type (and values) in DuckDB's Arrow output as in the results
// clients have always had (arrowTypeOf, rowreader.go). Types that differ
// (INTERVAL, UUID, ENUM, ARRAY, UNION, BIT, TIME WITH TIME ZONE, UHUGEINT,
// BIGNUM, ...: DuckDB exports them as month-day-nano intervals,
// dictionaries, fixed-size lists or not at all, while clients got text)
// keep the row path for the statement (TestArrowResultsMatchRows).
func arrowResultTypes(st *duckdb.Stmt) bool {
	n, err := st.ColumnCount()
	if err != nil {
		return false
	}
	for i := 0; i < n; i++ {
		info, err := st.ColumnTypeInfo(i)
		if err != nil || !arrowSameType(info) {
			return false
		}
	}
	return true
}

func arrowSameType(info duckdb.TypeInfo) bool {
	if info.Alias() != "" {
		return false // JSON and user types: text in the row path
	}
	switch info.InternalType() {
	case duckdb.TYPE_BOOLEAN, duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT,
		duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT, duckdb.TYPE_UINTEGER, duckdb.TYPE_UBIGINT,
		duckdb.TYPE_FLOAT, duckdb.TYPE_DOUBLE, duckdb.TYPE_HUGEINT, duckdb.TYPE_DECIMAL,
		duckdb.TYPE_DATE, duckdb.TYPE_TIME, duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S,
		duckdb.TYPE_TIMESTAMP_MS, duckdb.TYPE_TIMESTAMP_NS, duckdb.TYPE_TIMESTAMP_TZ,
		duckdb.TYPE_VARCHAR, duckdb.TYPE_BLOB:
		return true
	case duckdb.TYPE_LIST:
		d, ok := info.Details().(*duckdb.ListDetails)
		return ok && arrowSameType(d.Child)
	case duckdb.TYPE_MAP:
		d, ok := info.Details().(*duckdb.MapDetails)
		return ok && arrowSameType(d.Key) && arrowSameType(d.Value)
	case duckdb.TYPE_STRUCT:
		d, ok := info.Details().(*duckdb.StructDetails)
		if !ok {
			return false
		}
		for _, e := range d.Entries {
			if !arrowSameType(e.Info()) {
				return false
			}
		}
		return true
	}
	return false
}

// arrowResult streams a DuckDB streaming result as Arrow batches.
type arrowResult struct {
	ctx    context.Context
	refs   atomic.Int64
	res    *bindings.Result
	opts   bindings.ArrowOptions
	schema *arrow.Schema
	// stop ends the watch that interrupts DuckDB when ctx ends; it
	// returns once no interrupt can come any more.
	stop    func()
	cur     arrow.RecordBatch
	parts   []arrow.RecordBatch // the rest of a chunk cut by bytes
	err     error
	done    bool
	onClose func()
}

// interruptOn interrupts conn's running statement when ctx ends, until
// the returned stop is called; stop returns once no interrupt can come.
// The connection goes back to the pool only after stop: an interrupt that
// came later would cancel the next statement on it.
func interruptOn(ctx context.Context, conn bindings.Connection) (stop func()) {
	fired := make(chan struct{})
	after := context.AfterFunc(ctx, func() {
		bindings.Interrupt(conn)
		close(fired)
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			if !after() {
				<-fired
			}
		})
	}
}

// queryArrow runs st (prepared on c, no parameters) as a streaming result.
// onClose runs when the reader's last reference is released (not when
// queryArrow fails).
func (c *conn) queryArrow(ctx context.Context, st *duckdb.Stmt, onClose func()) (*arrowResult, error) {
	conn, ps, err := c.handles(st)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	var pending bindings.PendingResult
	if bindings.PendingPreparedStreaming(*ps, &pending) == bindings.StateError {
		msg := bindings.PendingError(pending)
		bindings.DestroyPending(&pending)
		return nil, errors.New(msg)
	}
	stop := interruptOn(ctx, conn)
	res := new(bindings.Result)
	state := bindings.ExecutePending(pending, res)
	bindings.DestroyPending(&pending)
	if state == bindings.StateError {
		msg := bindings.ResultError(res)
		bindings.DestroyResult(res)
		stop()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, errors.New(msg)
	}
	r := &arrowResult{ctx: ctx, res: res, stop: stop, onClose: onClose}
	r.opts = bindings.ResultGetArrowOptions(res)
	cc := bindings.ColumnCount(res)
	names := make([]string, cc)
	types := make([]bindings.LogicalType, cc)
	for i := range cc {
		names[i] = bindings.ColumnName(res, i)
		types[i] = bindings.ColumnLogicalType(res, i)
	}
	sc, ed := bindings.NewArrowSchema(r.opts, types, names)
	for i := range types {
		bindings.DestroyLogicalType(&types[i])
	}
	if err := errorData(ed); err != nil {
		r.close()
		return nil, fmt.Errorf("query: arrow schema of the result: %w", err)
	}
	r.schema = utcSchema(sc)
	r.refs.Store(1)
	return r, nil
}

// preparedSchema is the Arrow schema of the result st (prepared on c)
// streams when it runs (queryArrow), made from the prepared statement's
// column types and the connection's Arrow options: the same schema,
// without running st.
func (c *conn) preparedSchema(st *duckdb.Stmt) (*arrow.Schema, error) {
	conn, ps, err := c.handles(st)
	if err != nil {
		return nil, err
	}
	var opts bindings.ArrowOptions
	bindings.ConnectionGetArrowOptions(conn, &opts)
	defer bindings.DestroyArrowOptions(&opts)
	cc := bindings.PreparedStatementColumnCount(*ps)
	names := make([]string, cc)
	types := make([]bindings.LogicalType, cc)
	for i := range cc {
		names[i] = bindings.PreparedStatementColumnName(*ps, i)
		types[i] = bindings.PreparedStatementColumnLogicalType(*ps, i)
	}
	sc, ed := bindings.NewArrowSchema(opts, types, names)
	for i := range types {
		bindings.DestroyLogicalType(&types[i])
	}
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("query: arrow schema of the result: %w", err)
	}
	return utcSchema(sc), nil
}

// handles are the C handles of c and of st, prepared on c, which
// duckdb-go keeps to itself (rawHandle).
func (c *conn) handles(st *duckdb.Stmt) (bindings.Connection, *bindings.PreparedStatement, error) {
	dc, ok := c.c.(*duckdb.Conn)
	if !ok {
		return bindings.Connection{}, nil, errors.New("query: not a DuckDB connection")
	}
	conn, err := rawHandle[bindings.Connection](dc, "conn")
	if err != nil {
		return bindings.Connection{}, nil, err
	}
	ps, err := rawHandle[*bindings.PreparedStatement](st, "preparedStmt")
	if err != nil {
		return bindings.Connection{}, nil, err
	}
	if ps == nil {
		return bindings.Connection{}, nil, errors.New("query: statement not prepared")
	}
	return conn, ps, nil
}

// utcSchema labels the time zone of every TIMESTAMP WITH TIME ZONE as
// "UTC", as the row path always has: DuckDB's Arrow output names its
// TimeZone setting ("Etc/UTC"), while the values are UTC instants either
// way. Import takes the types from this schema, so the batches carry it.
func utcSchema(sc *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, sc.NumFields())
	changed := false
	for i, f := range sc.Fields() {
		t, c := utcType(f.Type)
		f.Type = t
		fields[i] = f
		changed = changed || c
	}
	if !changed {
		return sc
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
}

func utcType(t arrow.DataType) (arrow.DataType, bool) {
	switch t := t.(type) {
	case *arrow.TimestampType:
		if t.TimeZone != "" && t.TimeZone != "UTC" {
			return &arrow.TimestampType{Unit: t.Unit, TimeZone: "UTC"}, true
		}
	case *arrow.ListType:
		if e, c := utcField(t.ElemField()); c {
			return arrow.ListOfField(e), true
		}
	case *arrow.MapType:
		k, ck := utcType(t.KeyType())
		v, cv := utcField(t.ItemField())
		if ck || cv {
			m := arrow.MapOfWithMetadata(k, t.KeyField().Metadata, v.Type, v.Metadata)
			m.SetItemNullable(v.Nullable)
			m.KeysSorted = t.KeysSorted
			return m, true
		}
	case *arrow.StructType:
		fields := t.Fields()
		changed := false
		for i, f := range fields {
			var c bool
			fields[i], c = utcField(f)
			changed = changed || c
		}
		if changed {
			return arrow.StructOf(fields...), true
		}
	}
	return t, false
}

func utcField(f arrow.Field) (arrow.Field, bool) {
	t, c := utcType(f.Type)
	f.Type = t
	return f, c
}

// errorData returns ed's error, if any, and destroys ed.
func errorData(ed bindings.ErrorData) error {
	defer bindings.DestroyErrorData(&ed)
	if ed.Ptr == nil || !bindings.ErrorDataHasError(ed) {
		return nil
	}
	return errors.New(bindings.ErrorDataMessage(ed))
}

func (r *arrowResult) Schema() *arrow.Schema { return r.schema }

func (r *arrowResult) Retain() { r.refs.Add(1) }

func (r *arrowResult) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.release()
	r.close()
	if r.onClose != nil {
		r.onClose()
	}
}

// release drops the current batch and the rest of its chunk.
func (r *arrowResult) release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for _, p := range r.parts {
		p.Release()
	}
	r.parts = nil
}

// close ends the DuckDB result and the interrupt watch.
func (r *arrowResult) close() {
	if r.res != nil {
		bindings.DestroyResult(r.res)
		r.res = nil
	}
	bindings.DestroyArrowOptions(&r.opts)
	r.stop()
}

func (r *arrowResult) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if len(r.parts) > 0 {
		r.cur, r.parts = r.parts[0], r.parts[1:]
		return true
	}
	if r.done || r.err != nil {
		return false
	}
	for {
		if r.ctx.Err() != nil {
			r.err = context.Cause(r.ctx)
			return false
		}
		chunk := bindings.FetchChunk(*r.res)
		if chunk.Ptr == nil {
			if msg := bindings.ResultError(r.res); msg != "" {
				if r.ctx.Err() != nil {
					r.err = context.Cause(r.ctx)
				} else {
					r.err = errors.New(msg)
				}
				return false
			}
			r.done = true
			return false
		}
		rec, ed := bindings.DataChunkToArrowArray(r.opts, r.schema, chunk)
		bindings.DestroyDataChunk(&chunk)
		if err := errorData(ed); err != nil {
			if rec != nil {
				rec.Release()
			}
			r.err = fmt.Errorf("query: arrow batch of the result: %w", err)
			return false
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		r.cur, r.parts = cutBatch(rec)
		return true
	}
}

// cutBatch cuts rec into batches of at most resultBatchBytes (one row may
// be more), zero-copy slices of it; it takes over rec's reference.
func cutBatch(rec arrow.RecordBatch) (arrow.RecordBatch, []arrow.RecordBatch) {
	n := rec.NumRows()
	size := util.TotalRecordSize(rec)
	if size <= resultBatchBytes || n <= 1 {
		return rec, nil
	}
	pieces := (size + resultBatchBytes - 1) / resultBatchBytes
	step := max(1, n/pieces)
	var out []arrow.RecordBatch
	for start := int64(0); start < n; start += step {
		out = append(out, rec.NewSlice(start, min(start+step, n)))
	}
	rec.Release()
	return out[0], out[1:]
}

func (r *arrowResult) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated spelling of RecordBatch.
func (r *arrowResult) Record() arrow.RecordBatch { return r.cur }

func (r *arrowResult) Err() error { return r.err }
