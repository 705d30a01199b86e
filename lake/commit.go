package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/google/uuid"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/background"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// CommitOptions controls a commit.
type CommitOptions struct {
	CommitUser     string            // stable per committer
	Identifier     int64             // increasing per CommitUser
	ExpectedLatest int64             // snapshot id planned against (0 = none); a different latest gives ErrCommitConflict
	Properties     map[string]string // written into the snapshot "properties"
}

// pathFactory names the files of one commit attempt: <prefix>-<uuid>-<n>.
type pathFactory struct {
	uuid string
	mu   sync.Mutex
	n    int
}

func (p *pathFactory) next(prefix, suffix string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := prefix + p.uuid + "-" + strconv.Itoa(p.n) + suffix
	p.n++
	return name
}

// Commit writes the buffered rows as level-0 data files, a manifest, the manifest lists and then
// creates snapshot-N exclusively, with the files Flush wrote before. On any failure nothing becomes
// visible and the files of this attempt are removed (those of Flush stay until Abort); the Write can
// be committed again (e.g. after re-planning on ErrCommitConflict).
func (w *Write) Commit(ctx context.Context, opts CommitOptions) (snap *Snapshot, err error) {
	if w.closed {
		return nil, fmt.Errorf("lake: write already committed or aborted")
	}
	t := w.t
	if opts.CommitUser == "" {
		return nil, fmt.Errorf("lake: %s: commit needs a CommitUser", t.FullName())
	}
	if err := w.waitSpills(0); err != nil {
		return nil, err
	}
	if w.base != nil {
		// Its groups' files are written, or being written, with sequence
		// numbers shifted against its base: it commits once, on the base.
		defer func() {
			if err != nil {
				w.spillErr = fmt.Errorf("lake: %s: a primary-key write that flushed cannot commit again after: %w", t.FullName(), err)
			}
		}()
	}
	latestID, err := t.latestSnapshotID(ctx)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
	}
	if latestID != opts.ExpectedLatest {
		return nil, fmt.Errorf("lake: %s: latest snapshot is %d, expected %d: %w", t.FullName(), latestID, opts.ExpectedLatest, ErrCommitConflict)
	}
	if w.base != nil && w.base.id != latestID {
		return nil, fmt.Errorf("lake: %s: latest snapshot is %d, the write's flushes were shifted against %d: %w", t.FullName(), latestID, w.base.id, ErrCommitConflict)
	}
	var prev *Snapshot
	if latestID > 0 {
		if prev, err = t.Snapshot(ctx, latestID); err != nil {
			return nil, err
		}
	}
	live, prevMetas, err := t.dataFiles(ctx, prev)
	if err != nil {
		return nil, err
	}
	maxSeq := map[string]int64{} // partition+bucket -> max sequence number of live files
	for _, e := range live {
		k := string(e.Partition) + "/" + strconv.Itoa(int(e.Bucket))
		if s, ok := maxSeq[k]; !ok || e.File.MaxSequenceNumber > s {
			maxSeq[k] = e.File.MaxSequenceNumber
		}
	}

	pf := &pathFactory{uuid: uuid.NewString()}
	var written []string
	defer func() {
		if err != nil {
			for _, p := range written {
				_ = t.fio.Remove(context.WithoutCancel(ctx), p)
			}
		}
	}()

	codec, err := w.fileCodec()
	if err != nil {
		return nil, err
	}
	// A group's buffered rows follow the files Flush wrote for it; those
	// move above the bucket's newest sequence number like the rest.
	bucketMax := func(g *writeGroup) int64 {
		if base, ok := maxSeq[string(g.partition)+"/"+strconv.Itoa(int(g.bucket))]; ok {
			return base
		}
		return -1
	}
	groups := w.sortedGroups()
	files, err := w.encode(ctx, groups, background.Workers(), codec, func(g *writeGroup) int64 { return bucketMax(g) + g.flushedRows() })
	for _, f := range files {
		written = append(written, f.path)
	}
	if err != nil {
		return nil, err
	}
	var entries []manifest.Entry
	add := func(g *writeGroup, m *manifest.DataFileMeta) {
		entries = append(entries, manifest.Entry{Kind: manifest.FileKindAdd, Partition: g.partition, Bucket: g.bucket,
			TotalBuckets: int32(t.schema.NumBuckets()), File: *m})
	}
	next := 0
	for _, g := range groups {
		shift := bucketMax(g) + 1
		for _, f := range g.flushed {
			m := *f.meta // a failed commit may be retried: shift a copy
			m.MinSequenceNumber += shift
			m.MaxSequenceNumber += shift
			add(g, &m)
		}
		for ; next < len(files) && files[next].g == g; next++ {
			add(g, files[next].meta)
		}
	}

	snap, err = t.commitSnapshot(ctx, commitRequest{prev: prev, prevMetas: prevMetas, entries: entries,
		kind: CommitKindAppend, user: opts.CommitUser, ident: opts.Identifier, props: opts.Properties}, pf, &written)
	if errors.Is(err, errPublishedNotSynced) {
		w.closed = true // readers may use its files: Abort must not remove them
		w.release()
	}
	if err != nil {
		return nil, err
	}
	// The snapshot is visible; from here on nothing is rolled back.
	written = nil
	w.closed = true
	w.release()
	return snap, nil
}

