package lake

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/google/uuid"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// CompactOptions controls Compact.
type CompactOptions struct {
	CommitUser string
	// Identifier is the snapshot's commitIdentifier. 0: the latest snapshot's identifier when it
	// was committed by the same CommitUser (as Java does for the COMPACT snapshot that follows an
	// APPEND of the same commit), else math.MaxInt64 (Java's batch identifier).
	Identifier int64
	// ExpectedLatest is the snapshot id planned against (0 = the table had none); a different
	// latest snapshot gives ErrCommitConflict, as for CommitOptions.
	ExpectedLatest int64
	// MinFiles: a (partition, bucket) is compacted only when it has at least this many data
	// files. 0 means 5 (num-sorted-run.compaction-trigger).
	MinFiles int
	// MaxFiles (append tables): a run of small files that does not fill a
	// file (85% of the target) would compact into a file that may be small
	// again (below 70%) and be rewritten by the next compaction; such a run
	// is compacted only when its bucket has at least MaxFiles small files
	// (like Paimon's compaction.max.file-num). Runs that fill a file are
	// compacted once MinFiles is reached, so a row of a busy table is
	// rewritten once. 0 compacts every run once MinFiles is reached.
	MaxFiles int
	// TargetFileSize overrides the table's target-file-size for append
	// compaction (0: the table's): files below 70% of it are compacted into
	// files of about it, and an output file's inputs are held in memory.
	TargetFileSize int64
	// Full compacts every bucket (Paimon's full compaction, CALL
	// sys.compact) but one that is a single file at the top level
	// already; MinFiles is then not used.
	Full bool
	// Properties of the COMPACT snapshot. nil carries the latest snapshot's properties forward
	// (flightd keeps its log offsets there); pass an empty map for none.
	Properties map[string]string
}

const defaultCompactMinFiles = 5

// fileSourceCompact is FileSource.COMPACT.
const fileSourceCompact int32 = 1

// maxLevel is num-levels - 1 (num-levels defaults to num-sorted-run.compaction-trigger + 1 = 6).
func (t *Table) maxLevel() (int32, error) {
	trigger, err := t.intOption("num-sorted-run.compaction-trigger", 5)
	if err != nil {
		return 0, err
	}
	n, err := t.intOption("num-levels", trigger+1)
	if err != nil {
		return 0, err
	}
	if n < 2 {
		return 0, fmt.Errorf("lake: %s: num-levels %d must be at least 2", t.FullName(), n)
	}
	return int32(n - 1), nil
}

