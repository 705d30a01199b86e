//go:build duckdb_arrow

package query

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
	const char *format;
	const char *name;
	const char *metadata;
	int64_t flags;
	int64_t n_children;
	struct ArrowSchema **children;
	struct ArrowSchema *dictionary;
	void (*release)(struct ArrowSchema *);
	void *private_data;
};
struct ArrowArray {
	int64_t length;
	int64_t null_count;
	int64_t offset;
	int64_t n_buffers;
	int64_t n_children;
	const void **buffers;
	struct ArrowArray **children;
	struct ArrowArray *dictionary;
	void (*release)(struct ArrowArray *);
	void *private_data;
};
#endif

typedef void (*flightd_cb1)(void *);
typedef void (*flightd_cb2)(void *, void *);
void flightdScanBind(void *info);
void flightdScanInit(void *info);
void flightdScanLocalInit(void *info);
void flightdScanFunc(void *info, void *output);
void flightdScanDelete(void *data);

// duckdb.h's declaration, its handles spelled as the pointers they are.
void *duckdb_data_chunk_from_arrow(void *connection, struct ArrowArray *arrow_array, void *converted_schema, void **out_chunk);

// A column exported once per batch, shared by the slices made of it: the
// last slice released releases the export.
typedef struct {
	struct ArrowArray col;
	int64_t refs;
} flightd_shared;

static void flightd_unref(flightd_shared *sh) {
	if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (sh->col.release) {
			sh->col.release(&sh->col);
		}
		free(sh);
	}
}

// One slice: a one-column root record array over rows [off, off+n) of the
// shared column, in one allocation.
typedef struct {
	struct ArrowArray root;
	struct ArrowArray child;
	struct ArrowArray *children[1];
	const void *root_buffers[1];
	flightd_shared *sh;
} flightd_slice;

static void flightd_slice_child_release(struct ArrowArray *a) { a->release = NULL; }

static void flightd_slice_release(struct ArrowArray *a) {
	flightd_slice *s = (flightd_slice *)a->private_data;
	a->release = NULL;
	flightd_unref(s->sh);
	free(s);
}

static flightd_shared *flightd_share(void) {
	flightd_shared *sh = (flightd_shared *)calloc(1, sizeof(flightd_shared));
	sh->refs = 1;
	return sh;
}

// flightd_chunk converts rows [off, off+n) of sh's column into a new DuckDB
// chunk; it returns DuckDB's error data (NULL when none).
static void *flightd_chunk(void *conn, void *schema, flightd_shared *sh, int64_t off, int64_t n, void **out) {
	flightd_slice *s = (flightd_slice *)calloc(1, sizeof(flightd_slice));
	s->child = sh->col;
	s->child.offset = sh->col.offset + off;
	s->child.length = n;
	s->child.null_count = sh->col.null_count == 0 ? 0 : -1;
	s->child.release = flightd_slice_child_release;
	s->child.private_data = NULL;
	s->children[0] = &s->child;
	s->root_buffers[0] = NULL;
	s->root.length = n;
	s->root.null_count = 0;
	s->root.offset = 0;
	s->root.n_buffers = 1;
	s->root.n_children = 1;
	s->root.buffers = s->root_buffers;
	s->root.children = s->children;
	s->root.dictionary = NULL;
	s->root.release = flightd_slice_release;
	s->root.private_data = s;
	s->sh = sh;
	__atomic_add_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL);
	struct ArrowArray root = s->root;
	void *err = duckdb_data_chunk_from_arrow(conn, &root, schema, out);
	if (root.release) {
		root.release(&root); // not taken
	}
	return err;
}
*/
import "C"

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
)

