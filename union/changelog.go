package union

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
)

// The columns a changelog puts before the table's columns.
const (
	// ChangeTypeColumn holds "+I", "-U", "+U" or "-D" (utf8).
	ChangeTypeColumn = "_change_type"
	// LogOffsetColumn is the log offset of the write that produced the row
	// (int64); the -U and +U of one update share it.
	LogOffsetColumn = "_log_offset"
	// BucketColumn is the bucket of the row (int32).
	BucketColumn = "_bucket"
	// CommitTimestampColumn is when the write was acknowledged (timestamp
	// in milliseconds, UTC; null for log entries that carry no write time).
	CommitTimestampColumn = "_commit_timestamp"
)

// ChangeTypes names the row kinds as the changelog spells them, indexed by
// KindInsert..KindDelete.
var ChangeTypes = [4]string{"+I", "-U", "+U", "-D"}

// changeTimeType is the type of CommitTimestampColumn.
var changeTimeType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// changelogChunkRows is the target size of a changelog output batch.
const changelogChunkRows = 64 * 1024

// ChangelogSchema returns the schema of the changelog of a table with
// schema: the change columns, then the table's columns.
func ChangelogSchema(schema *arrow.Schema) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ChangeTypeColumn, Type: arrow.BinaryTypes.String},
		{Name: LogOffsetColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: BucketColumn, Type: arrow.PrimitiveTypes.Int32},
		{Name: CommitTimestampColumn, Type: changeTimeType, Nullable: true},
	}
	return arrow.NewSchema(append(fields, schema.Fields()...), nil)
}

// ChangelogEntry is one log entry of a changelog range (or the part of it in
// the range): its rows and kinds, its bucket, the offset of its first row,
// and when it was written (zero: unknown).
type ChangelogEntry struct {
	LogBatch
	Bucket int32
	Offset int64
	Time   time.Time

	rows int64 // Rec's row count, kept once Rec is gone
}

// Changelog turns a range of log entries into the full changelog of the
// table. See the package documentation for the semantics.
//
// Use: NewChangelog with the range; for a primary-key table whose range
// starts at a lake snapshot, AddBefore with the snapshot's rows of the keys
// the range touches (Keys says how many there are; rows of other keys are
// skipped, so a caller may pass whole lake batches); then Reader. Release
// a Changelog that never got to Reader.
type Changelog struct {
	mem     memory.Allocator
	schema  *arrow.Schema
	entries []ChangelogEntry
	rows    int64    // log rows
	keys    keyIndex // nil for an append table
	hits    []arrow.RecordBatch
	nHits   int64
	from    map[int32]int64 // see EmitFrom
	order   SeqOrder        // see OrderVersions
}

// EmitFrom makes the changelog leave out the changes of rows below from[b]
// in each bucket b named (a bucket not named is emitted whole). Those rows
// still set their keys' state: a range that starts at a lake snapshot older
// than the changes a reader wants replays the rows in between.
func (c *Changelog) EmitFrom(from map[int32]int64) { c.from = from }

// OrderVersions orders the versions of a key by a table's sequence fields
// (nil: by arrival). A log row whose sequence values are smaller than its
// key's current version (the before-image, or an earlier log row, a
// retraction included) changes nothing and produces no change, as it
// would lose Paimon's merge.
func (c *Changelog) OrderVersions(o SeqOrder) { c.order = o }

