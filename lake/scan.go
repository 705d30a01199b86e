package lake

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

const scanBatchRows = 64 * 1024

// Scan returns the rows of snap (nil: empty result) projected to columns (nil: all, in table order),
// decoded by the default number of workers in the deterministic order (see ScanWith).
// Primary-key tables are merged per (partition, bucket): the highest sequence number per key wins
// and -U/-D rows are dropped; rows come out in key order per bucket, buckets in partition then
// bucket order. Append tables are concatenated (files in manifest order). The reader owns each
// batch until the next call to Next; Release the reader when done.
// opts may project columns and skip files that cannot match a filter.
func (t *Table) Scan(ctx context.Context, snap *Snapshot, opts ScanOptions) (array.RecordReader, error) {
	return t.ScanWith(ctx, snap, opts, ScanTuning{})
}

// ScanTuning sets how a scan runs; the zero value is the default.
type ScanTuning struct {
	// Workers decode in parallel: files of append tables and of primary-key buckets read
	// without merging, and whole primary-key buckets that are merged. 0 is
	// runtime.GOMAXPROCS(0) capped at runtime.NumCPU(); 1 decodes on the caller's
	// goroutine, one batch per Next.
	Workers int
	// Unordered lets batches come out in the order workers finish them. A batch is still
	// one file's row group or a slice of one bucket's merge in key order, but batches of
	// different buckets (and of different files of a bucket read without merging) interleave.
	Unordered bool
	// Allocator for the decoded batches; nil is memory.DefaultAllocator.
	Allocator memory.Allocator
	// Transform, when set, maps every decoded batch on the worker that decoded it, so
	// that per-row work (such as dropping the rows a union read replaces) runs in
	// parallel too. It returns a new reference, or nil to drop the batch; the scan
	// releases its input. It must be safe for concurrent use.
	Transform func(arrow.RecordBatch) (arrow.RecordBatch, error)
	// Exclude drops the rows whose primary key is in it: the keys a union
	// read takes from the log. Only for a table whose stored key is one
	// integer-like column (IntKey); the key need not be among the columns
	// read. Every file read, merged or not, finds the rows by position from
	// the file's cached keys (KeyIndexCacheBytes), so the key column is
	// decoded once per file, not once per scan, and a merge sees only the
	// keys the log leaves.
	Exclude *KeySet
}

// KeySet is the keys a scan excludes (ScanTuning.Exclude), each list sorted
// ascending and distinct.
type KeySet struct {
	// ByBucket holds the keys of each bucket, when it is set: a bucket's
	// files are searched for its keys only.
	ByBucket map[int32][]int64
	// All holds the keys of every bucket otherwise.
	All []int64
}

// of returns the keys to exclude from bucket b.
func (k *KeySet) of(b int32) []int64 {
	switch {
	case k == nil:
		return nil
	case k.ByBucket != nil:
		return k.ByBucket[b]
	}
	return k.All
}

// empty reports whether the set excludes nothing.
func (k *KeySet) empty() bool {
	return k == nil || (len(k.ByBucket) == 0 && len(k.All) == 0)
}

