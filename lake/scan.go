package lake

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
)

const scanBatchRows = 64 * 1024

// Scan returns the rows of snap (nil: empty result) projected to columns (nil: all, in table order).
// Primary-key tables are merged per (partition, bucket): the highest sequence number per key wins
// and -U/-D rows are dropped; rows come out in key order per bucket. Append tables are concatenated.
// Memory is bounded by one bucket (PK) or one row group (append). The reader owns each batch until the
// next call to Next; Release the reader when done.
// opts may project columns and skip files that cannot match a filter.
func (t *Table) Scan(ctx context.Context, snap *Snapshot, opts ScanOptions) (array.RecordReader, error) {
	if err := t.checkSupported(); err != nil {
		return nil, err
	}
	columns := opts.Columns
	full := t.schema.ArrowSchema()
	var outFields []arrow.Field
	if columns == nil {
		outFields = full.Fields()
	} else {
		for _, c := range columns {
			i := t.schema.FieldIndex(c)
			if i < 0 {
				return nil, fmt.Errorf("lake: %s: scan: unknown column %q", t.FullName(), c)
			}
			outFields = append(outFields, full.Field(i))
		}
	}
	r := &scanReader{t: t, ctx: ctx, mem: memory.DefaultAllocator, schema: arrow.NewSchema(outFields, nil)}
	r.refs.Store(1)
	if snap == nil {
		return r, nil
	}
	entries, _, err := t.dataFiles(ctx, snap)
	if err != nil {
		return nil, err
	}
	prune := t.newPruner(opts.Filter)
	r.prune = prune
	var kept []ManifestEntry
	for _, e := range entries {
		// Checked before pruning, so that the answer never depends on the filter.
		if w := e.File.WriteCols; len(w) > 0 && len(w) < len(t.schema.Fields) {
			return nil, fmt.Errorf("%s: %w: data file %s holds only the columns %v (a data-evolution update); flightd does not merge files by row id",
				t.FullName(), ErrUnsupported, e.File.FileName, w)
		}
		if prune == nil || prune.keep(&e) {
			kept = append(kept, e)
		}
	}
	for _, b := range groupByBucket(kept) {
		g := &scanGroup{partition: b.partition, bucket: b.bucket}
		for _, e := range b.entries {
			g.files = append(g.files, e.File)
		}
		r.groups = append(r.groups, g)
	}
	r.err = r.attachDeletionVectors(snap)
	return r, nil
}

type scanGroup struct {
	partition []byte
	bucket    int32
	files     []DataFileMeta
	deletions map[string]deletionFile // deletion vector by data file name (deletion-vector tables)
}

type scanReader struct {
	t      *Table
	ctx    context.Context
	mem    memory.Allocator
	schema *arrow.Schema
	refs   atomic.Int64

	groups  []*scanGroup
	prune   *pruner             // nil: no filter
	pending []arrow.RecordBatch // ready batches
	cur     arrow.RecordBatch
	err     error

	dvEnabled bool                       // the table has deletion vectors (see attachDeletionVectors)
	dvs       map[string]*deletionVector // deletion vectors of the group being loaded
	schemas   map[int64]*TableSchema     // schemas of files written under older schema ids
}

var _ array.RecordReader = (*scanReader)(nil)

func (r *scanReader) Retain() { r.refs.Add(1) }

func (r *scanReader) Release() {
	if n := r.refs.Add(-1); n == 0 {
		r.clear()
	} else if n < 0 {
		panic("lake: scan reader released too often")
	}
}

func (r *scanReader) clear() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for _, p := range r.pending {
		p.Release()
	}
	r.pending = nil
	r.groups = nil
}

func (r *scanReader) Schema() *arrow.Schema { return r.schema }