// Scans reach DuckDB through one table function, scanFunction, registered
// once per database. Every name a statement uses for a flightd table is a
// view over it (views.go) that passes the view's schema and name and the
// connection's statement token; the engine registered a source for each
// (scanRegistry). The view binds to the table's schema, DuckDB's
// projection pushdown tells the function's init which columns the
// statement reads, and the scan opens with exactly those (plus the parse
// tree's filters for pruning, plan.Hints). The function claims no filter
// pushdown (the C API has none), so DuckDB applies every filter itself and
// its filter and projection optimizers stay on.
//
// Several DuckDB threads (at most scanThreads) call the function at once;
// each pulls the next batch from the scan under a lock, exports the
// columns DuckDB reads once (Arrow C data interface), and hands DuckDB
// slices of at most 2048 rows (DuckDB's vector size) of them, converted in
// C (duckdb_data_chunk_from_arrow, which takes ownership of the slice, no
// copy of the values) and referenced into DuckDB's output chunk. Nothing
// is filled value by value from Go. The batch order is the scan's (the
// lake scan decodes files in parallel but keeps their order: lakestream
// offers no unordered scan yet); DuckDB promises no order without ORDER
// BY.
//
// A client gains nothing by calling the function: it reads only sources
// the engine registered for the statement it is running (under a random
// 128-bit token, gone once the statement is released), which are the
// tables the statement names anyway, and refuses anything else, naming
// what it is. It opens no files of its own: it reads the tables through
// lakestream like every scan.
const scanFunction = "__flightd_scan"

// liveScans counts the scans open and liveBatches the batches DuckDB
// threads hold (tests check that a statement released leaves none).
var liveScans, liveBatches atomic.Int64

// onScanOpen, when set (by tests), sees the columns each scan opens with.
var onScanOpen func(r plan.Ref, cols []string)

// scanSource is one table reference of one statement.
type scanSource struct {
	e      *Engine
	ctx    context.Context
	ref    plan.Ref
	hints  plan.Hints
	schema *arrow.Schema // what the view binds to
	mu     sync.Mutex
	err    error // the first error of a scan (ErrSchemaChanged is retried)
}

func (s *scanSource) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *scanSource) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// scanRegistry holds the sources of the statements running: under each
// statement's token, one source per view it reads.
type scanRegistry struct {
	mu  sync.Mutex
	src map[string]map[plan.ViewKey]*scanSource
}

// add registers a statement's sources under a new token (random, 128 bits).
func (r *scanRegistry) add(srcs map[plan.ViewKey]*scanSource) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	r.mu.Lock()
	if r.src == nil {
		r.src = map[string]map[plan.ViewKey]*scanSource{}
	}
	r.src[tok] = srcs
	r.mu.Unlock()
	return tok, nil
}

func (r *scanRegistry) get(tok string, k plan.ViewKey) *scanSource {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.src[tok][k]
}

func (r *scanRegistry) remove(tok string) {
	r.mu.Lock()
	delete(r.src, tok)
	r.mu.Unlock()
}

// scanFn is the function's shared state: the engine and the connection
// its Arrow conversions use (its own, running no statements).
type scanFn struct {
	e    *Engine
	dc   *duckdb.Conn
	conn bindings.Connection
}

// registerScanFunction opens the function's connection and registers
// scanFunction in the database.
func (e *Engine) registerScanFunction(ctx context.Context) error {
	c, err := e.conn.Connect(ctx)
	if err != nil {
		return fmt.Errorf("query: connect duckdb: %w", err)
	}
	dc, ok := c.(*duckdb.Conn)
	if !ok {
		c.Close()
		return errors.New("query: not a DuckDB connection")
	}
	conn, err := rawHandle[bindings.Connection](dc, "conn")
	if err != nil {
		c.Close()
		return err
	}
	fn := &scanFn{e: e, dc: dc, conn: conn}
	f := bindings.CreateTableFunction()
	defer bindings.DestroyTableFunction(&f)
	bindings.TableFunctionSetName(f, scanFunction)
	vt := bindings.CreateLogicalType(bindings.TypeVarchar)
	for range 3 { // the view's schema and name, the statement's token
		bindings.TableFunctionAddParameter(f, vt)
	}
	bindings.DestroyLogicalType(&vt)
	bindings.TableFunctionSetExtraInfo(f, newHandle(fn), unsafe.Pointer(C.flightd_cb1(C.flightdScanDelete)))
	bindings.TableFunctionSetBind(f, unsafe.Pointer(C.flightd_cb1(C.flightdScanBind)))
	bindings.TableFunctionSetInit(f, unsafe.Pointer(C.flightd_cb1(C.flightdScanInit)))
	bindings.TableFunctionSetLocalInit(f, unsafe.Pointer(C.flightd_cb1(C.flightdScanLocalInit)))
	bindings.TableFunctionSetFunction(f, unsafe.Pointer(C.flightd_cb2(C.flightdScanFunc)))
	bindings.TableFunctionSupportsProjectionPushdown(f, true)
	if bindings.RegisterTableFunction(conn, f) == bindings.StateError {
		c.Close()
		return fmt.Errorf("query: register %s", scanFunction)
	}
	e.fnConn = c
	return nil
}