// ScanWith is Scan with tuning. Memory: a merged bucket holds a row group per sorted run
// (each level-0 file is a run, each level above 0 is one) plus the batches being merged,
// never the whole bucket; with W workers at most about 2W tasks (files or merged buckets)
// are open at once, each with at most scanInFlight decoded batches waiting for the caller.
// Cancelling ctx or releasing the reader stops the workers and frees their batches.
func (t *Table) ScanWith(ctx context.Context, snap *Snapshot, opts ScanOptions, tune ScanTuning) (array.RecordReader, error) {
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
	if opts.KeepKinds {
		if !t.schema.HasPrimaryKey() {
			return nil, fmt.Errorf("lake: %s: the row kinds of an append table are all +I: nothing to keep", t.FullName())
		}
		outFields = append(outFields, arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8})
	}
	if !tune.Exclude.empty() && !t.IntKey() {
		return nil, fmt.Errorf("lake: %s: scan: rows can be excluded by key only from a table whose primary key is one integer column", t.FullName())
	}
	mem := tune.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	r := &scanReader{t: t, ctx: ctx, mem: mem, schema: arrow.NewSchema(outFields, nil), tune: tune, keepKinds: opts.KeepKinds}
	r.refs.Store(1)
	if snap == nil {
		return r, nil
	}
	entries, _, err := t.dataFiles(ctx, snap)
	if err != nil {
		return nil, err
	}
	prune := t.newPruner(ctx, opts.Filter)
	r.prune = prune
	var kept []manifest.Entry
	keyed := t.schema.HasPrimaryKey()
	top := int32(-1)
	if opts.TopLevel && keyed {
		if top, err = t.maxLevel(); err != nil {
			return nil, err
		}
	}
	files := 0
	for _, e := range entries {
		// Checked before pruning, so that the answer never depends on the filter.
		if w := e.File.WriteCols; len(w) > 0 && len(w) < len(t.schema.Fields) {
			return nil, fmt.Errorf("%s: %w: data file %s holds only the columns %v (a data-evolution update); flightd does not merge files by row id",
				t.FullName(), ErrUnsupported, e.File.FileName, w)
		}
		if top >= 0 && e.File.Level != top {
			continue
		}
		if prune != nil && !prune.keep(&e) {
			continue
		}
		unit := files // an append table splits by file, a keyed one by bucket
		if keyed {
			unit = int(e.Bucket)
		}
		files++
		if !opts.Split.In(unit) {
			continue
		}
		kept = append(kept, e)
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
	files     []manifest.DataFileMeta
	deletions map[string]deletionFile // deletion vector by data file name (deletion-vector tables)

	dvOnce sync.Once // loads dvs for the group's tasks
	dvs    map[string]*manifest.DeletionVector
	dvErr  error
}

type scanReader struct {
	t      *Table
	ctx    context.Context
	mem    memory.Allocator
	schema *arrow.Schema
	refs   atomic.Int64
	tune   ScanTuning

	groups []*scanGroup
	prune  *pruner // nil: no filter; called by the workers concurrently (read only)
	run    *scanRun
	cur    arrow.RecordBatch
	err    error

	keepKinds bool                                // ScanOptions.KeepKinds: every bucket merged, retractions kept
	dvEnabled bool                                // the table has deletion vectors (see attachDeletionVectors)
	dvs       map[string]*manifest.DeletionVector // deletion vectors of the group readFile reads (compaction)
	planMu    sync.Mutex                          // filePlan fills the schemas cache
	schemas   map[int64]*paimontype.TableSchema   // schemas of files written under older schema ids
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

// clear stops the workers and frees every batch the reader holds.
func (r *scanReader) clear() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.run != nil {
		r.run.stop()
	}
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
	if r.run == nil {
		if len(r.groups) == 0 {
			return false
		}
		r.run = r.startRun()
	}
	rec, err := r.run.next()
	if err != nil {
		r.err = err
		r.clear()
		return false
	}
	if rec == nil {
		r.clear()
		return false
	}
	r.cur = rec
	return true
}

// tasks splits the scan into units of decoding, in output order: a file of an append group or
// of a primary-key group read without merging, or a whole primary-key bucket to merge.
func (r *scanReader) tasks() []scanTask {
	var out []scanTask
	pk := r.t.schema.HasPrimaryKey()
	keyTypes := r.t.schema.TrimmedKeyTypes()
	for _, g := range r.groups {
		if pk && r.keepKinds {
			// Each key of a disjoint bucket is in one file, once: its
			// stored row and kind are the merge's answer, read raw.
			if order, ok := disjointFiles(g.files, keyTypes); ok && !mergeKeptKinds {
				for _, i := range order {
					out = append(out, &fileTask{r: r, g: g, f: &g.files[i]})
				}
			} else {
				out = append(out, r.newMerge(g))
			}
			continue
		}
		if pk && !((r.dvEnabled && rawConvertibleDV(g.files)) || (!r.dvEnabled && rawConvertible(g.files))) {
			order, ok := disjointFiles(g.files, keyTypes)
			if !ok {
				out = append(out, r.newMerge(g))
				continue
			}
			for _, i := range order {
				out = append(out, &fileTask{r: r, g: g, f: &g.files[i], dropRetractions: true})
			}
			continue
		}
		for i := range g.files {
			out = append(out, &fileTask{r: r, g: g, f: &g.files[i]})
		}
	}
	return out
}

// mergeKeptKinds makes a scan that keeps the row kinds merge every bucket,
// disjoint ones too (a benchmark's baseline).
var mergeKeptKinds = false