// NewChangelog prepares the changelog of entries, which must be in bucket
// order and, per bucket, in offset order. pk holds the indexes of the
// primary-key columns in schema; empty means an append table (every row is
// +I). It takes ownership of the entries' batches, also on error.
//
// For a primary-key table it indexes the log rows' keys: a slot per
// distinct key (the key itself is kept until Reader, its current image for
// the reader's life) and 4 bytes a log row naming its key's slot.
func NewChangelog(mem memory.Allocator, schema *arrow.Schema, pk []int, entries []ChangelogEntry) (*Changelog, error) {
	c := &Changelog{mem: mem, schema: schema, entries: entries}
	for i, e := range entries {
		if err := checkColumns(schema, e.Rec); err != nil {
			c.Release()
			return nil, fmt.Errorf("union: changelog: log entry at offset %d of bucket %d: %w", e.Offset, e.Bucket, err)
		}
		if i > 0 {
			p := entries[i-1]
			if e.Bucket < p.Bucket || (e.Bucket == p.Bucket && e.Offset < p.Offset+p.Rec.NumRows()) {
				c.Release()
				return nil, fmt.Errorf("union: changelog: log entries out of order (bucket %d offset %d after bucket %d offset %d)", e.Bucket, e.Offset, p.Bucket, p.Offset)
			}
		}
		entries[i].rows = e.Rec.NumRows()
		c.rows += e.Rec.NumRows()
	}
	if len(pk) == 0 {
		return c, nil
	}
	c.keys = newKeyIndex(schema, pk, c.rows)
	for _, e := range entries {
		if err := c.keys.addLog(e.Rec); err != nil {
			c.Release()
			return nil, err
		}
	}
	return c, nil
}

// checkColumns checks that rec carries the columns of schema.
func checkColumns(schema *arrow.Schema, rec arrow.RecordBatch) error {
	if rec.NumCols() != int64(schema.NumFields()) {
		return fmt.Errorf("%d columns, the table has %d", rec.NumCols(), schema.NumFields())
	}
	for i, f := range schema.Fields() {
		if t := rec.Column(i).DataType(); !arrow.TypeEqual(t, f.Type) {
			return fmt.Errorf("column %q is %s, the table's is %s", f.Name, t, f.Type)
		}
	}
	return nil
}

// newKeyIndex picks the key representation, as PrimaryKey does.
func newKeyIndex(schema *arrow.Schema, pk []int, rows int64) keyIndex {
	hint := min(rows, 1<<20) // many rows may share few keys
	if len(pk) == 1 {
		switch schema.Field(pk[0]).Type.ID() {
		case arrow.INT64, arrow.TIMESTAMP, arrow.DATE64, arrow.INT32, arrow.DATE32:
			return &keyed[int64]{keysOf: int64Keys(pk[0]), slots: make(map[int64]int32, hint), rows: make([]int32, 0, rows)}
		}
	}
	return &keyed[string]{keysOf: func(rec arrow.RecordBatch) ([]string, error) { return rowKeys(rec, pk) }, slots: make(map[string]int32, hint), rows: make([]int32, 0, rows)}
}

// Keys returns the number of distinct keys the range touches (0 for an
// append table).
func (c *Changelog) Keys() int {
	if c.keys == nil {
		return 0
	}
	return c.keys.distinct()
}

// AddBefore offers rows of the lake snapshot the range starts at (merged:
// one row per key, current versions only). The rows of keys the range
// touches become those keys' before-images; the others are skipped. rec
// must carry the table's columns; it is not retained.
//
// With OrderVersions, rec may carry one more column, last: each row's
// stored kind (_VALUE_KIND, int8), so that a lake retraction, which
// hides its key, still beats log versions with smaller sequence values.
func (c *Changelog) AddBefore(ctx context.Context, rec arrow.RecordBatch) error {
	if c.keys == nil || rec.NumRows() == 0 {
		return nil
	}
	var retract []bool
	if n := c.schema.NumFields(); c.order != nil && int(rec.NumCols()) == n+1 {
		kinds, ok := rec.Column(n).(*array.Int8)
		if !ok {
			return fmt.Errorf("union: changelog: lake batch: its last column is %s, not the row kinds (int8)", rec.Column(n).DataType())
		}
		retract = make([]bool, kinds.Len())
		for i := range retract {
			retract[i] = isRetractKind(byte(kinds.Value(i)))
		}
		rec = array.NewRecordBatch(c.schema, rec.Columns()[:n], rec.NumRows())
		defer rec.Release()
	}
	if err := checkColumns(c.schema, rec); err != nil {
		return fmt.Errorf("union: changelog: lake batch: %w", err)
	}
	return c.addBefore(ctx, rec, retract)
}