// newHandle returns C memory holding a handle to v; flightdScanDelete
// frees both.
func newHandle(v any) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(p) = C.uintptr_t(cgo.NewHandle(v))
	return p
}

func handleValue(p unsafe.Pointer) any {
	if p == nil {
		return nil
	}
	return cgo.Handle(*(*C.uintptr_t)(p)).Value()
}

//export flightdScanDelete
func flightdScanDelete(p unsafe.Pointer) {
	if p == nil {
		return
	}
	h := cgo.Handle(*(*C.uintptr_t)(p))
	if c, ok := h.Value().(interface{ close() }); ok {
		c.close()
	}
	h.Delete()
	C.free(p)
}

// errNotAScan is the refusal of a call of the function by a client.
const errNotAScan = scanFunction + " is flightd's internal table scan and reads only the tables of the statement it was planned for; query the table by name (db.table, db.\"table$rt\") instead"

//export flightdScanBind
func flightdScanBind(p unsafe.Pointer) {
	info := bindings.BindInfo{Ptr: p}
	fn, _ := handleValue(bindings.BindGetExtraInfo(info)).(*scanFn)
	if fn == nil || bindings.BindGetParameterCount(info) != 3 {
		bindings.BindSetError(info, errNotAScan)
		return
	}
	var args [3]string
	for i := range args {
		v := bindings.BindGetParameter(info, bindings.IdxT(i))
		if !bindings.IsNullValue(v) {
			args[i] = bindings.GetVarchar(v)
		}
		bindings.DestroyValue(&v)
	}
	src := fn.e.scans.get(args[2], plan.ViewKey{Schema: args[0], Name: args[1]})
	if src == nil {
		bindings.BindSetError(info, errNotAScan)
		return
	}
	types, err := fn.logicalTypes(src.schema)
	if err != nil {
		bindings.BindSetError(info, err.Error())
		return
	}
	for i, f := range src.schema.Fields() {
		bindings.BindAddResultColumn(info, f.Name, types[i])
		bindings.DestroyLogicalType(&types[i])
	}
	bindings.BindSetBindData(info, newHandle(src), unsafe.Pointer(C.flightd_cb1(C.flightdScanDelete)))
}

// logicalTypes are DuckDB's types of sc's columns, as its Arrow
// conversion makes them.
func (fn *scanFn) logicalTypes(sc *arrow.Schema) ([]bindings.LogicalType, error) {
	cs, ed := bindings.SchemaFromArrow(fn.conn, sc)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("query: DuckDB types of %s: %w", scanFunction, err)
	}
	defer bindings.DestroyArrowConvertedSchema(&cs)
	rec := array.NewRecordBatch(sc, emptyColumns(sc), 0)
	defer rec.Release()
	ch, ed := bindings.DataChunkFromArrow(fn.conn, rec, cs)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("query: DuckDB types of %s: %w", scanFunction, err)
	}
	defer bindings.DestroyDataChunk(&ch)
	out := make([]bindings.LogicalType, sc.NumFields())
	for i := range out {
		out[i] = bindings.VectorGetColumnType(bindings.DataChunkGetVector(ch, bindings.IdxT(i)))
	}
	return out, nil
}

func emptyColumns(sc *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, sc.NumFields())
	for i, f := range sc.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return cols
}