// disjointFiles reports whether a primary-key bucket can be read without
// merging because no two of its files can hold the same key: their key
// ranges do not overlap, whatever their levels. Each key is then in one
// file, once, so the merge's result is each file's rows without the
// retractions, which the file tasks drop (fileTask.dropRetractions; Java's
// MergeTreeSplitGenerator reads a one-file section raw, but trusts
// _DELETE_ROW_COUNT for that). Tiering keys that grow, such as event ids
// or times, writes such buckets, and reading them raw decodes only the
// projected columns and _VALUE_KIND, on as many workers as there are
// files. It returns the files in key order, the order a merge would
// return the rows in.
func disjointFiles(files []manifest.DataFileMeta, keyTypes []paimontype.DataType) ([]int, bool) {
	idx := make([]int, len(files))
	for i := range files {
		idx[i] = i
	}
	return levelRun(files, idx, keyTypes)
}

// fileTask reads one file's row groups, dropping empty batches.
type fileTask struct {
	r  *scanReader
	g  *scanGroup
	f  *manifest.DataFileMeta
	fr *fileReader
	// dropRetractions reads _VALUE_KIND too and drops the -U/-D rows, as
	// a merge would: a file of a disjoint bucket (disjointFiles) holds
	// each of its keys alone, and a writer may count its retractions
	// wrong (pypaimon 2.1 records _DELETE_ROW_COUNT 0 for every file).
	dropRetractions bool
}

func (ft *fileTask) next() (arrow.RecordBatch, error) {
	if ft.fr == nil {
		dvs, err := ft.r.groupDeletions(ft.g)
		if err != nil {
			return nil, err
		}
		want := ft.r.schema.Fields()
		if ft.dropRetractions {
			want = append(want, arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8})
		}
		ft.fr = ft.r.newFileReader(ft.g, ft.f, want, dvs[ft.f.FileName])
		ft.fr.dropRetractions = ft.dropRetractions
	}
	return ft.fr.next()
}

// dropRetractionRows returns rec without its last column (_VALUE_KIND) and
// without the rows that column marks -U or -D; nil when no row is left. It
// releases rec.
func dropRetractionRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer rec.Release()
	last := int(rec.NumCols()) - 1
	kinds := rec.Column(last).(*array.Int8)
	keep := make([]bool, kinds.Len())
	for i := range keep {
		keep[i] = !RowKind(kinds.Value(i)).isRetract()
	}
	cols := rec.Columns()[:last]
	fields := rec.Schema().Fields()[:last]
	data := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer data.Release()
	return arrowutil.FilterRecord(ctx, mem, data, keep)
}

func (ft *fileTask) close() {
	if ft.fr != nil {
		ft.fr.close()
	}
}

// groupDeletions loads the deletion vectors of g's files once for all of g's tasks.
func (r *scanReader) groupDeletions(g *scanGroup) (map[string]*manifest.DeletionVector, error) {
	g.dvOnce.Do(func() { g.dvs, g.dvErr = r.loadDeletionVectors(g) })
	return g.dvs, g.dvErr
}

func (r *scanReader) partTypes() []paimontype.DataType {
	ts := r.t.schema
	out := make([]paimontype.DataType, len(ts.PartitionKeys))
	for i, k := range ts.PartitionKeys {
		out[i] = ts.Fields[ts.FieldIndex(k)].Type
	}
	return out
}

func (r *scanReader) filePath(g *scanGroup, f *manifest.DataFileMeta) (string, error) {
	if f.ExternalPath != nil && *f.ExternalPath != "" {
		return *f.ExternalPath, nil
	}
	types := r.partTypes()
	_, row, err := manifest.DeserializeBinaryRow(g.partition)
	if err != nil {
		return "", err
	}
	vals, err := manifest.DecodeBinaryRow(types, row)
	if err != nil {
		return "", err
	}
	return r.t.dataFilePath(types, vals, g.bucket, f.FileName), nil
}

// readFile reads the wanted fields of a whole data file, one record per row group (see
// fileReader), with the deletion vector of r.dvs.
func (r *scanReader) readFile(g *scanGroup, f *manifest.DataFileMeta, want []arrow.Field, emit func(arrow.RecordBatch)) error {
	fr := r.newFileReader(g, f, want, r.dvs[f.FileName])
	defer fr.close()
	for {
		rec, err := fr.next()
		if err != nil || rec == nil {
			return err
		}
		emit(rec)
	}
}

