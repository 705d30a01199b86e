package lake

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/google/uuid"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// RowKind is Paimon's row kind byte.
type RowKind int8

// Row kinds.
const (
	Insert       RowKind = 0
	UpdateBefore RowKind = 1
	UpdateAfter  RowKind = 2
	Delete       RowKind = 3
)

func (k RowKind) isRetract() bool { return k == UpdateBefore || k == Delete }

// Buckets returns the fixed bucket of every row: Java's DefaultBucketFunction over the BinaryRow of the
// bucket key. Tables without fixed buckets (bucket <= 0) put every row in bucket 0.
func (t *Table) Buckets(rec arrow.RecordBatch) ([]int32, error) {
	n := int(rec.NumRows())
	out := make([]int32, n)
	nb := t.schema.NumBuckets()
	if nb <= 0 {
		return out, nil
	}
	keys := t.schema.BucketKeys()
	if len(keys) == 0 {
		return nil, fmt.Errorf("lake: %s: fixed-bucket table needs option bucket-key or a primary key", t.FullName())
	}
	idx, types, err := t.columnsOf(rec, keys)
	if err != nil {
		return nil, err
	}
	if len(idx) == 1 && bucketsOfIntKey(rec.Column(idx[0]), types[0], nb, out) {
		return out, nil
	}
	vals := make([]any, len(idx))
	for r := 0; r < n; r++ {
		for i, c := range idx {
			vals[i] = valueAt(rec.Column(c), r, types[i])
		}
		out[r] = manifest.BucketOf(manifest.HashBinaryRow(manifest.EncodeBinaryRow(types, vals)), nb)
	}
	return out, nil
}

// bucketsOfIntKey is Buckets for a key of one BIGINT or INT column without
// nulls, without building a row per value: an arity-1 BinaryRow is 8 bytes
// of header (row kind 0, no null bit) then the value's 8-byte slot, the
// integer little-endian (an INT's upper 4 bytes zero). It reports false for
// any other key.
func bucketsOfIntKey(col arrow.Array, t paimontype.DataType, nb int, out []int32) bool {
	if col.NullN() > 0 {
		return false
	}
	var row [16]byte
	switch c := col.(type) {
	case *array.Int64:
		if t.Root != paimontype.TypeBigInt {
			return false
		}
		for r := range out {
			binary.LittleEndian.PutUint64(row[8:], uint64(c.Value(r)))
			out[r] = manifest.BucketOf(manifest.HashBinaryRow(row[:]), nb)
		}
	case *array.Int32:
		if t.Root != paimontype.TypeInt {
			return false
		}
		for r := range out {
			binary.LittleEndian.PutUint32(row[8:], uint32(c.Value(r)))
			out[r] = manifest.BucketOf(manifest.HashBinaryRow(row[:]), nb)
		}
	default:
		return false
	}
	return true
}

// columnsOf finds named columns in rec by name and returns their positions and Paimon types.
func (t *Table) columnsOf(rec arrow.RecordBatch, names []string) ([]int, []paimontype.DataType, error) {
	idx := make([]int, len(names))
	types := make([]paimontype.DataType, len(names))
	for i, n := range names {
		fi := t.schema.FieldIndex(n)
		if fi < 0 {
			return nil, nil, fmt.Errorf("lake: %s: column %q not in table", t.FullName(), n)
		}
		types[i] = t.schema.Fields[fi].Type
		ri := rec.Schema().FieldIndices(n)
		if len(ri) == 0 {
			return nil, nil, fmt.Errorf("lake: %s: record lacks column %q", t.FullName(), n)
		}
		idx[i] = ri[0]
	}
	return idx, types, nil
}