// scanState is one execution of one reference: its reader, shared by the
// DuckDB threads that call the function.
type scanState struct {
	fn  *scanFn
	src *scanSource
	mu  sync.Mutex
	rd  array.RecordReader
	// out[j] is the position in the reader's batches of output column j,
	// -1 for a column DuckDB asked for that is not the table's (a row id).
	out []int
	// DuckDB's converted schema of each column read: each column is
	// converted on its own (see flightdScanFunc)
	cs   []bindings.ArrowConvertedSchema
	used []bool // whether an output column is read from it
	done bool
}

func (s *scanState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rd != nil {
		s.rd.Release()
		s.rd = nil
		liveScans.Add(-1)
	}
	for i := range s.cs {
		bindings.DestroyArrowConvertedSchema(&s.cs[i])
	}
}

// next returns the scan's next batch, retained, or nil at its end.
func (s *scanState) next() (arrow.RecordBatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.rd == nil {
		return nil, nil
	}
	for s.rd.Next() {
		b := s.rd.RecordBatch()
		if b.NumRows() == 0 {
			continue
		}
		b.Retain()
		liveBatches.Add(1)
		return b, nil
	}
	s.done = true
	if err := s.rd.Err(); err != nil {
		return nil, err
	}
	if err := s.src.ctx.Err(); err != nil {
		return nil, context.Cause(s.src.ctx)
	}
	return nil, nil
}

// scanThreads is how many DuckDB threads read one scan at once.
func scanThreads() int {
	return max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
}

//export flightdScanInit
func flightdScanInit(p unsafe.Pointer) {
	info := bindings.InitInfo{Ptr: p}
	fn, _ := handleValue(bindings.InitGetExtraInfo(info)).(*scanFn)
	src, _ := handleValue(bindings.InitGetBindData(info)).(*scanSource)
	if fn == nil || src == nil {
		bindings.InitSetError(info, errNotAScan)
		return
	}
	n := int(bindings.InitGetColumnCount(info))
	var cols []int
	out := make([]int, n)
	for j := 0; j < n; j++ {
		c := int(bindings.InitGetColumnIndex(info, bindings.IdxT(j)))
		if c < 0 || c >= src.schema.NumFields() {
			out[j] = -1
			continue
		}
		out[j] = len(cols)
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		cols = []int{0} // rows without columns (count(*)): read the first
	}
	rd, err := src.open(cols)
	if err != nil {
		src.fail(err)
		bindings.InitSetError(info, err.Error())
		return
	}
	liveScans.Add(1)
	st := &scanState{fn: fn, src: src, rd: rd, out: out}
	for _, f := range rd.Schema().Fields() {
		sc := arrow.NewSchema([]arrow.Field{f}, nil)
		cs, ed := bindings.SchemaFromArrow(fn.conn, sc)
		if err := errorData(ed); err != nil {
			st.close()
			bindings.InitSetError(info, err.Error())
			return
		}
		st.cs = append(st.cs, cs)
		st.used = append(st.used, slices.Contains(out, len(st.used)))
	}
	bindings.InitSetInitData(info, newHandle(st), unsafe.Pointer(C.flightd_cb1(C.flightdScanDelete)))
	bindings.InitSetMaxThreads(info, bindings.IdxT(scanThreads()))
}

// open opens the reader of src's columns cols (in that order).
func (s *scanSource) open(cols []int) (array.RecordReader, error) {
	if afterSchema != nil {
		afterSchema()
	}
	r := s.ref
	if onScanOpen != nil {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = s.schema.Field(c).Name
		}
		onScanOpen(r, names)
	}
	if r.Whole() {
		rd, err := s.e.scan(s.ctx, r)
		if err != nil {
			return nil, lakeerr.Map(err)
		}
		if !arrowutil.SameColumns(rd.Schema(), s.schema) {
			rd.Release()
			return nil, lakeerr.Map(fmt.Errorf("%w (%s.%s)", lakestream.ErrSchemaChanged, r.DB, r.Table))
		}
		return arrowutil.NewProjectReader(rd, cols), nil
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = s.schema.Field(c).Name
	}
	filter := s.hints.FilterFor(s.schema)
	opts := lakestream.ScanOptions{Realtime: r.Realtime, ReadOptimized: r.RO, Columns: names, Filter: filter, Expect: s.schema, Unordered: true}
	if r.Snapshot > 0 {
		opts.At = &lakestream.Cut{Snapshot: r.Snapshot, Tag: r.Tag}
	}
	rd, err := s.e.ls.ScanWith(s.ctx, r.DB, r.Table, opts)
	if err != nil {
		return nil, lakeerr.Map(err)
	}
	return rd, nil
}