// fileReader reads the wanted fields of a data file a row group at a time. Columns are mapped
// from the file's schema by field id (see filePlan) and rows its deletion vector deletes are
// dropped. The file is opened on the first next.
type fileReader struct {
	r    *scanReader
	g    *scanGroup
	f    *manifest.DataFileMeta
	want []arrow.Field
	dv   *manifest.DeletionVector
	// dropRetractions: the last wanted field is _VALUE_KIND, which next
	// drops with the -U/-D rows it marks (see fileTask). A row group whose
	// statistics prove it holds none is read without the column.
	dropRetractions bool

	pf   *parquetFile
	plan []fileColumn
	path string
	rg   int
	pos  int64 // row position of row group rg in the file
	done bool

	keyIdx  *keyIndex // the file's keys, once ScanTuning.Exclude needed them
	keyLeaf int       // the key column's leaf + 1 (-1: none usable, 0: not looked up)
	drop    []int64   // the excluded rows of the row group being read (reused)
}

func (r *scanReader) newFileReader(g *scanGroup, f *manifest.DataFileMeta, want []arrow.Field, dv *manifest.DeletionVector) *fileReader {
	return &fileReader{r: r, g: g, f: f, want: want, dv: dv}
}

func (fr *fileReader) open() error {
	r, f := fr.r, fr.f
	path, err := r.filePath(fr.g, f)
	if err != nil {
		return fmt.Errorf("lake: %s: data file %s: %w", r.t.FullName(), f.FileName, err)
	}
	fr.path = path
	r.planMu.Lock()
	plan, err := r.filePlan(f, fr.want)
	r.planMu.Unlock()
	if err != nil {
		return fmt.Errorf("lake: %s: data file %s: %w", r.t.FullName(), path, err)
	}
	fr.plan = plan
	pf, err := openParquet(r.ctx, r.t.fio, path, r.mem)
	if err != nil {
		return fmt.Errorf("lake: %s: open data file %s: %w", r.t.FullName(), path, err)
	}
	fr.pf = pf
	if fr.dv != nil && pf.pr.NumRows() != f.RowCount {
		return fmt.Errorf("lake: %s: data file %s: %w: %d rows, the manifest says %d (its deletion vector counts positions)",
			r.t.FullName(), path, manifest.ErrCorrupt, pf.pr.NumRows(), f.RowCount)
	}
	return nil
}