// AddState offers key states an earlier range ended with (FinalState,
// kept by KeyStates): a stream's next round continues from them instead
// of replaying the log rows they sum up. They override the rows AddBefore
// gave for the same keys, so add them after those. st.Rec carries the
// table's columns; st.Kinds marks a key that ended absent with a
// retraction kind. st is not retained.
func (c *Changelog) AddState(ctx context.Context, st LogBatch) error {
	if c.keys == nil || st.Rec == nil || st.Rec.NumRows() == 0 {
		return nil
	}
	if err := checkColumns(c.schema, st.Rec); err != nil {
		return fmt.Errorf("union: changelog: state batch: %w", err)
	}
	retract := make([]bool, st.Rec.NumRows())
	for i := range retract {
		retract[i] = isRetract(st.Kinds, i)
	}
	return c.addBefore(ctx, st.Rec, retract)
}

func (c *Changelog) addBefore(ctx context.Context, rec arrow.RecordBatch, retract []bool) error {
	keep, n, err := c.keys.before(rec, c.rows+c.nHits, retract)
	if err != nil || n == 0 {
		return err
	}
	hit, err := filterBatch(compute.WithAllocator(ctx, c.mem), c.mem, rec, keep)
	if err != nil {
		return err
	}
	c.hits = append(c.hits, hit)
	c.nHits += int64(n)
	return nil
}

// ReleaseEntries releases the entries' batches (entries a Changelog was
// never given).
func ReleaseEntries(entries []ChangelogEntry) {
	for _, e := range entries {
		e.Rec.Release()
	}
}

// Release frees what the Changelog holds; after Reader it does nothing.
func (c *Changelog) Release() {
	for _, e := range c.entries {
		e.Rec.Release()
	}
	c.entries = nil
	releaseBatches(c.hits)
	c.hits = nil
	c.keys = nil
}

// Reader returns the changelog. It takes over everything c holds (c must
// not be used again) and releases it when the reader is released.
//
// A primary-key changelog copies the range and the before-images into one
// batch, from which output batches of about 64K rows are taken; the
// per-key state is 8 bytes a distinct key, plus 4 a log row. An append
// changelog passes the log batches through.
func (c *Changelog) Reader(ctx context.Context) (array.RecordReader, error) {
	r := &changelogReader{ctx: ctx, mem: c.mem, schema: ChangelogSchema(c.schema), table: c.schema, entries: c.entries, keys: c.keys, from: c.from}
	order := c.order
	r.refs.Store(1)
	c.entries, c.keys = nil, nil
	if r.keys != nil {
		r.keys.done()
	}
	hits := c.hits
	c.hits = nil
	if r.keys == nil || c.rows == 0 {
		releaseBatches(hits)
		return r, nil
	}
	parts := make([]arrow.RecordBatch, 0, len(r.entries)+len(hits))
	for _, e := range r.entries {
		parts = append(parts, e.Rec)
	}
	parts = append(parts, hits...)
	src, err := arrowutil.ConcatRecords(parts, c.mem)
	releaseBatches(hits)
	if err != nil {
		r.Release()
		return nil, fmt.Errorf("union: changelog: %w", err)
	}
	r.src = array.NewRecordBatch(c.schema, src.Columns(), src.NumRows())
	src.Release()
	if order != nil {
		if r.seqCmp, err = order.Across(r.src, r.src); err != nil {
			r.Release()
			return nil, fmt.Errorf("union: changelog: %w", err)
		}
	}
	r.wins = r.keys.images() // before-images are the first versions
	// The rows now live in src; keep the entries only for their metadata.
	for i := range r.entries {
		r.entries[i].Rec.Release()
		r.entries[i].Rec = nil
	}
	return r, nil
}

// keyIndex is the per-key state of a primary-key changelog: a slot per
// distinct key holding its current image, and the slot of every log row.
type keyIndex interface {
	// addLog registers the keys of the next log batch (new keys absent
	// before the range).
	addLog(rec arrow.RecordBatch) error
	distinct() int
	// before marks the rows of rec whose key the range touches and makes
	// them the keys' images, numbered from base in row order; a row that
	// retract marks (nil: none) leaves its key absent, a tombstone.
	before(rec arrow.RecordBatch, base int64, retract []bool) (keep []bool, n int, err error)
	// done drops the key lookup; only apply works afterwards.
	done()
	// apply sets the image of log row row's key to img (-1: absent) and
	// returns the image it had.
	apply(row int64, img int64) int64
	// slot is the slot of log row row's key.
	slot(row int64) int32
	// images returns every slot's image, or its tombstone's row.
	images() []int64
	// current returns every slot's image now (-1: absent); not a copy.
	current() []int64
}