// scanLocal is one DuckDB thread's batch and how far it got, with the
// columns it reads exported once (Arrow C data interface) and shared by
// the slices handed to DuckDB.
type scanLocal struct {
	cur    arrow.RecordBatch
	off    int64
	shared []*C.flightd_shared
}

func (l *scanLocal) close() {
	for i, sh := range l.shared {
		if sh != nil {
			C.flightd_unref(sh) // the slices DuckDB holds keep theirs
			l.shared[i] = nil
		}
	}
	if l.cur != nil {
		l.cur.Release()
		l.cur = nil
		liveBatches.Add(-1)
	}
}

//export flightdScanLocalInit
func flightdScanLocalInit(p unsafe.Pointer) {
	info := bindings.InitInfo{Ptr: p}
	bindings.InitSetInitData(info, newHandle(&scanLocal{}), unsafe.Pointer(C.flightd_cb1(C.flightdScanDelete)))
}

// vectorSize is DuckDB's STANDARD_VECTOR_SIZE: the most rows of a chunk.
const vectorSize = 2048

// Each column is converted on its own (duckdb_data_chunk_from_arrow gives
// the ownership of the Arrow array only to the first vector of the chunk
// it makes, so the other columns' vectors would outlive their buffers once
// a later operator kept them and dropped the first). A column is exported
// once per batch; each chunk is a C slice of it (flightd_chunk), so that a
// chunk costs one C call per column and no Go allocation.
//
//export flightdScanFunc
func flightdScanFunc(p, outp unsafe.Pointer) {
	info := bindings.FunctionInfo{Ptr: p}
	out := bindings.DataChunk{Ptr: outp}
	st, _ := handleValue(bindings.FunctionGetInitData(info)).(*scanState)
	l, _ := handleValue(bindings.FunctionGetLocalInitData(info)).(*scanLocal)
	if st == nil || l == nil {
		bindings.FunctionSetError(info, errNotAScan)
		return
	}
	if l.cur == nil || l.off >= l.cur.NumRows() {
		l.close()
		b, err := st.next()
		if err != nil {
			st.src.fail(err)
			bindings.FunctionSetError(info, err.Error())
			return
		}
		if b == nil {
			bindings.DataChunkSetSize(out, 0)
			return
		}
		l.cur, l.off = b, 0
		if l.shared == nil {
			l.shared = make([]*C.flightd_shared, len(st.cs))
		}
		for c, used := range st.used {
			if used {
				sh := C.flightd_share()
				cdata.ExportArrowArray(b.Column(c), (*cdata.CArrowArray)(unsafe.Pointer(&sh.col)), nil)
				l.shared[c] = sh
			}
		}
	}
	n := min(vectorSize, l.cur.NumRows()-l.off)
	for c, used := range st.used {
		if !used {
			continue // read only to count rows
		}
		var chp unsafe.Pointer
		ed := bindings.ErrorData{Ptr: C.flightd_chunk(st.fn.conn.Ptr, st.cs[c].Ptr, l.shared[c], C.int64_t(l.off), C.int64_t(n), &chp)}
		if err := errorData(ed); err != nil {
			ch := bindings.DataChunk{Ptr: chp}
			bindings.DestroyDataChunk(&ch)
			bindings.FunctionSetError(info, "query: "+scanFunction+": "+err.Error())
			return
		}
		ch := bindings.DataChunk{Ptr: chp}
		v := bindings.DataChunkGetVector(ch, 0)
		for j, oc := range st.out {
			if oc == c {
				bindings.VectorReferenceVector(bindings.DataChunkGetVector(out, bindings.IdxT(j)), v)
			}
		}
		bindings.DestroyDataChunk(&ch)
	}
	l.off += n
	bindings.DataChunkSetSize(out, bindings.IdxT(n))
}