// commitRequest is one snapshot to publish on top of prev.
type commitRequest struct {
	prev      *Snapshot           // the latest snapshot (nil: none)
	prevMetas []manifest.FileMeta // prev's base + delta manifests
	entries   []manifest.Entry    // this commit's ADD/DELETE entries (the delta)
	kind      string
	user      string
	ident     int64
	props     map[string]string // nil: {}
}

// commitSnapshot writes the delta manifest, the base list (prev's manifests, merged as
// ManifestFileMerger does), the delta list and creates snapshot-(prev+1) exclusively, then
// the LATEST hint. Every file it writes is appended to *written so that the caller can remove
// them when it fails; after success nothing may be removed.
func (t *Table) commitSnapshot(ctx context.Context, req commitRequest, pf *pathFactory, written *[]string) (*Snapshot, error) {
	manifestDir := filepath.Join(t.path, "manifest")
	writeFile := func(name string, data []byte) (int64, error) {
		p := filepath.Join(manifestDir, name)
		if err := t.fio.CreateExclusive(ctx, p, data); err != nil {
			return 0, fmt.Errorf("lake: %s: write %s: %w", t.FullName(), p, err)
		}
		*written = append(*written, p)
		return int64(len(data)), nil
	}
	var delta int64
	for _, e := range req.entries {
		if e.Kind == manifest.FileKindAdd {
			delta += e.File.RowCount
		} else {
			delta -= e.File.RowCount
		}
	}
	var deltaMetas []manifest.FileMeta
	if len(req.entries) > 0 {
		data, err := manifest.Encode(req.entries)
		if err != nil {
			return nil, fmt.Errorf("lake: %s: encode manifest: %w", t.FullName(), err)
		}
		name := pf.next("manifest-", "")
		size, err := writeFile(name, data)
		if err != nil {
			return nil, err
		}
		deltaMetas = append(deltaMetas, t.manifestMeta(name, size, req.entries))
	}
	baseMetas, err := t.mergeManifests(ctx, req.prevMetas, pf, writeFile)
	if err != nil {
		return nil, err
	}
	baseData, err := manifest.EncodeList(baseMetas)
	if err != nil {
		return nil, err
	}
	baseName := pf.next("manifest-list-", "")
	baseSize, err := writeFile(baseName, baseData)
	if err != nil {
		return nil, err
	}
	deltaData, err := manifest.EncodeList(deltaMetas)
	if err != nil {
		return nil, err
	}
	deltaName := pf.next("manifest-list-", "")
	deltaSize, err := writeFile(deltaName, deltaData)
	if err != nil {
		return nil, err
	}

	var total, id int64
	if req.prev != nil {
		total, id = req.prev.TotalRecordCount, req.prev.ID
	}
	zero := int64(0)
	props := req.props
	if props == nil {
		props = map[string]string{}
	}
	snap := &Snapshot{Version: 3, ID: id + 1, SchemaID: t.schema.ID,
		BaseManifestList: baseName, BaseManifestListSize: &baseSize,
		DeltaManifestList: deltaName, DeltaManifestListSize: &deltaSize,
		CommitUser: req.user, CommitIdentifier: req.ident, CommitKind: req.kind,
		TimeMillis: t.now().UnixMilli(), TotalRecordCount: total + delta, DeltaRecordCount: delta,
		ChangelogRecordCount: &zero, Properties: props, NextRowID: &zero}
	if req.prev != nil && req.prev.IndexManifest != nil {
		im := *req.prev.IndexManifest // carried over by name when no index files change
		snap.IndexManifest = &im
	}
	data, _ := snap.MarshalJSON()
	sp := t.snapshotPath(snap.ID)
	if err := t.syncBeforePublish(ctx, req.entries); err != nil {
		return nil, err
	}
	at := t.cat.now()
	if err := t.fio.CreateExclusive(ctx, sp, data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lake: %s: snapshot %d created concurrently: %w", t.FullName(), snap.ID, ErrCommitConflict)
		}
		return nil, fmt.Errorf("lake: %s: write snapshot %s: %w", t.FullName(), sp, err)
	}
	if err := t.syncPublished(ctx, snap.ID, written); err != nil {
		return nil, err
	}
	t.committed(snap, at) // this process's next read uses it without asking the store
	_ = t.fio.WriteAtomic(ctx, filepath.Join(t.snapshotDir(), "LATEST"), []byte(strconv.FormatInt(snap.ID, 10)))
	return snap, nil
}

