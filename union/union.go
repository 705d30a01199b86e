package union

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
)

// Row kinds as Paimon writes them in _VALUE_KIND.
const (
	KindInsert       byte = 0
	KindUpdateBefore byte = 1
	KindUpdateAfter  byte = 2
	KindDelete       byte = 3
)

// LogBatch is one decoded log entry (or the part of it at or above the
// bucket's lake offset). Kinds is nil when every row is an upsert.
type LogBatch struct {
	Rec   arrow.RecordBatch
	Kinds []byte
}

func isRetractKind(k byte) bool { return k == KindUpdateBefore || k == KindDelete }

func isRetract(kinds []byte, i int) bool {
	return kinds != nil && isRetractKind(kinds[i])
}

// Append returns lake rows followed by log rows. lake may be nil. Append
// tables hold inserts only (the writer refuses anything else), so the kinds
// are not consulted. Every batch, of the log and of the lake, must carry
// schema's columns (their count and types): one that does not is an error
// (here for the log, from the reader for the lake), never a panic.
func Append(schema *arrow.Schema, lake array.RecordReader, log []LogBatch) (array.RecordReader, error) {
	if err := checkLog(schema, log); err != nil {
		releaseAll(lake, log)
		return nil, err
	}
	batches := make([]arrow.RecordBatch, len(log))
	for i, b := range log {
		batches[i] = b.Rec
	}
	r := newReader(schema, lake, batches)
	releaseBatches(batches)
	return r, nil
}

// checkLog checks that every log batch carries schema's columns.
func checkLog(schema *arrow.Schema, log []LogBatch) error {
	for i, b := range log {
		if err := checkColumns(schema, b.Rec); err != nil {
			return fmt.Errorf("union: log batch %d: %w", i, err)
		}
	}
	return nil
}

// PrimaryKey returns the merged view of a primary-key table: the newest
// version of every key, deleted keys dropped. pk holds the indexes of the
// primary-key columns in schema. log must be in offset order per bucket.
// Batches must carry schema's columns, as for Append.
func PrimaryKey(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, pk []int, lake array.RecordReader, log []LogBatch) (array.RecordReader, error) {
	m, err := MergeLog(ctx, mem, schema, pk, log)
	if err != nil {
		if lake != nil {
			lake.Release()
		}
		return nil, err
	}
	r := m.reader(lake)
	r.filter = m.filter
	return r, nil
}

// LogMerge is the log side of a primary-key union read, prepared before the
// lake is read, so that the lake scan can drop the rows the log replaces
// on its own workers (LakeFilter) instead of on the reader's goroutine.
type LogMerge struct {
	schema *arrow.Schema
	log    []arrow.RecordBatch // the surviving log rows, in log order
	filter func(arrow.RecordBatch) (arrow.RecordBatch, error)
	seq    *seqMerge      // nil: the log's newest version of a key wins
	keys   func() []int64 // the log's keys, sorted, when the key is one integer-like column (no seq)
	intKey bool           // keys is set (possibly empty)
}

// SeqOrder compares row a of x with row b of y (batches that carry a
// table's sequence fields by name) by their sequence values: negative when
// a is older (lake.SeqOrder).
type SeqOrder interface {
	Across(x, y arrow.RecordBatch) (func(a, b int) int, error)
}

// Versions makes a union read order the versions of a key by a table's
// sequence fields (Paimon's sequence.field) instead of by arrival alone.
type Versions struct {
	// Order compares versions. Equal values go to the later arrival: the
	// log's later row, and the log over the lake.
	Order SeqOrder
	// LakeKinds says that lake batches carry one more column, last: the
	// stored kind of each row (the lake scan keeps retractions, Paimon's
	// _VALUE_KIND as int8). A lake retraction whose sequence values beat
	// the log's versions of its key hides the key, as it does in the lake
	// once those versions are tiered. The column is dropped from the
	// output.
	LakeKinds bool
}