// Write buffers rows for one commit. It is not safe for concurrent use. Rows are kept in memory until
// Commit, which writes the data files, the manifests and the snapshot, or until Flush: for an append
// table Flush encodes them into data files that Commit then publishes with the rest, for a
// primary-key table it spills them as sorted runs that Commit merges into the bucket's file
// (sortedrun.go).
type Write struct {
	t        *Table
	mem      memory.Allocator
	groups   map[string]*writeGroup
	buffered int64 // rows held in memory (not yet encoded)
	// bufferedBytes is the memory of those rows (BufferedBytes).
	bufferedBytes int64
	spillDir      string       // where a primary-key write's sorted runs go (SetSpillDir)
	spills        []*spillJob  // running spill jobs, oldest first
	spillErr      error        // the first failed spill job's error
	base          *writeBase   // a streamed primary-key write's base snapshot
	dataPF        *pathFactory // names the data files of this write (Flush and Commit)
	closed        bool
}

type writeGroup struct {
	partition []byte // serialized BinaryRow
	partVals  []any
	bucket    int32
	recs      []arrow.RecordBatch
	kinds     []RowKind
	seqs      []int64
	// Files Flush wrote for this group, in row order, with sequence numbers
	// counted from 0 at the group's first row (Commit moves them above the
	// bucket's newest).
	flushed []flushedFile
	// Sorted runs Flush spilled for this group (primary-key tables), oldest
	// first; Commit merges them with the buffered rows (sortedrun.go).
	runs []*sortedRun
	// The spill jobs' state of a streamed group (sortedrun.go), used by one
	// job at a time in flush order (placed), then by Commit.
	placed   chan struct{} // closed when the latest job placed its run
	sink     *pkFileSink   // the data file its runs went into, until Commit
	shiftSet bool          // shift and firstSeq are set (by the first run)
	shift    int64         // added to its sequence numbers
	firstSeq int64         // the first run's smallest sequence number
	failed   bool          // a job failed: the others skip the group
}

// flushedRows is how many of the group's rows Flush wrote to files.
func (g *writeGroup) flushedRows() int64 {
	var n int64
	for _, f := range g.flushed {
		n += f.meta.RowCount
	}
	return n
}

// flushedFile is a data file Flush wrote and Commit has not published yet.
type flushedFile struct {
	meta *manifest.DataFileMeta
	path string
}

// NewWrite starts a write on the table's current schema.
func (t *Table) NewWrite(ctx context.Context) *Write {
	return &Write{t: t, mem: memory.DefaultAllocator, groups: map[string]*writeGroup{}, dataPF: &pathFactory{uuid: uuid.NewString()}}
}

// Buffered returns how many rows the write holds in memory: written and
// neither flushed nor committed.
func (w *Write) Buffered() int64 { return w.buffered }