type keyed[K comparable] struct {
	keysOf func(arrow.RecordBatch) ([]K, error)
	slots  map[K]int32     // distinct key -> slot; nil after done
	rows   []int32         // the slot of every log row, in order
	state  []int64         // slot -> the key's current image (a row of src), -1 absent
	tombs  map[int32]int64 // slot -> the row of its before-image retraction
}

func (k *keyed[K]) addLog(rec arrow.RecordBatch) error {
	keys, err := k.keysOf(rec)
	if err != nil {
		return err
	}
	for _, key := range keys {
		s, ok := k.slots[key]
		if !ok {
			s = int32(len(k.state))
			k.slots[key] = s
			k.state = append(k.state, -1)
		}
		k.rows = append(k.rows, s)
	}
	return nil
}

func (k *keyed[K]) distinct() int { return len(k.state) }

func (k *keyed[K]) before(rec arrow.RecordBatch, base int64, retract []bool) ([]bool, int, error) {
	keys, err := k.keysOf(rec)
	if err != nil {
		return nil, 0, err
	}
	keep := make([]bool, len(keys))
	n := 0
	for i, key := range keys {
		if s, ok := k.slots[key]; ok {
			keep[i] = true
			k.state[s] = base + int64(n)
			delete(k.tombs, s) // a later before-image replaces an earlier one
			if retract != nil && retract[i] {
				if k.tombs == nil {
					k.tombs = map[int32]int64{}
				}
				k.tombs[s] = k.state[s]
				k.state[s] = -1
			}
			n++
		}
	}
	return keep, n, nil
}

func (k *keyed[K]) done() { k.slots = nil }

func (k *keyed[K]) slot(row int64) int32 { return k.rows[row] }

func (k *keyed[K]) current() []int64 { return k.state }

func (k *keyed[K]) images() []int64 {
	out := slices.Clone(k.state)
	for s, row := range k.tombs {
		out[s] = row
	}
	return out
}

func (k *keyed[K]) apply(row int64, img int64) int64 {
	s := k.rows[row]
	old := k.state[s]
	k.state[s] = img
	return old
}

// changelogReader produces the changelog batch by batch.
type changelogReader struct {
	refs    atomic.Int64
	ctx     context.Context
	mem     memory.Allocator
	schema  *arrow.Schema // output
	table   *arrow.Schema
	entries []ChangelogEntry // Rec is nil once copied into src (primary-key tables)
	keys    keyIndex
	src     arrow.RecordBatch  // primary-key tables: log rows, then before-images
	from    map[int32]int64    // Changelog.EmitFrom
	seqCmp  func(a, b int) int // Changelog.OrderVersions: rows of src by sequence values
	wins    []int64            // per slot the src row of the key's version, retractions included (-1: none)

	e   int   // next entry
	row int64 // next row of entry e
	g   int64 // global log row of (e, row)
	cur arrow.RecordBatch
	err error

	// the events of the batch being built
	kinds   []byte
	offsets []int64
	buckets []int32
	times   []int64
	known   []bool
	idx     []int64
}

func (r *changelogReader) Retain() { r.refs.Add(1) }

func (r *changelogReader) Release() {
	n := r.refs.Add(-1)
	if n < 0 {
		panic("union: changelog reader released too often")
	}
	if n > 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for _, e := range r.entries {
		if e.Rec != nil {
			e.Rec.Release()
		}
	}
	r.entries = nil
	if r.src != nil {
		r.src.Release()
		r.src = nil
	}
	r.keys = nil
}

func (r *changelogReader) Schema() *arrow.Schema { return r.schema }