// next returns the next non-empty row group's rows (nil at the end of the file).
func (fr *fileReader) next() (arrow.RecordBatch, error) {
	if fr.done {
		return nil, nil
	}
	if fr.pf == nil {
		if err := fr.open(); err != nil {
			fr.done = true
			return nil, err
		}
	}
	r, f, pf, path := fr.r, fr.f, fr.pf, fr.path
	for ; fr.rg < pf.pr.NumRowGroups(); fr.rg++ {
		rg := fr.rg
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		if r.prune != nil && !r.prune.rowGroupMatches(pf, f, rg) {
			fr.pos += pf.pr.MetaData().RowGroup(rg).NumRows()
			continue
		}
		plan, want := fr.plan, fr.want
		kinds := fr.dropRetractions && mayRetract(pf, rg)
		if fr.dropRetractions && !kinds {
			plan, want = plan[:len(plan)-1], want[:len(want)-1]
		}
		// With a deletion vector or excluded keys rows are found by
		// position: no narrowing.
		exclude := r.tune.Exclude.of(fr.g.bucket)
		rec, err := r.prune.readRowGroup(r.ctx, pf, rg, plan, want, r.mem, fr.dv == nil && len(exclude) == 0)
		if err != nil {
			return nil, fmt.Errorf("lake: %s: read data file %s: %w", r.t.FullName(), path, err)
		}
		start := fr.pos
		fr.pos += pf.pr.MetaData().RowGroup(rg).NumRows() // rec may hold only the key's rows
		fr.drop = fr.drop[:0]
		if len(exclude) > 0 && fr.mayHoldKeys(rg, exclude) {
			idx, err := fr.keys()
			if err != nil {
				rec.Release()
				return nil, fmt.Errorf("lake: %s: read the keys of data file %s: %w", r.t.FullName(), path, err)
			}
			fr.drop = idx.dropped(start, fr.pos, exclude, fr.drop)
		}
		if dv := fr.dv; len(fr.drop) > 0 || (dv != nil && dv.CountIn(start, fr.pos) > 0) {
			keep := make([]bool, rec.NumRows())
			drop := fr.drop
			for i := range keep {
				if len(drop) > 0 && drop[0] == int64(i) {
					drop = drop[1:]
					continue
				}
				keep[i] = dv == nil || !dv.Contains(start+int64(i))
			}
			kept, err := arrowutil.FilterRecord(r.ctx, r.mem, rec, keep)
			rec.Release()
			if err != nil {
				return nil, fmt.Errorf("lake: %s: read data file %s: apply deletion vector: %w", r.t.FullName(), path, err)
			}
			if kept == nil {
				continue
			}
			rec = kept
		}
		if kinds {
			if rec, err = dropRetractionRows(r.ctx, r.mem, rec); err != nil {
				return nil, fmt.Errorf("lake: %s: read data file %s: %w", r.t.FullName(), path, err)
			}
			if rec == nil {
				continue
			}
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		fr.rg++
		return rec, nil
	}
	fr.done = true
	fr.close()
	return nil, nil
}

// mayRetract reports whether row group rg of pf may hold -U or -D rows: true
// unless the statistics of its _VALUE_KIND column say every row is +I (or
// every row +U). Skipping the column saves decoding 4 bytes a row (Parquet
// stores TINYINT as INT32), a third of an aggregate over one column.
func mayRetract(pf *parquetFile, rg int) bool {
	leaves := pf.fieldLeaves(valueKindField)
	if len(leaves) != 1 {
		return true
	}
	cc, err := pf.pr.MetaData().RowGroup(rg).ColumnChunk(leaves[0])
	if err != nil {
		return true
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return true
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() || (st.HasNullCount() && st.NullCount() > 0) {
		return true
	}
	s, ok := st.(*metadata.Int32Statistics)
	if !ok || s.Min() != s.Max() {
		return true
	}
	return s.Min() < 0 || s.Min() > 127 || RowKind(s.Min()).isRetract()
}

func (fr *fileReader) close() {
	if fr.pf != nil {
		fr.pf.Close()
		fr.pf = nil
	}
	fr.done = true
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

// rawConvertible reports whether a primary-key bucket can be read without
// merging, as Java's MergeTreeSplitGenerator decides: no file holds a
// retraction and the files cannot share keys, because there is one file
// (keys are unique within a file) or all are on one level above 0 (a
// level's files never overlap).
func rawConvertible(files []manifest.DataFileMeta) bool {
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
func rawConvertibleDV(files []manifest.DataFileMeta) bool {
	for _, f := range files {
		if f.Level == 0 || (f.DeleteRowCount != nil && *f.DeleteRowCount != 0) {
			return false
		}
	}
	return true
}

// mergePK reads every file of a primary-key bucket and merges them as Paimon's deduplicate engine
// does, the whole bucket in memory (compaction; scans merge a row group per run, see mergeTask). all holds the columns want: the trimmed key columns, the other columns of r.schema, then
// _SEQUENCE_NUMBER and _VALUE_KIND (all is nil when the bucket has no rows; the caller releases
// it). kept lists the surviving rows of all in key order: per key the newest row (by the
// sequence fields if the table has them, then the highest sequence number), unless that row
// is a retraction (-U/-D). The key columns come first in all.
func (r *scanReader) mergePK(g *scanGroup) (all arrow.RecordBatch, want []arrow.Field, kept []int64, err error) {
	ts := r.t.schema
	keyNames := ts.TrimmedPrimaryKeys()
	want = r.mergeWant()
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
	keyTypes := ts.TrimmedKeyTypes()
	keyIdx := make([]int, len(keyNames))
	for i := range keyIdx {
		keyIdx[i] = i
	}
	cmpKey := rowCompare(all, keyIdx, keyTypes)
	seqs := all.Column(len(want) - 2).(*array.Int64)
	kinds := all.Column(len(want) - 1).(*array.Int8)
	seq, err := SchemaSeqOrder(ts)
	if err != nil {
		return nil, nil, nil, err
	}
	bySeq, err := seq.versions(all)
	if err != nil {
		return nil, nil, nil, err
	}
	order := orderByKeySeqPos(all, keyIdx, cmpKey, bySeq, seqs.Int64Values())
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