// RecordBatch returns the current batch, valid until the next Next.
func (r *scanReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch (deprecated alias).
func (r *scanReader) Record() arrow.RecordBatch { return r.cur }

func (r *scanReader) Err() error { return r.err }

func (r *scanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	for len(r.pending) == 0 {
		if len(r.groups) == 0 {
			return false
		}
		if err := r.ctx.Err(); err != nil {
			r.err = err
			r.clear()
			return false
		}
		g := r.groups[0]
		r.groups = r.groups[1:]
		var err error
		if r.t.schema.HasPrimaryKey() {
			err = r.loadPK(g)
		} else {
			err = r.loadAppend(g)
		}
		if err != nil {
			r.err = err
			r.clear()
			return false
		}
	}
	r.cur = r.pending[0]
	r.pending = r.pending[1:]
	return true
}

func (r *scanReader) partTypes() []DataType {
	ts := r.t.schema
	out := make([]DataType, len(ts.PartitionKeys))
	for i, k := range ts.PartitionKeys {
		out[i] = ts.Fields[ts.FieldIndex(k)].Type
	}
	return out
}

func (r *scanReader) filePath(g *scanGroup, f *DataFileMeta) (string, error) {
	if f.ExternalPath != nil && *f.ExternalPath != "" {
		return *f.ExternalPath, nil
	}
	types := r.partTypes()
	_, row, err := deserializeBinaryRow(g.partition)
	if err != nil {
		return "", err
	}
	vals, err := decodeBinaryRow(types, row)
	if err != nil {
		return "", err
	}
	return r.t.dataFilePath(types, vals, g.bucket, f.FileName), nil
}

// readFile reads the wanted fields of a whole data file, one record per row group. Columns are
// mapped from the file's schema by field id (see filePlan) and rows its deletion vector deletes
// are dropped.
func (r *scanReader) readFile(g *scanGroup, f *DataFileMeta, want []arrow.Field, emit func(arrow.RecordBatch)) error {
	path, err := r.filePath(g, f)
	if err != nil {
		return fmt.Errorf("lake: %s: data file %s: %w", r.t.FullName(), f.FileName, err)
	}
	plan, err := r.filePlan(f, want)
	if err != nil {
		return fmt.Errorf("lake: %s: data file %s: %w", r.t.FullName(), path, err)
	}
	dv := r.dvs[f.FileName]
	pf, err := openParquet(r.ctx, r.t.fio, path, r.mem)
	if err != nil {
		return fmt.Errorf("lake: %s: open data file %s: %w", r.t.FullName(), path, err)
	}
	defer pf.Close()
	if dv != nil && pf.pr.NumRows() != f.RowCount {
		return fmt.Errorf("lake: %s: data file %s: %w: %d rows, the manifest says %d (its deletion vector counts positions)",
			r.t.FullName(), path, ErrCorrupt, pf.pr.NumRows(), f.RowCount)
	}
	var pos int64
	for rg := 0; rg < pf.pr.NumRowGroups(); rg++ {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if r.prune != nil && !r.prune.rowGroupMatches(pf, f, rg) {
			pos += pf.pr.MetaData().RowGroup(rg).NumRows()
			continue
		}
		rec, err := r.prune.readRowGroup(r.ctx, pf, rg, plan, want, r.mem, dv == nil) // dv: rows by position
		if err != nil {
			return fmt.Errorf("lake: %s: read data file %s: %w", r.t.FullName(), path, err)
		}
		start := pos
		pos += rec.NumRows()
		if dv != nil && dv.countIn(start, pos) > 0 {
			keep := make([]int64, 0, rec.NumRows())
			for i := int64(0); i < rec.NumRows(); i++ {
				if !dv.contains(start + i) {
					keep = append(keep, i)
				}
			}
			kept, err := takeRecord(r.ctx, rec, keep, r.mem)
			rec.Release()
			if err != nil {
				return fmt.Errorf("lake: %s: read data file %s: apply deletion vector: %w", r.t.FullName(), path, err)
			}
			rec = kept
		}
		emit(rec)
	}
	return nil
}

// loadDeletions loads the deletion vectors of g's files for the next readFile calls.
func (r *scanReader) loadDeletions(g *scanGroup) error {
	r.dvs = nil
	dvs, err := r.loadDeletionVectors(g)
	if err != nil {
		return err
	}
	r.dvs = dvs
	return nil
}

func (r *scanReader) loadAppend(g *scanGroup) error {
	if err := r.loadDeletions(g); err != nil {
		return err
	}
	for i := range g.files {
		err := r.readFile(g, &g.files[i], r.schema.Fields(), func(rec arrow.RecordBatch) {
			if rec.NumRows() == 0 {
				rec.Release()
				return
			}
			r.pending = append(r.pending, rec)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// rawConvertible reports whether a primary-key bucket can be read without
// merging, as Java's MergeTreeSplitGenerator decides: no file holds a
// retraction and the files cannot share keys, because there is one file
// (keys are unique within a file) or all are on one level above 0 (a
// level's files never overlap).
func rawConvertible(files []DataFileMeta) bool {
	for _, f := range files {
		if f.DeleteRowCount == nil || *f.DeleteRowCount != 0 {
			return false
		}
	}
	if len(files) == 1 {
		return true
	}
	for _, f := range files {
		if f.Level == 0 || f.Level != files[0].Level {
			return false
		}
	}
	return true
}

// rawConvertibleDV is rawConvertible for a table with deletion vectors: files
// above level 0 without delete rows (a null _DELETE_ROW_COUNT counts as none,
// as in Java) are read raw whatever their levels, since the vectors delete the
// older versions of a key.
func rawConvertibleDV(files []DataFileMeta) bool {
	for _, f := range files {
		if f.Level == 0 || (f.DeleteRowCount != nil && *f.DeleteRowCount != 0) {
			return false
		}
	}
	return true
}

func (r *scanReader) loadPK(g *scanGroup) error {
	if (r.dvEnabled && rawConvertibleDV(g.files)) || (!r.dvEnabled && rawConvertible(g.files)) {
		return r.loadAppend(g) // value columns straight from the files
	}
	all, want, kept, err := r.mergePK(g)
	if err != nil || all == nil {
		return err
	}
	defer all.Release()
	// project to the output columns
	cols := make([]arrow.Array, r.schema.NumFields())
	for i, f := range r.schema.Fields() {
		for j, wf := range want {
			if wf.Name == f.Name {
				cols[i] = all.Column(j)
				break
			}
		}
	}
	proj := array.NewRecordBatch(r.schema, cols, all.NumRows())
	defer proj.Release()
	for start := 0; start < len(kept); start += scanBatchRows {
		end := min(start+scanBatchRows, len(kept))
		b, err := takeRecord(r.ctx, proj, kept[start:end], r.mem)
		if err != nil {
			return err
		}
		r.pending = append(r.pending, b)
	}
	return nil
}

// mergePK reads every file of a primary-key bucket and merges them as Paimon's deduplicate engine
// does. all holds the columns want: the trimmed key columns, the other columns of r.schema, then
// _SEQUENCE_NUMBER and _VALUE_KIND (all is nil when the bucket has no rows; the caller releases
// it). kept lists the surviving rows of all in key order: per key the row with the highest
// sequence number, unless that row is a retraction (-U/-D). The key columns come first in all.
func (r *scanReader) mergePK(g *scanGroup) (all arrow.RecordBatch, want []arrow.Field, kept []int64, err error) {
	ts := r.t.schema
	keyNames := ts.TrimmedPrimaryKeys()
	full := ts.ArrowSchema()
	seen := map[string]bool{}
	for _, n := range keyNames {
		want = append(want, full.Field(ts.FieldIndex(n)))
		seen[n] = true
	}
	for _, f := range r.schema.Fields() {
		if !seen[f.Name] {
			want = append(want, f)
			seen[f.Name] = true
		}
	}
	want = append(want, arrow.Field{Name: seqNumberField, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8})
	var recs []arrow.RecordBatch
	defer func() {
		for _, rc := range recs {
			rc.Release()
		}
	}()
	if err := r.loadDeletions(g); err != nil {
		return nil, nil, nil, err
	}
	for i := range g.files {
		if err := r.readFile(g, &g.files[i], want, func(rec arrow.RecordBatch) { recs = append(recs, rec) }); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(recs) == 0 {
		return nil, want, nil, nil
	}
	all, err = arrowutil.ConcatRecords(recs, r.mem)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			all.Release()
			all = nil
		}
	}()
	if err := r.ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	n := int(all.NumRows())
	keyTypes := make([]DataType, len(keyNames))
	keyIdx := make([]int, len(keyNames))
	for i, k := range keyNames {
		keyTypes[i], keyIdx[i] = ts.Fields[ts.FieldIndex(k)].Type, i
	}
	cmpKey := rowCompare(all, keyIdx, keyTypes)
	seqs := all.Column(len(want) - 2).(*array.Int64)
	kinds := all.Column(len(want) - 1).(*array.Int8)
	order := orderByKeySeqPos(all, keyIdx, cmpKey, seqs.Int64Values())
	for i := 0; i < n; i++ {
		if i+1 < n && cmpKey(order[i], order[i+1]) == 0 {
			continue
		}
		row := order[i]
		if RowKind(kinds.Value(row)).isRetract() {
			continue
		}
		kept = append(kept, int64(row))
	}
	return all, want, kept, nil
}