func (r *changelogReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated spelling of RecordBatch.
func (r *changelogReader) Record() arrow.RecordBatch { return r.cur }

func (r *changelogReader) Err() error { return r.err }

func (r *changelogReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || r.e >= len(r.entries) {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return false
	}
	var err error
	if r.keys == nil {
		r.cur, err = r.nextAppend()
	} else {
		r.cur, err = r.nextPK()
	}
	if err != nil {
		r.err = err
		return false
	}
	return r.cur != nil
}

// nextAppend passes the next entry through: every row is +I.
func (r *changelogReader) nextAppend() (arrow.RecordBatch, error) {
	for r.e < len(r.entries) {
		e := r.entries[r.e]
		r.e++
		n := e.Rec.NumRows()
		lo := int64(0)
		if f, ok := r.from[e.Bucket]; ok {
			lo = min(max(f-e.Offset, 0), n)
		}
		if n-lo == 0 {
			continue
		}
		r.resetEvents()
		for i := lo; i < n; i++ {
			r.event(KindInsert, e, i, -1)
		}
		rec := e.Rec
		if lo > 0 {
			rec = e.Rec.NewSlice(lo, n)
			defer rec.Release()
		}
		meta := r.metaColumns()
		cols := append(meta, rec.Columns()...)
		out := array.NewRecordBatch(r.schema, cols, n-lo)
		for _, c := range meta {
			c.Release()
		}
		return out, nil
	}
	return nil, nil
}

// nextPK runs the per-key state machine until a batch is full.
func (r *changelogReader) nextPK() (arrow.RecordBatch, error) {
	r.resetEvents()
	for r.e < len(r.entries) && len(r.idx) < changelogChunkRows {
		e := r.entries[r.e]
		from, skip := r.from[e.Bucket]
		for ; r.row < e.rows && len(r.idx) < changelogChunkRows; r.row, r.g = r.row+1, r.g+1 {
			s := r.keys.slot(r.g)
			if w := r.wins[s]; r.seqCmp != nil && w >= 0 && r.seqCmp(int(r.g), int(w)) < 0 {
				continue // older than the key's version: it loses the merge
			}
			r.wins[s] = r.g
			upsert := !isRetract(e.Kinds, int(r.row))
			img := int64(-1)
			if upsert {
				img = r.g
			}
			old := r.keys.apply(r.g, img)
			switch {
			case skip && e.Offset+r.row < from:
				// replayed: it only sets the key's state
			case upsert && old < 0:
				r.event(KindInsert, e, r.row, r.g)
			case upsert:
				r.event(KindUpdateBefore, e, r.row, old)
				r.event(KindUpdateAfter, e, r.row, r.g)
			case old >= 0:
				r.event(KindDelete, e, r.row, old)
			}
		}
		if r.row >= e.rows {
			r.e++
			r.row = 0
		}
	}
	if len(r.idx) == 0 {
		return nil, nil
	}
	data, err := r.take()
	if err != nil {
		return nil, err
	}
	defer data.Release()
	meta := r.metaColumns()
	cols := append(meta, data.Columns()...)
	out := array.NewRecordBatch(r.schema, cols, int64(len(r.idx)))
	for _, c := range meta {
		c.Release()
	}
	return out, nil
}

// take gathers the events' rows from src: a slice when they are
// consecutive (inserts), else a Take.
func (r *changelogReader) take() (arrow.RecordBatch, error) {
	first := r.idx[0]
	consecutive := true
	for i, x := range r.idx {
		if x != first+int64(i) {
			consecutive = false
			break
		}
	}
	if consecutive {
		return r.src.NewSlice(first, first+int64(len(r.idx))), nil
	}
	return takeRows(r.ctx, r.mem, r.src, r.idx)
}

// takeRows gathers rows of rec.
func takeRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, rows []int64) (arrow.RecordBatch, error) {
	ib := array.NewInt64Builder(mem)
	ib.AppendValues(rows, nil)
	idx := ib.NewArray()
	ib.Release()
	defer idx.Release()
	res, err := compute.Take(compute.WithAllocator(ctx, mem), *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(idx))
	if err != nil {
		return nil, fmt.Errorf("union: gather rows: %w", err)
	}
	return res.(*compute.RecordDatum).Value, nil
}