// MergeLog merges log as PrimaryKey does, taking over its batches.
func MergeLog(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, pk []int, log []LogBatch) (*LogMerge, error) {
	return MergeLogVersions(ctx, mem, schema, pk, log, nil)
}

// MergeLogVersions is MergeLog with versions ordered by v (nil: by
// arrival). With v, a lake row replaces the log's versions of its key when
// its sequence values are larger, so the log rows are settled only once
// the lake has been read through LakeFilter (or the reader).
func MergeLogVersions(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, pk []int, log []LogBatch, v *Versions) (*LogMerge, error) {
	if err := checkLog(schema, log); err != nil {
		releaseAll(nil, log)
		return nil, err
	}
	var out []arrow.RecordBatch
	var filter func(arrow.RecordBatch) (arrow.RecordBatch, error)
	var sm *seqMerge
	var err error
	if v != nil {
		if key, ok := int64Key(schema, pk); ok {
			sm, err = newSeqMerge(ctx, mem, schema, log, v, int64Keys(key))
		} else {
			sm, err = newSeqMerge(ctx, mem, schema, log, v, func(rec arrow.RecordBatch) ([]string, error) { return rowKeys(rec, pk) })
		}
		if err != nil {
			return nil, err
		}
		return &LogMerge{schema: schema, filter: sm.lakeFilter, seq: sm}, nil
	}
	var keys func() []int64
	key, intKey := int64Key(schema, pk)
	if intKey {
		out, keys, filter, err = mergeLog(ctx, mem, log, int64Keys(key))
	} else {
		out, _, filter, err = mergeLog(ctx, mem, log, func(rec arrow.RecordBatch) ([]string, error) {
			return rowKeys(rec, pk)
		})
	}
	if err != nil {
		return nil, err
	}
	return &LogMerge{schema: schema, log: out, filter: filter, keys: keys, intKey: intKey}, nil
}

// Keys returns the keys the log holds a version of, sorted and distinct,
// when the key is one integer-like column and versions go by arrival (ok
// false otherwise): the lake rows to drop, which a lake scan can find
// without decoding the key column (lake.ScanTuning.ExcludeKeys) instead of
// running LakeFilter. The slice is the merge's; do not change it.
func (m *LogMerge) Keys() (keys []int64, ok bool) {
	if m.keys == nil {
		return nil, m.intKey
	}
	return m.keys(), m.intKey
}

// Project keeps only the columns idx (indexes into the merge's schema) of
// the surviving log rows, which then carry schema: for a read whose lake
// side excludes rows by key (Keys) and so need not read the key column.
// It is for merges without sequence fields, before Reader.
func (m *LogMerge) Project(schema *arrow.Schema, idx []int) {
	for i, rec := range m.log {
		m.log[i] = arrowutil.ProjectRecord(rec, schema, idx)
		rec.Release()
	}
	m.schema = schema
}

// LakeFilter returns the function that keeps the rows of a lake batch no
// log row replaces (a new reference; nil when none are kept), or nil when
// the log replaces nothing. It is safe for concurrent use.
func (m *LogMerge) LakeFilter() func(arrow.RecordBatch) (arrow.RecordBatch, error) {
	return m.filter
}

// Reader returns lake's rows, which LakeFilter has already filtered, then
// the surviving log rows. It takes over lake and the merge's batches.
func (m *LogMerge) Reader(lake array.RecordReader) array.RecordReader {
	return m.reader(lake)
}

func (m *LogMerge) reader(lake array.RecordReader) *reader {
	r := newReader(m.schema, lake, m.log)
	releaseBatches(m.log) // newReader retained them
	m.log = nil
	if m.seq != nil {
		r.seq, m.seq = m.seq, nil
	}
	return r
}

// Release frees the merge's batches when Reader is not called.
func (m *LogMerge) Release() {
	releaseBatches(m.log)
	m.log = nil
	if m.seq != nil {
		m.seq.release()
		m.seq = nil
	}
}