// Compact fully compacts the primary-key buckets of the latest snapshot that hold at least
// MinFiles data files: all files of such a (partition, bucket) are merged (per key the row with the
// highest sequence number wins; -U/-D rows are dropped, as Paimon does when writing the top level)
// into one sorted, unique-key file at level num-levels - 1 with _FILE_SOURCE = COMPACT, and one
// COMPACT snapshot is committed that DELETEs every input file and ADDs the outputs. The output
// keeps the inputs' minimum and maximum sequence numbers, so later writes still sort above it.
//
// It returns (nil, nil) and commits nothing when no bucket qualifies, and for append tables
// (not compacted yet). A bucket is merged in memory, one at a time. On failure nothing becomes
// visible and the files it wrote are removed; ErrCommitConflict means another snapshot was
// committed (re-plan and retry).
func (t *Table) Compact(ctx context.Context, opts CompactOptions) (snap *Snapshot, err error) {
	if opts.CommitUser == "" {
		return nil, fmt.Errorf("lake: %s: compact needs a CommitUser", t.FullName())
	}
	if err := t.checkWritable(); err != nil {
		return nil, err
	}
	latestID, err := t.latestSnapshotID(ctx)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
	}
	if latestID != opts.ExpectedLatest {
		return nil, fmt.Errorf("lake: %s: latest snapshot is %d, expected %d: %w", t.FullName(), latestID, opts.ExpectedLatest, ErrCommitConflict)
	}
	if !t.schema.HasPrimaryKey() || latestID == 0 {
		return nil, nil
	}
	if ms, ok := t.schema.Options["merge-engine"]; ok && ms != "deduplicate" {
		return nil, fmt.Errorf("lake: %s: compact supports merge-engine deduplicate only, table has %q", t.FullName(), ms)
	}
	if f, ok := t.schema.Options["file.format"]; ok && f != defaultFileFormat {
		return nil, fmt.Errorf("lake: %s: file.format %q is not supported (only parquet)", t.FullName(), f)
	}
	prev, err := t.Snapshot(ctx, latestID)
	if err != nil {
		return nil, err
	}
	live, prevMetas, err := t.dataFiles(ctx, prev)
	if err != nil {
		return nil, err
	}
	minFiles := opts.MinFiles
	if minFiles <= 0 {
		minFiles = defaultCompactMinFiles
	}
	level, err := t.maxLevel()
	if err != nil {
		return nil, err
	}
	codec, err := compressionFor(t.schema.Options["file.compression"])
	if err != nil {
		return nil, err
	}

	order := groupByBucket(live)

	pf := &pathFactory{uuid: uuid.NewString()}
	dataPF := &pathFactory{uuid: uuid.NewString()}
	var written []string
	defer func() {
		if err != nil {
			for _, p := range written {
				_ = t.fio.Remove(context.WithoutCancel(ctx), p)
			}
		}
	}()
	var entries []manifest.Entry
	for _, g := range order {
		skip := len(g.entries) < minFiles
		if opts.Full {
			skip = len(g.entries) == 1 && g.entries[0].File.Level == level
		}
		if skip {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out, path, err := t.compactBucket(ctx, g.partition, g.bucket, g.entries, level, codec, dataPF)
		if path != "" {
			written = append(written, path)
		}
		if err != nil {
			return nil, err
		}
		for _, e := range g.entries {
			d := e
			d.Kind = manifest.FileKindDelete
			entries = append(entries, d)
		}
		if out != nil {
			entries = append(entries, manifest.Entry{Kind: manifest.FileKindAdd, Partition: g.partition, Bucket: g.bucket,
				TotalBuckets: g.entries[0].TotalBuckets, File: *out})
		}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	props := opts.Properties
	if props == nil {
		props = maps.Clone(prev.Properties)
	}
	ident := opts.Identifier
	if ident == 0 {
		ident = math.MaxInt64
		if prev.CommitUser == opts.CommitUser {
			ident = prev.CommitIdentifier
		}
	}
	snap, err = t.commitSnapshot(ctx, commitRequest{prev: prev, prevMetas: prevMetas, entries: entries,
		kind: CommitKindCompact, user: opts.CommitUser, ident: ident, props: props}, pf, &written)
	if err != nil {
		return nil, err
	}
	written = nil
	return snap, nil
}

// compactBucket merges the files of one (partition, bucket) into one file at level. It returns nil
// meta when no row survives (every key deleted).
func (t *Table) compactBucket(ctx context.Context, partition []byte, bucket int32, files []manifest.Entry, level int32,
	codec compress.Compression, pf *pathFactory) (*manifest.DataFileMeta, string, error) {
	ts := t.schema
	mem := memory.DefaultAllocator
	r := &scanReader{t: t, ctx: ctx, mem: mem, schema: ts.ArrowSchema()}
	g := &scanGroup{partition: partition, bucket: bucket}
	minSeq, maxSeq := int64(math.MaxInt64), int64(math.MinInt64)
	for _, e := range files {
		g.files = append(g.files, e.File)
		minSeq = min(minSeq, e.File.MinSequenceNumber)
		maxSeq = max(maxSeq, e.File.MaxSequenceNumber)
	}
	all, want, kept, err := r.mergePK(g)
	if err != nil {
		return nil, "", err
	}
	if all == nil || len(kept) == 0 {
		if all != nil {
			all.Release()
		}
		return nil, "", nil
	}
	defer all.Release()

	// all has the trimmed key columns first, then the other table columns, then seq and kind:
	// rearrange into table order + seq + kind and take the kept rows.
	tableSchema := ts.ArrowSchema()
	cols := make([]arrow.Array, 0, tableSchema.NumFields()+2)
	for _, f := range tableSchema.Fields() {
		for j, wf := range want {
			if wf.Name == f.Name {
				cols = append(cols, all.Column(j))
				break
			}
		}
	}
	fields := append(append([]arrow.Field{}, tableSchema.Fields()...), want[len(want)-2], want[len(want)-1])
	cols = append(cols, all.Column(len(want)-2), all.Column(len(want)-1))
	arranged := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, all.NumRows())
	defer arranged.Release()
	taken, err := takeRecord(ctx, arranged, kept, mem)
	if err != nil {
		return nil, "", err
	}
	defer taken.Release()

	nt := tableSchema.NumFields()
	values := array.NewRecordBatch(tableSchema, taken.Columns()[:nt], taken.NumRows())
	defer values.Release()
	keyNames := ts.TrimmedPrimaryKeys()
	keyIdx := make([]int, len(keyNames))
	keyTypes := make([]paimontype.DataType, len(keyNames))
	for i, n := range keyNames {
		keyIdx[i] = ts.FieldIndex(n)
		keyTypes[i] = ts.Fields[keyIdx[i]].Type
	}
	out := pkFileRecord(ts, values, keyIdx, taken.Column(nt), taken.Column(nt+1))
	defer out.Release()

	keyStats := t.keyStatsCollector(keyNames, keyTypes)
	for i, c := range keyIdx { // the kept rows' keys
		keyStats.addColumn(i, values.Column(c))
	}
	meta := compactedMeta(ts, level, minSeq, maxSeq)
	// values holds the kept rows in key order
	meta.MinKey = manifest.SerializeBinaryRow(len(keyTypes), manifest.EncodeBinaryRow(keyTypes, rowValues(values, keyIdx, keyTypes, 0)))
	meta.MaxKey = manifest.SerializeBinaryRow(len(keyTypes), manifest.EncodeBinaryRow(keyTypes, rowValues(values, keyIdx, keyTypes, int(values.NumRows())-1)))
	meta.KeyStats = keyStats.stats()
	_, partVals, err := t.partitionValues(partition)
	if err != nil {
		return nil, "", err
	}
	path, err := t.writeDataFile(ctx, out, meta, partVals, bucket, codec, pf, mem)
	return meta, path, err
}