func (r *changelogReader) resetEvents() {
	r.kinds, r.offsets, r.buckets, r.times, r.known, r.idx = r.kinds[:0], r.offsets[:0], r.buckets[:0], r.times[:0], r.known[:0], r.idx[:0]
}

// event records an output row of kind for row i of entry e, showing src row img.
func (r *changelogReader) event(kind byte, e ChangelogEntry, i, img int64) {
	r.kinds = append(r.kinds, kind)
	r.offsets = append(r.offsets, e.Offset+i)
	r.buckets = append(r.buckets, e.Bucket)
	if e.Time.IsZero() {
		r.times = append(r.times, 0)
		r.known = append(r.known, false)
	} else {
		r.times = append(r.times, e.Time.UnixMilli())
		r.known = append(r.known, true)
	}
	r.idx = append(r.idx, img)
}

// metaColumns builds the change columns of the recorded events.
func (r *changelogReader) metaColumns() []arrow.Array {
	return ChangeColumns(r.mem, r.kinds, r.offsets, r.buckets, r.times, r.known)
}

// ChangeColumns builds the columns a changelog puts before the table's
// (ChangelogSchema): per row its kind (KindInsert..KindDelete), log offset,
// bucket, and write time in milliseconds where known (else null). The
// caller releases them.
func ChangeColumns(mem memory.Allocator, kinds []byte, offsets []int64, buckets []int32, times []int64, known []bool) []arrow.Array {
	n := len(kinds)
	// Every change type is two bytes: build the utf8 buffers directly.
	offs := memory.NewResizableBuffer(mem)
	offs.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	data := memory.NewResizableBuffer(mem)
	data.Resize(2 * n)
	ov, dv := arrow.Int32Traits.CastFromBytes(offs.Bytes()), data.Bytes()
	for i, k := range kinds {
		ov[i] = int32(2 * i)
		copy(dv[2*i:], ChangeTypes[k])
	}
	ov[n] = int32(2 * n)
	kd := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, offs, data}, nil, 0, 0)
	offs.Release()
	data.Release()
	kindCol := array.MakeFromData(kd)
	kd.Release()
	ob := array.NewInt64Builder(mem)
	defer ob.Release()
	ob.AppendValues(offsets, nil)
	bb := array.NewInt32Builder(mem)
	defer bb.Release()
	bb.AppendValues(buckets, nil)
	tb := array.NewTimestampBuilder(mem, changeTimeType)
	defer tb.Release()
	tb.Reserve(n)
	for i, t := range times {
		if known[i] {
			tb.UnsafeAppend(arrow.Timestamp(t))
		} else {
			tb.UnsafeAppendBoolToBitmap(false)
		}
	}
	return []arrow.Array{kindCol, ob.NewArray(), bb.NewArray(), tb.NewArray()}
}

// FinalState returns, for a primary-key changelog reader read to its end
// (and not yet released), the state at the end of the range of every key
// the range touched: a row with its current image, or, for a key that
// ends absent, the row that removed it (for a table with sequence fields
// the winning retraction, which still beats older versions), with Kinds
// KindInsert or KindDelete. Rec is nil when the range touched no key.
func FinalState(ctx context.Context, r array.RecordReader) (LogBatch, error) {
	cr, ok := r.(*changelogReader)
	if !ok || cr.keys == nil || cr.src == nil {
		return LogBatch{}, nil
	}
	if cr.e < len(cr.entries) {
		return LogBatch{}, fmt.Errorf("union: changelog: final state asked before the end of the range")
	}
	cur := cr.keys.current()
	rows := make([]int64, 0, len(cur))
	kinds := make([]byte, 0, len(cur))
	for s, img := range cur {
		switch {
		case img >= 0:
			rows, kinds = append(rows, img), append(kinds, KindInsert)
		case cr.wins[s] >= 0:
			rows, kinds = append(rows, cr.wins[s]), append(kinds, KindDelete)
		}
	}
	if len(rows) == 0 {
		return LogBatch{}, nil
	}
	rec, err := takeRows(ctx, cr.mem, cr.src, rows)
	if err != nil {
		return LogBatch{}, err
	}
	return LogBatch{Rec: rec, Kinds: kinds}, nil
}
