package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/google/uuid"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lake/manifest"
)

// CompactAppend compacts the small files of an append table, as Paimon's append compaction does:
// in every (partition, bucket) of the latest snapshot the files smaller than 70% of
// target-file-size (default 256 MiB; Java's compactionFileSize) are rewritten, in sequence-number
// order, into files of about target-file-size, when there are at least MinFiles of them (0: the
// table's compaction.min.file-num, default 5). With MaxFiles set, a run whose output would be
// small again waits until the bucket has MaxFiles small files (see CompactOptions). The new
// files are level 0 with _FILE_SOURCE COMPACT, the current schema and the sequence-number range
// of their inputs; they are committed as one COMPACT snapshot (DELETE of every input, ADD of the
// outputs, deltaRecordCount 0) fenced on ExpectedLatest, carrying the latest snapshot's
// properties forward unless given others.
//
// Rows are kept as they are. Files of the current schema written alike (tiering's rounds) are
// joined without decoding: their Parquet row groups are copied into the new file and their
// statistics merged (concatParquet); others (older schemas, read with the current one; another
// codec; tiny row groups) are decoded and re-encoded, the inputs of one output file in memory
// together. It returns (nil, nil) and commits nothing when no bucket qualifies, and for
// primary-key tables (see Compact). Tables with deletion vectors or row tracking are refused. On failure nothing becomes visible and the files it wrote
// are removed; ErrCommitConflict means another snapshot was committed (re-plan and retry).
func (t *Table) CompactAppend(ctx context.Context, opts CompactOptions) (snap *Snapshot, err error) {
	if opts.CommitUser == "" {
		return nil, fmt.Errorf("lake: %s: compact needs a CommitUser", t.FullName())
	}
	if err := t.checkWritable(); err != nil {
		return nil, err
	}
	if strings.EqualFold(strings.TrimSpace(t.schema.Options["row-tracking.enabled"]), "true") ||
		strings.EqualFold(strings.TrimSpace(t.schema.Options["data-evolution.enabled"]), "true") {
		return nil, fmt.Errorf("lake: %s: %w: compacting a table with row tracking", t.FullName(), ErrUnsupported)
	}
	if f, ok := t.schema.Options["file.format"]; ok && f != defaultFileFormat {
		return nil, fmt.Errorf("lake: %s: file.format %q is not supported (only parquet)", t.FullName(), f)
	}
	latestID, err := t.latestSnapshotID(ctx)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
	}
	if latestID != opts.ExpectedLatest {
		return nil, fmt.Errorf("lake: %s: latest snapshot is %d, expected %d: %w", t.FullName(), latestID, opts.ExpectedLatest, ErrCommitConflict)
	}
	if t.schema.HasPrimaryKey() || latestID == 0 {
		return nil, nil
	}
	target, err := t.sizeOption("target-file-size", 256<<20)
	if err != nil {
		return nil, err
	}
	if opts.TargetFileSize > 0 {
		target = opts.TargetFileSize
	}
	if target <= 0 {
		return nil, fmt.Errorf("lake: %s: target-file-size must be positive", t.FullName())
	}
	minFiles := opts.MinFiles
	if minFiles <= 0 {
		if minFiles, err = t.intOption("compaction.min.file-num", defaultCompactMinFiles); err != nil {
			return nil, err
		}
		minFiles = max(minFiles, 2)
	}
	codec, err := compressionFor(t.schema.Options["file.compression"])
	if err != nil {
		return nil, err
	}
	prev, err := t.Snapshot(ctx, latestID)
	if err != nil {
		return nil, err
	}
	live, prevMetas, err := t.dataFiles(ctx, prev)
	if err != nil {
		return nil, err
	}

	small := target / 10 * 7
	var candidates []manifest.Entry
	for _, e := range live {
		if e.File.FileSize >= small {
			continue
		}
		if e.File.FirstRowID != nil {
			return nil, fmt.Errorf("lake: %s: %w: data file %s has a row id (row tracking)", t.FullName(), ErrUnsupported, e.File.FileName)
		}
		candidates = append(candidates, e)
	}
	order := groupByBucket(candidates)

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
		if len(g.entries) < minFiles {
			continue
		}
		sort.Slice(g.entries, func(i, j int) bool {
			return g.entries[i].File.MinSequenceNumber < g.entries[j].File.MinSequenceNumber
		})
		// Consecutive runs of at most target bytes (at least two files each) become one file.
		var bins [][]manifest.DataFileMeta
		var cur []manifest.DataFileMeta
		var size int64
		for _, e := range g.entries {
			f := e.File
			if len(cur) > 0 && size+f.FileSize > target {
				bins = append(bins, cur)
				cur, size = nil, 0
			}
			cur = append(cur, f)
			size += f.FileSize
		}
		bins = append(bins, cur)
		for _, bin := range bins {
			if len(bin) < 2 || (!fillsFile(bin, target) && opts.MaxFiles > 0 && len(g.entries) < opts.MaxFiles) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			out, path, err := t.compactAppendFiles(ctx, g.partition, g.bucket, bin, codec, dataPF)
			if path != "" {
				written = append(written, path)
			}
			if err != nil {
				return nil, err
			}
			for _, f := range bin {
				entries = append(entries, manifest.Entry{Kind: manifest.FileKindDelete, Partition: g.partition, Bucket: g.bucket, TotalBuckets: g.entries[0].TotalBuckets, File: f})
			}
			if out != nil {
				entries = append(entries, manifest.Entry{Kind: manifest.FileKindAdd, Partition: g.partition, Bucket: g.bucket, TotalBuckets: g.entries[0].TotalBuckets, File: *out})
			}
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

// fillsFile says whether files compact into a file that is no longer small
// (below 70% of target). An output comes out a little smaller than its
// inputs together (one footer, larger dictionaries: ~5% for small files),
// so files fill one at 85% of the target.
func fillsFile(files []manifest.DataFileMeta, target int64) bool {
	var size int64
	for _, f := range files {
		size += f.FileSize
	}
	return size >= target/20*17
}

// compactAppendFiles writes files (of one bucket, in sequence order) as one file. It returns nil
// meta when they hold no row. Files that concatParquet can join (the usual case: tiering's own
// files of the current schema) are joined byte for byte with their statistics merged; the others
// are decoded and re-encoded.
func (t *Table) compactAppendFiles(ctx context.Context, partition []byte, bucket int32, files []manifest.DataFileMeta,
	codec compress.Compression, pf *pathFactory) (*manifest.DataFileMeta, string, error) {
	ts := t.schema
	minSeq, maxSeq := int64(math.MaxInt64), int64(math.MinInt64)
	for _, f := range files {
		minSeq = min(minSeq, f.MinSequenceNumber)
		maxSeq = max(maxSeq, f.MaxSequenceNumber)
	}
	meta := compactedMeta(ts, 0, minSeq, maxSeq)
	meta.MinKey, meta.MaxKey, meta.KeyStats = emptyRowBytes, emptyRowBytes, emptyStats()
	partTypes, partVals, err := t.partitionValues(partition)
	if err != nil {
		return nil, "", err
	}
	g := &scanGroup{partition: partition, bucket: bucket}
	r := &scanReader{t: t, ctx: ctx, mem: memory.DefaultAllocator, schema: ts.ArrowSchema()}
	if stats, ok := t.mergedStats(files); ok {
		srcs := make([]string, len(files))
		for i := range files {
			if srcs[i], err = r.filePath(g, &files[i]); err != nil {
				return nil, "", err
			}
		}
		meta.FileName = pf.next(dataFilePrefix(ts), ".parquet")
		path := t.dataFilePath(partTypes, partVals, bucket, meta.FileName)
		size, rows, err := concatParquet(ctx, t.fio, path, srcs, codec)
		switch {
		case err == nil: // rows > 0: concatParquet joins no file of fewer than 16K rows
			meta.FileSize, meta.RowCount, meta.ValueStats = size, rows, stats
			meta.ValueStatsCols = files[0].ValueStatsCols
			return meta, path, nil
		case !errors.Is(err, errNotConcatenable):
			return nil, path, fmt.Errorf("lake: %s: compact into %s: %w", t.FullName(), path, err)
		}
		meta.FileName = ""
	}

	mem := r.mem
	var recs []arrow.RecordBatch
	defer func() {
		for _, rc := range recs {
			rc.Release()
		}
	}()
	for i := range files {
		err := r.readFile(g, &files[i], ts.ArrowSchema().Fields(), func(rec arrow.RecordBatch) {
			if rec.NumRows() == 0 {
				rec.Release()
				return
			}
			recs = append(recs, rec)
		})
		if err != nil {
			return nil, "", err
		}
	}
	if len(recs) == 0 {
		return nil, "", nil
	}
	out, err := arrowutil.ConcatRecords(recs, mem)
	if err != nil {
		return nil, "", err
	}
	defer out.Release()
	path, err := t.writeDataFile(ctx, out, meta, partVals, bucket, codec, pf, mem)
	return meta, path, err
}

// mergedStats returns the value statistics of files joined together, when
// every file is of the current schema, without deleted rows, and has the
// statistics writeDataFile writes (the same columns, min, max and null
// count of each); ok is false otherwise.
func (t *Table) mergedStats(files []manifest.DataFileMeta) (manifest.SimpleStats, bool) {
	ts := t.schema
	_, types, names, modes := t.valueStatsColumns()
	sc := newStatsCollector(types)
	sc.modes = modes
	sc.unknown = make([]bool, len(types))
	for _, f := range files {
		if f.SchemaID != ts.ID || (f.DeleteRowCount != nil && *f.DeleteRowCount != 0) ||
			!slices.Equal(f.ValueStatsCols, names) || len(f.ValueStats.NullCounts) != len(types) {
			return manifest.SimpleStats{}, false
		}
		mins, err1 := decodeStatsRow(types, f.ValueStats.MinValues)
		maxs, err2 := decodeStatsRow(types, f.ValueStats.MaxValues)
		if err1 != nil || err2 != nil || mins == nil || maxs == nil {
			return manifest.SimpleStats{}, false
		}
		for i := range types {
			nc := f.ValueStats.NullCounts[i]
			if nc == nil {
				return manifest.SimpleStats{}, false
			}
			sc.nulls[i] += *nc
			if (mins[i] == nil || maxs[i] == nil) && *nc < f.RowCount {
				// values without bounds (counts mode, or a max that
				// truncation could not bound): the merged file has none
				sc.unknown[i] = true
			}
			if mins[i] != nil {
				sc.fold(i, mins[i])
			}
			if maxs[i] != nil {
				sc.fold(i, maxs[i])
			}
		}
	}
	return sc.stats(), true
}