// compactedMeta is the metadata of a file compaction writes (its name, size,
// rows and statistics are filled in when it is written): the current schema,
// _FILE_SOURCE COMPACT, the inputs' sequence-number range, created now (to
// the millisecond, as Java stores it).
func compactedMeta(ts *paimontype.TableSchema, level int32, minSeq, maxSeq int64) *manifest.DataFileMeta {
	var zero int64
	source := fileSourceCompact
	now := time.Now()
	ct := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(), now.Nanosecond()/1e6*1e6, time.UTC)
	return &manifest.DataFileMeta{SchemaID: ts.ID, Level: level, ExtraFiles: []string{}, FileSource: &source, CreationTime: &ct,
		MinSequenceNumber: minSeq, MaxSequenceNumber: maxSeq, DeleteRowCount: &zero}
}

// partitionTypes are the types of the table's partition columns, in order.
func (t *Table) partitionTypes() []paimontype.DataType {
	ts := t.schema
	types := make([]paimontype.DataType, len(ts.PartitionKeys))
	for i, k := range ts.PartitionKeys {
		types[i] = ts.Fields[ts.FieldIndex(k)].Type
	}
	return types
}

// partitionValues decodes a serialized partition row into its values, with
// the partition columns' types.
func (t *Table) partitionValues(partition []byte) ([]paimontype.DataType, []any, error) {
	_, prow, err := manifest.DeserializeBinaryRow(partition)
	if err != nil {
		return nil, nil, err
	}
	partTypes := t.partitionTypes()
	partVals, err := manifest.DecodeBinaryRow(partTypes, prow)
	return partTypes, partVals, err
}