// manifestMeta builds the manifest-list record of a manifest.
func (t *Table) manifestMeta(name string, size int64, entries []manifest.Entry) manifest.FileMeta {
	ts := t.schema
	partIdx, _ := ts.FieldIndexes(ts.PartitionKeys)
	types := make([]paimontype.DataType, len(partIdx))
	for i, p := range partIdx {
		types[i] = ts.Fields[p].Type
	}
	st := newStatsCollector(types)
	m := manifest.FileMeta{FileName: name, FileSize: size, SchemaID: ts.ID}
	var minB, maxB, minL, maxL int32
	for i, e := range entries {
		if e.Kind == manifest.FileKindAdd {
			m.NumAddedFiles++
		} else {
			m.NumDeletedFiles++
		}
		_, row, _ := manifest.DeserializeBinaryRow(e.Partition)
		vals, _ := manifest.DecodeBinaryRow(types, row)
		st.add(vals)
		if i == 0 || e.Bucket < minB {
			minB = e.Bucket
		}
		if i == 0 || e.Bucket > maxB {
			maxB = e.Bucket
		}
		if i == 0 || e.File.Level < minL {
			minL = e.File.Level
		}
		if i == 0 || e.File.Level > maxL {
			maxL = e.File.Level
		}
		if e.File.SchemaID > m.SchemaID {
			m.SchemaID = e.File.SchemaID
		}
	}
	m.PartitionStats = st.stats()
	m.MinBucket, m.MaxBucket, m.MinLevel, m.MaxLevel = &minB, &maxB, &minL, &maxL
	return m
}

// statsCollector gathers min/max/null counts of atomic columns; stats()
// applies each column's statistics mode (statsmode.go).
type statsCollector struct {
	types    []paimontype.DataType
	modes    []statsMode // nil: full
	min, max []any
	nulls    []int64
	unknown  []bool // bounds that cannot be known (nil: none)
}

func newStatsCollector(types []paimontype.DataType) *statsCollector {
	return &statsCollector{types: types, min: make([]any, len(types)), max: make([]any, len(types)), nulls: make([]int64, len(types))}
}

func (s *statsCollector) add(vals []any) {
	for i, v := range vals {
		if v == nil {
			s.nulls[i]++
			continue
		}
		s.fold(i, v)
	}
}

func (s *statsCollector) stats() manifest.SimpleStats {
	nc := make([]*int64, len(s.nulls))
	mins, maxs := make([]any, len(s.types)), make([]any, len(s.types))
	for i := range s.nulls {
		m := fullStats
		if s.modes != nil {
			m = s.modes[i]
		}
		if m.kind == statsNone {
			continue
		}
		v := s.nulls[i]
		nc[i] = &v
		if s.unknown == nil || !s.unknown[i] {
			mins[i], maxs[i] = applyMode(m, s.types[i], s.min[i], s.max[i])
		}
	}
	return manifest.SimpleStats{
		MinValues:  manifest.SerializeBinaryRow(len(s.types), manifest.EncodeBinaryRow(s.types, mins)),
		MaxValues:  manifest.SerializeBinaryRow(len(s.types), manifest.EncodeBinaryRow(s.types, maxs)),
		NullCounts: nc,
	}
}