// Write adds rows of one bucket. rec must have the table's columns (by name and type). For primary-key
// tables kinds and seqs are required (one per row); for append tables they may be nil (kinds must be
// Insert). The Write retains what it keeps; the caller keeps its own reference to rec.
func (w *Write) Write(ctx context.Context, bucket int32, rec arrow.RecordBatch, kinds []RowKind, seqs []int64) error {
	if w.closed {
		return fmt.Errorf("lake: write already committed or aborted")
	}
	t := w.t
	if err := t.checkWritable(); err != nil {
		return err
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if err := checkRecordSchema(t.schema, rec.Schema()); err != nil {
		return fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	nb := t.schema.NumBuckets()
	if (nb > 0 && (bucket < 0 || int(bucket) >= nb)) || (nb <= 0 && bucket != 0) {
		return fmt.Errorf("lake: %s: bucket %d out of range for bucket=%d", t.FullName(), bucket, nb)
	}
	pk := t.schema.HasPrimaryKey()
	if pk {
		if len(kinds) != n || len(seqs) != n {
			return fmt.Errorf("lake: %s: primary-key write needs %d kinds and sequence numbers, got %d and %d", t.FullName(), n, len(kinds), len(seqs))
		}
	} else {
		for _, k := range kinds {
			if k != Insert {
				return fmt.Errorf("lake: %s: append table accepts only Insert rows", t.FullName())
			}
		}
	}
	partIdx, partTypes, err := t.columnsOf(rec, t.schema.PartitionKeys)
	if err != nil {
		return err
	}
	// Split rows by partition.
	type part struct {
		vals []any
		rows []int64
	}
	parts := map[string]*part{}
	var order []string
	if len(partIdx) == 0 { // unpartitioned: every row is in the one empty partition
		key := string(manifest.EncodeBinaryRow(nil, nil))
		parts[key], order = &part{}, []string{key}
	} else {
		for r := 0; r < n; r++ {
			vals := rowValues(rec, partIdx, partTypes, r)
			key := string(manifest.EncodeBinaryRow(partTypes, vals))
			p := parts[key]
			if p == nil {
				p = &part{vals: vals}
				parts[key] = p
				order = append(order, key)
			}
			p.rows = append(p.rows, int64(r))
		}
	}
	for _, key := range order {
		p := parts[key]
		gk := fmt.Sprintf("%x/%d", key, bucket)
		g := w.groups[gk]
		if g == nil {
			g = &writeGroup{partition: manifest.SerializeBinaryRow(len(partTypes), []byte(key)), partVals: p.vals, bucket: bucket}
			w.groups[gk] = g
		}
		var sub arrow.RecordBatch
		if len(order) == 1 {
			rec.Retain()
			sub = rec
		} else {
			sub, err = takeRecord(ctx, rec, p.rows, w.mem)
			if err != nil {
				return err
			}
		}
		g.recs = append(g.recs, sub)
		w.buffered += sub.NumRows()
		w.bufferedBytes += util.TotalRecordSize(sub)
		if pk {
			w.bufferedBytes += 9 * sub.NumRows() // a kind and a sequence number per row
		}
		switch {
		case !pk:
		case len(order) == 1: // all rows, in order
			g.kinds = append(g.kinds, kinds...)
			g.seqs = append(g.seqs, seqs...)
		default:
			for _, r := range p.rows {
				g.kinds = append(g.kinds, kinds[r])
				g.seqs = append(g.seqs, seqs[r])
			}
		}
	}
	return nil
}

// checkRecordSchema requires rec to carry the table columns in order with the table's Arrow types.
func checkRecordSchema(ts *paimontype.TableSchema, got *arrow.Schema) error {
	want := ts.ArrowSchema()
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("record has %d columns, table has %d", got.NumFields(), want.NumFields())
	}
	for i, f := range want.Fields() {
		g := got.Field(i)
		if g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return fmt.Errorf("record column %d is %s %s, table column is %s %s", i, g.Name, g.Type, f.Name, f.Type)
		}
	}
	return nil
}

// takeRecord selects rows (in the given order).
func takeRecord(ctx context.Context, rec arrow.RecordBatch, rows []int64, mem memory.Allocator) (arrow.RecordBatch, error) {
	return arrowutil.TakeRecord(ctx, mem, rec, rows)
}

func (w *Write) release() {
	_ = w.waitSpills(0)
	for _, g := range w.groups {
		g.releaseRows()
		g.removeRuns(w.t.fio)
	}
	w.groups = map[string]*writeGroup{}
	w.buffered, w.bufferedBytes = 0, 0
}

// releaseRows drops the group's buffered rows.
func (g *writeGroup) releaseRows() {
	for _, r := range g.recs {
		r.Release()
	}
	g.recs, g.kinds, g.seqs = nil, nil, nil
}

// Abort drops buffered rows and removes the files Flush wrote (a failed
// Commit has removed its own).
func (w *Write) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	// A cleanup, often after the caller's context ended: it runs detached, as
	// a failed Commit's does, so that the files are removed even then (on S3
	// each request's attempts and retries are bounded); a file left behind is
	// an orphan, for RemoveOrphanFiles.
	ctx := context.Background()
	for _, g := range w.groups {
		for _, f := range g.flushed {
			_ = w.t.fio.Remove(ctx, f.path)
		}
	}
	w.release()
}

// sortedGroups returns the groups in (partition bytes, bucket) order.
func (w *Write) sortedGroups() []*writeGroup {
	gs := make([]*writeGroup, 0, len(w.groups))
	for _, g := range w.groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		if c := string(gs[i].partition); c != string(gs[j].partition) {
			return c < string(gs[j].partition)
		}
		return gs[i].bucket < gs[j].bucket
	})
	return gs
}