// int64Key reports the key column when the key is one integer-like column.
func int64Key(schema *arrow.Schema, pk []int) (int, bool) {
	if len(pk) == 1 {
		switch schema.Field(pk[0]).Type.ID() {
		case arrow.INT64, arrow.TIMESTAMP, arrow.DATE64, arrow.INT32, arrow.DATE32:
			return pk[0], true
		}
	}
	return 0, false
}

// int64Keys reads a single non-null integer-like key column as int64s,
// without encoding.
func int64Keys(col int) func(arrow.RecordBatch) ([]int64, error) {
	return func(rec arrow.RecordBatch) ([]int64, error) {
		keys, err := arrowutil.Int64Values(rec.Column(col))
		if err != nil {
			return nil, fmt.Errorf("union: key column %q has %w", rec.ColumnName(col), err)
		}
		return keys, nil
	}
}

// mergeLog keeps the newest row of every key in log (retractions dropped)
// and returns them with the filter of lake rows (nil: none to drop). It
// takes over log's batches.
func mergeLog[K cmp.Ordered](ctx context.Context, mem memory.Allocator, log []LogBatch, keysOf func(arrow.RecordBatch) ([]K, error)) ([]arrow.RecordBatch, func() []K, func(arrow.RecordBatch) (arrow.RecordBatch, error), error) {
	type pos struct{ batch, row int32 }
	rows := 0
	for _, b := range log {
		rows += int(b.Rec.NumRows())
	}
	newest := make(map[K]pos, rows) // sized once: growing it was half the merge of 100k rows
	logKeys := make([][]K, len(log))
	for bi, b := range log {
		keys, err := keysOf(b.Rec)
		if err != nil {
			releaseAll(nil, log)
			return nil, nil, nil, err
		}
		logKeys[bi] = keys
		for ri, k := range keys {
			newest[k] = pos{int32(bi), int32(ri)}
		}
	}
	// The log's surviving rows, in log order.
	var out []arrow.RecordBatch
	ectx := compute.WithAllocator(ctx, mem)
	for bi, b := range log {
		keys := logKeys[bi]
		keep := make([]bool, len(keys))
		all := true
		for ri, k := range keys {
			p := newest[k]
			keep[ri] = int(p.batch) == bi && int(p.row) == ri && !isRetract(b.Kinds, ri)
			all = all && keep[ri]
		}
		logKeys[bi] = nil
		if all {
			b.Rec.Retain()
			out = append(out, b.Rec)
			continue
		}
		filtered, err := filterBatch(ectx, mem, b.Rec, keep)
		if err != nil {
			releaseAll(nil, log)
			releaseBatches(out)
			return nil, nil, nil, err
		}
		if filtered != nil {
			out = append(out, filtered)
		}
	}
	for _, b := range log {
		b.Rec.Release()
	}
	// The sorted keys are made on first use: a read that excludes the
	// lake's rows by each bucket's keys (lakestream) needs neither them nor
	// the filter, and sorting 100k keys was a twentieth of such a read.
	var once sync.Once
	var inLog []K
	sorted := func() []K {
		once.Do(func() {
			inLog = make([]K, 0, len(newest))
			for k := range newest {
				inLog = append(inLog, k)
			}
			slices.Sort(inLog)
			newest = nil
		})
		return inLog
	}
	var filter func(arrow.RecordBatch) (arrow.RecordBatch, error)
	if len(newest) > 0 {
		filter = func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			keys, err := keysOf(rec)
			if err != nil {
				return nil, err
			}
			return filterBatch(ectx, mem, rec, notIn(keys, sorted()))
		}
	}
	return out, sorted, filter, nil
}

// notIn reports for each of keys whether it is missing from the sorted
// set. A lake batch of a primary-key bucket comes in key order, so the
// two are walked side by side (a map lookup per lake row was a tenth of a
// t$rt scan's CPU); keys out of order are searched one by one.
func notIn[K cmp.Ordered](keys, set []K) []bool {
	keep := make([]bool, len(keys))
	if len(keys) == 0 {
		return keep
	}
	j, _ := slices.BinarySearch(set, keys[0])
	for i, k := range keys {
		if i > 0 && k < keys[i-1] {
			for ; i < len(keys); i++ { // out of order: search each
				_, found := slices.BinarySearch(set, keys[i])
				keep[i] = !found
			}
			return keep
		}
		for j < len(set) && set[j] < k {
			j++
		}
		keep[i] = j == len(set) || set[j] != k
	}
	return keep
}