func emptyStats() manifest.SimpleStats {
	return manifest.SimpleStats{MinValues: emptyRowBytes, MaxValues: emptyRowBytes, NullCounts: []*int64{}}
}

// encodedFile is a data file encode wrote for the rows of group g.
type encodedFile struct {
	g    *writeGroup
	meta *manifest.DataFileMeta
	path string
}

// encode writes the buffered rows of groups as level-0 data files, as
// background tasks, at most workers at once; base(g) is the sequence number
// before g's first buffered row. The files come in group order, a group's in
// row order. On failure the files written so far are returned with the
// error (for cleanup).
func (w *Write) encode(ctx context.Context, groups []*writeGroup, workers int, codec compress.Compression, base func(*writeGroup) int64) ([]encodedFile, error) {
	pk := w.t.schema.HasPrimaryKey()
	pieces := splitAppendGroups(groups, pk, workers, base)
	files := make([][]encodedFile, len(pieces))
	errs := make([]error, len(pieces))
	slots := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i, p := range pieces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			background.Do(func() {
				if errs[i] = ctx.Err(); errs[i] != nil {
					return
				}
				if pk {
					files[i], errs[i] = w.writePKGroup(ctx, p.rows, p.base, codec, w.dataPF)
					return
				}
				f := encodedFile{g: p.of}
				f.meta, f.path, errs[i] = w.flushGroup(ctx, p.rows, p.base, codec, w.dataPF)
				files[i] = []encodedFile{f}
			})
		}()
	}
	wg.Wait()
	var out []encodedFile
	for _, fs := range files {
		for _, f := range fs {
			if f.path != "" {
				out = append(out, f)
			}
		}
	}
	return out, errors.Join(errs...)
}

// appendSplitRows is the fewest rows a file split off a large append group
// holds (one Parquet row group).
const appendSplitRows = maxRowGroupRows

// groupPiece is rows of group of to encode as one file, after sequence
// number base.
type groupPiece struct {
	of   *writeGroup
	rows *writeGroup
	base int64
}

// splitAppendGroups returns the files to encode: the buffered rows of every
// group that has some, each with its sequence base (the highest sequence
// number before its rows). With fewer groups than cores, a large group of an
// append table is cut into consecutive runs of whole batches, one file each
// with consecutive sequence ranges, so that a round of one busy bucket is
// encoded on every core. Primary-key groups stay whole: one sorted file per
// bucket and round keeps level 0 small.
func splitAppendGroups(groups []*writeGroup, pk bool, cores int, baseOf func(*writeGroup) int64) []groupPiece {
	var out []groupPiece
	busy := 0
	for _, g := range groups {
		if len(g.recs) > 0 || len(g.runs) > 0 {
			busy++
		}
	}
	for _, g := range groups {
		if len(g.recs) == 0 && len(g.runs) == 0 {
			continue
		}
		base := baseOf(g)
		var rows int64
		for _, r := range g.recs {
			rows += r.NumRows()
		}
		parts := int64(1)
		if !pk && busy < cores {
			parts = min(int64(cores), rows/appendSplitRows)
		}
		if parts <= 1 {
			out = append(out, groupPiece{of: g, rows: g, base: base})
			continue
		}
		per := (rows + parts - 1) / parts
		cur := &writeGroup{partition: g.partition, partVals: g.partVals, bucket: g.bucket}
		var n int64
		for _, r := range g.recs {
			cur.recs = append(cur.recs, r)
			n += r.NumRows()
			if n >= per {
				out = append(out, groupPiece{of: g, rows: cur, base: base})
				base += n
				cur, n = &writeGroup{partition: g.partition, partVals: g.partVals, bucket: g.bucket}, 0
			}
		}
		if len(cur.recs) > 0 {
			out = append(out, groupPiece{of: g, rows: cur, base: base})
		}
	}
	return out
}