// filterBatch returns the rows of rec where keep is true: rec itself
// (retained) when all are kept, nil when none are.
func filterBatch(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
	res, err := arrowutil.FilterRecord(ctx, mem, rec, keep)
	if err != nil {
		return nil, fmt.Errorf("union: filter batch: %w", err)
	}
	return res, nil
}

func releaseAll(lake array.RecordReader, log []LogBatch) {
	if lake != nil {
		lake.Release()
	}
	for _, b := range log {
		b.Rec.Release()
	}
}

func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// reader streams the lake reader's batches (through filter, when set) and
// then the prepared log batches. Every batch it hands out carries schema.
type reader struct {
	refs   atomic.Int64
	schema *arrow.Schema
	lake   array.RecordReader
	filter func(arrow.RecordBatch) (arrow.RecordBatch, error)
	log    []arrow.RecordBatch
	seq    *seqMerge // settles the log once the lake is read (MergeLogVersions)
	cur    arrow.RecordBatch
	err    error
}

func newReader(schema *arrow.Schema, lake array.RecordReader, log []arrow.RecordBatch) *reader {
	for _, b := range log {
		b.Retain()
	}
	r := &reader{schema: schema, lake: lake, log: log}
	r.refs.Store(1)
	return r
}

func (r *reader) Retain() { r.refs.Add(1) }

func (r *reader) Release() {
	n := r.refs.Add(-1)
	if n < 0 {
		panic("union: reader released too often")
	}
	if n > 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.lake != nil {
		r.lake.Release()
		r.lake = nil
	}
	releaseBatches(r.log)
	r.log = nil
	if r.seq != nil {
		r.seq.release()
		r.seq = nil
	}
}

func (r *reader) Schema() *arrow.Schema { return r.schema }

func (r *reader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	for r.lake != nil {
		if !r.lake.Next() {
			if err := r.lake.Err(); err != nil {
				r.err = err
				return false
			}
			r.lake.Release()
			r.lake = nil
			break
		}
		rec := r.lake.RecordBatch()
		if r.filter != nil {
			f, err := r.filter(rec)
			if err != nil {
				r.err = err
				return false
			}
			if f == nil {
				continue
			}
			if err := checkColumns(r.schema, f); err != nil {
				f.Release()
				r.err = fmt.Errorf("union: lake batch: %w", err)
				return false
			}
			r.cur = r.withSchema(f)
			f.Release()
			return true
		}
		if err := checkColumns(r.schema, rec); err != nil {
			r.err = fmt.Errorf("union: lake batch: %w", err)
			return false
		}
		r.cur = r.withSchema(rec)
		return true
	}
	if r.seq != nil {
		log, err := r.seq.settle()
		r.seq.release()
		r.seq = nil
		if err != nil {
			r.err = err
			return false
		}
		r.log = log
	}
	for len(r.log) > 0 {
		b := r.log[0]
		r.log = r.log[1:]
		r.cur = r.withSchema(b)
		b.Release()
		if r.cur.NumRows() == 0 {
			r.cur.Release()
			r.cur = nil
			continue
		}
		return true
	}
	return false
}

// withSchema returns a new reference to rec's columns under the reader's
// schema (field metadata may differ between the lake and the log).
func (r *reader) withSchema(rec arrow.RecordBatch) arrow.RecordBatch {
	return array.NewRecordBatch(r.schema, rec.Columns(), rec.NumRows())
}

func (r *reader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated spelling of RecordBatch.
func (r *reader) Record() arrow.RecordBatch { return r.cur }

func (r *reader) Err() error { return r.err }