// Flush encodes the rows an append table's write holds into level-0 data
// files now, at most workers files at once (a group of many rows is cut into
// up to workers files), and drops them from memory. Commit publishes these
// files with the rest, in row order. A large commit can so be encoded while
// its rows arrive, in bounded memory, instead of all at once. A failed
// Flush removes what it wrote and keeps the rows.
//
// A primary-key write's Flush hands its rows to a background job that
// sorts each bucket's into a run spilled to the spill directory (at most
// workers jobs at once: Flush waits for one to finish first), and Commit
// merges a bucket's runs into its file (sortedrun.go); each file still
// holds the commit's rows of a bucket sorted by key. After a failed job
// (reported by the next Flush or Commit) the write can only be aborted.
func (w *Write) Flush(ctx context.Context, workers int) error {
	if w.closed {
		return fmt.Errorf("lake: write already committed or aborted")
	}
	if w.buffered == 0 {
		return nil
	}
	if w.t.schema.HasPrimaryKey() {
		return w.spill(ctx, w.sortedGroups(), workers)
	}
	codec, err := w.fileCodec()
	if err != nil {
		return err
	}
	groups := w.sortedGroups()
	files, err := w.encode(ctx, groups, workers, codec, func(g *writeGroup) int64 { return g.flushedRows() - 1 })
	if err != nil {
		for _, f := range files {
			_ = w.t.fio.Remove(context.WithoutCancel(ctx), f.path)
		}
		return err
	}
	for _, f := range files {
		f.g.flushed = append(f.g.flushed, flushedFile{meta: f.meta, path: f.path})
	}
	for _, g := range groups {
		g.releaseRows()
	}
	w.buffered, w.bufferedBytes = 0, 0
	return nil
}

// fileCodec is the compression of the table's data files; only Parquet
// files are written.
func (w *Write) fileCodec() (compress.Compression, error) {
	t := w.t
	codec, err := compressionFor(t.schema.Options["file.compression"])
	if err != nil {
		return codec, err
	}
	if f, ok := t.schema.Options["file.format"]; ok && f != defaultFileFormat {
		return codec, fmt.Errorf("lake: %s: file.format %q is not supported (only parquet)", t.FullName(), f)
	}
	return codec, nil
}

// flushGroup writes one (partition, bucket) group as one level-0 file. bucketMaxSeq is the highest
// sequence number already in the bucket (-1 if none). Append tables only (primary-key groups:
// writePKGroup).
func (w *Write) flushGroup(ctx context.Context, g *writeGroup, bucketMaxSeq int64, codec compress.Compression, pf *pathFactory) (*manifest.DataFileMeta, string, error) {
	t := w.t
	ts := t.schema
	rec, err := arrowutil.ConcatRecords(g.recs, w.mem)
	if err != nil {
		return nil, "", err
	}
	defer rec.Release()
	n := int(rec.NumRows())

	meta := &manifest.DataFileMeta{SchemaID: ts.ID, Level: 0, ExtraFiles: []string{}}
	var fileSource int32
	meta.FileSource = &fileSource
	now := time.Now()
	ct := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(), now.Nanosecond()/1e6*1e6, time.UTC)
	meta.CreationTime = &ct

	out := array.NewRecordBatch(ts.ArrowSchema(), rec.Columns(), rec.NumRows())
	defer out.Release()
	meta.MinSequenceNumber = bucketMaxSeq + 1
	meta.MaxSequenceNumber = bucketMaxSeq + int64(n)
	meta.MinKey, meta.MaxKey = emptyRowBytes, emptyRowBytes
	meta.KeyStats = emptyStats()
	var zero int64
	meta.DeleteRowCount = &zero

	path, err := t.writeDataFile(ctx, out, meta, g.partVals, g.bucket, codec, pf, w.mem)
	return meta, path, err
}

// pkFileRecord lays out a primary-key data file: _KEY_<k> columns (taken from rec at keyIdx),
// _SEQUENCE_NUMBER, _VALUE_KIND, then the table columns of rec.
func pkFileRecord(ts *paimontype.TableSchema, rec arrow.RecordBatch, keyIdx []int, seqArr, kindArr arrow.Array) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for i, name := range ts.TrimmedPrimaryKeys() {
		f := ts.Fields[ts.FieldIndex(name)]
		fields = append(fields, paimontype.ArrowField(keyFieldPrefix+name, f.Type, keyFieldIDStart+f.ID))
		cols = append(cols, rec.Column(keyIdx[i]))
	}
	fields = append(fields, arrow.Field{Name: seqNumberField, Type: arrow.PrimitiveTypes.Int64, Metadata: paimontype.FieldIDMetadata(seqNumberFieldID)},
		arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8, Metadata: paimontype.FieldIDMetadata(valueKindFieldID)})
	cols = append(cols, seqArr, kindArr)
	for i, f := range ts.ArrowSchema().Fields() {
		fields = append(fields, f)
		cols = append(cols, rec.Column(i))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// writeDataFile computes the value stats of out (whose last columns are the table columns), names
// the file, writes it under the bucket directory and completes meta (FileName, FileSize, RowCount,
// ValueStats). It returns the path it wrote to (also on failure, for cleanup).
func (t *Table) writeDataFile(ctx context.Context, out arrow.RecordBatch, meta *manifest.DataFileMeta, partVals []any, bucket int32,
	codec compress.Compression, pf *pathFactory, mem memory.Allocator) (string, error) {
	ts := t.schema
	statCols, statTypes, statNames, statModes := t.valueStatsColumns()
	// value stats are over the table columns as written (the last ts.Fields columns of out)
	vs := newStatsCollector(statTypes)
	vs.modes = statModes
	off := int(out.NumCols()) - len(ts.Fields)
	for i, c := range statCols {
		vs.addColumn(i, out.Column(off+c))
	}
	meta.ValueStats = vs.stats()
	meta.ValueStatsCols = statNames
	meta.RowCount = out.NumRows()

	name := pf.next(dataFilePrefix(ts), ".parquet")
	meta.FileName = name
	partTypes := make([]paimontype.DataType, len(ts.PartitionKeys))
	for i, k := range ts.PartitionKeys {
		partTypes[i] = ts.Fields[ts.FieldIndex(k)].Type
	}
	path := t.dataFilePath(partTypes, partVals, bucket, name)
	size, err := writeParquet(ctx, t.fio, path, out, codec, t.zstdLevel(), mem)
	if err != nil {
		return path, fmt.Errorf("lake: %s: write data file %s: %w", t.FullName(), path, err)
	}
	meta.FileSize = size
	return path, nil
}

// valueStatsColumns are the columns a data file has value statistics for
// (those of types with min/max statistics and a stats mode other than none):
// their indexes, types and modes, and their names as _VALUE_STATS_COLS, nil
// when that is every column.
func (t *Table) valueStatsColumns() (idx []int, types []paimontype.DataType, names []string, modes []statsMode) {
	names = []string{}
	for i, f := range t.schema.Fields {
		m := t.columnStatsMode(f.Name, defaultStats, true)
		if statsSupported(f.Type) && m.kind != statsNone {
			idx = append(idx, i)
			types = append(types, f.Type)
			names = append(names, f.Name)
			modes = append(modes, m)
		}
	}
	if len(idx) == len(t.schema.Fields) {
		names = nil
	}
	return idx, types, names, modes
}

func dataFilePrefix(ts *paimontype.TableSchema) string {
	if p, ok := ts.Options["data-file.prefix"]; ok {
		return p
	}
	return "data-"
}

func (t *Table) partitionDefaultName() string {
	if v, ok := t.schema.Options["partition.default-name"]; ok {
		return v
	}
	return defaultPartitionName
}

// bucketDir is <table>/<partition path>bucket-N.
func (t *Table) bucketDir(partTypes []paimontype.DataType, partVals []any, bucket int32) string {
	rel := partitionPath(t.schema.PartitionKeys, partTypes, partVals, t.partitionDefaultName())
	return filepath.Join(t.path, filepath.FromSlash(rel), "bucket-"+strconv.Itoa(int(bucket)))
}

func (t *Table) dataFilePath(partTypes []paimontype.DataType, partVals []any, bucket int32, name string) string {
	return filepath.Join(t.bucketDir(partTypes, partVals, bucket), name)
}
