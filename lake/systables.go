package lake

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// The rows of Java Paimon's system tables $files, $buckets, $partitions
// and $manifests (as of 1.4), computed from a snapshot's manifests the way
// Java computes them. Values Java renders as text are rendered as Java
// renders them: partitions through its cast to string ({v1, v2}, or
// k=v/k2=v2 in $partitions), keys and statistics through the toString of
// its internal values ([1, a], {a=1, b=x}: dates as days since 1970,
// timestamps as LocalDateTime prints them, doubles as Double.toString).

// FileRow is a data file as $files lists it.
type FileRow struct {
	Partition       string
	Bucket          int32
	FilePath        string // relative to the warehouse (Java shows its full path)
	FileFormat      string
	SchemaID        int64
	Level           int32
	RecordCount     int64
	FileSizeInBytes int64
	MinKey, MaxKey  *string // nil for an append table
	NullValueCounts string
	MinValueStats   string
	MaxValueStats   string
	MinSequence     int64
	MaxSequence     int64
	CreationTime    *time.Time // the wall-clock time the writer recorded
	DeleteRowCount  *int64
	FileSource      *string // APPEND or COMPACT
	FirstRowID      *int64
}

// BucketRow is a bucket as $buckets lists it, and (with Bucket -1) a
// partition as $partitions does.
type BucketRow struct {
	Partition       string
	Bucket          int32
	RecordCount     int64
	FileSizeInBytes int64
	FileCount       int64
	LastUpdateTime  *time.Time // the newest file's creation time
}

// ManifestRow is a manifest as $manifests lists it.
type ManifestRow struct {
	manifest.FileMeta
	MinPartitionStats, MaxPartitionStats *string
}

// Files lists the live data files of snap (all levels), ordered by
// partition, bucket, level and name.
func (t *Table) Files(ctx context.Context, snap *Snapshot) ([]FileRow, error) {
	entries, _, err := t.dataFiles(ctx, snap)
	if err != nil {
		return nil, err
	}
	schemas := map[int64]*paimontype.TableSchema{t.schema.ID: t.schema}
	schemaOf := func(id int64) (*paimontype.TableSchema, error) {
		if s, ok := schemas[id]; ok {
			return s, nil
		}
		s, err := t.SchemaByID(ctx, id)
		if err != nil {
			return nil, err
		}
		schemas[id] = s
		return s, nil
	}
	out := make([]FileRow, 0, len(entries))
	for _, e := range entries {
		f := e.File
		ptypes, pvals, err := t.partitionValues(e.Partition)
		if err != nil {
			return nil, err
		}
		fs, err := schemaOf(f.SchemaID)
		if err != nil {
			return nil, err
		}
		dir := partitionPath(t.schema.PartitionKeys, ptypes, pvals, t.partitionDefaultName())
		r := FileRow{
			Partition: castRowString(ptypes, pvals), Bucket: e.Bucket, SchemaID: f.SchemaID, Level: f.Level,
			FilePath:    path.Join(t.db+".db", t.name, dir, "bucket-"+strconv.Itoa(int(e.Bucket)), f.FileName),
			RecordCount: f.RowCount, FileSizeInBytes: f.FileSize, MinSequence: f.MinSequenceNumber, MaxSequence: f.MaxSequenceNumber,
			CreationTime: f.CreationTime, DeleteRowCount: f.DeleteRowCount, FirstRowID: f.FirstRowID,
		}
		if f.ExternalPath != nil {
			r.FilePath = *f.ExternalPath
		}
		if i := strings.LastIndexByte(f.FileName, '.'); i >= 0 {
			r.FileFormat = f.FileName[i+1:]
		}
		if f.FileSource != nil {
			s := "APPEND"
			if *f.FileSource == 1 {
				s = "COMPACT"
			}
			r.FileSource = &s
		}
		if keys := fs.TrimmedPrimaryKeys(); len(keys) > 0 {
			types := make([]paimontype.DataType, len(keys))
			for i, k := range keys {
				types[i] = fs.Fields[fs.FieldIndex(k)].Type
			}
			if r.MinKey, err = keyString(types, f.MinKey); err != nil {
				return nil, fmt.Errorf("lake: %s: min key of %s: %w", t.FullName(), f.FileName, err)
			}
			if r.MaxKey, err = keyString(types, f.MaxKey); err != nil {
				return nil, fmt.Errorf("lake: %s: max key of %s: %w", t.FullName(), f.FileName, err)
			}
		}
		if r.NullValueCounts, r.MinValueStats, r.MaxValueStats, err = t.statsStrings(fs, &f); err != nil {
			return nil, fmt.Errorf("lake: %s: statistics of %s: %w", t.FullName(), f.FileName, err)
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.Bucket != b.Bucket {
			return a.Bucket < b.Bucket
		}
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		return a.FilePath < b.FilePath
	})
	return out, nil
}

// BucketStats sums the live files of snap per (partition, bucket), or per
// partition with byPartition (Bucket -1 then, and the partition as
// k=v/k2=v2, null values as partition.default-name), ordered by partition
// and bucket.
func (t *Table) BucketStats(ctx context.Context, snap *Snapshot, byPartition bool) ([]BucketRow, error) {
	entries, _, err := t.dataFiles(ctx, snap)
	if err != nil {
		return nil, err
	}
	type key struct {
		part   string
		bucket int32
	}
	sums := map[key]*BucketRow{}
	var order []key
	for _, e := range entries {
		types, vals, err := t.partitionValues(e.Partition)
		if err != nil {
			return nil, err
		}
		k := key{castRowString(types, vals), e.Bucket}
		if byPartition {
			k = key{t.partitionSpecString(types, vals), -1}
		}
		r := sums[k]
		if r == nil {
			r = &BucketRow{Partition: k.part, Bucket: k.bucket}
			sums[k] = r
			order = append(order, k)
		}
		r.RecordCount += e.File.RowCount
		r.FileSizeInBytes += e.File.FileSize
		r.FileCount++
		if ct := e.File.CreationTime; ct != nil && (r.LastUpdateTime == nil || ct.After(*r.LastUpdateTime)) {
			c := *ct
			r.LastUpdateTime = &c
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].part != order[j].part {
			return order[i].part < order[j].part
		}
		return order[i].bucket < order[j].bucket
	})
	out := make([]BucketRow, len(order))
	for i, k := range order {
		out[i] = *sums[k]
	}
	return out, nil
}

// Manifests lists the manifests of snap: base, then delta, then
// changelog, each list in its order.
func (t *Table) Manifests(ctx context.Context, snap *Snapshot) ([]ManifestRow, error) {
	if snap == nil {
		return nil, nil
	}
	lists := []string{snap.BaseManifestList, snap.DeltaManifestList}
	if snap.ChangelogManifestList != nil {
		lists = append(lists, *snap.ChangelogManifestList)
	}
	ptypes := t.partitionTypes()
	var out []ManifestRow
	for _, l := range lists {
		if l == "" {
			continue
		}
		metas, err := t.readManifestList(ctx, l)
		if err != nil {
			return nil, err
		}
		for _, m := range metas {
			r := ManifestRow{FileMeta: m}
			for _, side := range []struct {
				row []byte
				dst **string
			}{{m.PartitionStats.MinValues, &r.MinPartitionStats}, {m.PartitionStats.MaxValues, &r.MaxPartitionStats}} {
				if side.row == nil {
					continue
				}
				_, row, err := manifest.DeserializeBinaryRow(side.row)
				if err != nil {
					return nil, err
				}
				vals, err := manifest.DecodeBinaryRow(ptypes, row)
				if err != nil {
					return nil, err
				}
				s := castRowString(ptypes, vals)
				*side.dst = &s
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// partitionSpecString renders a partition as $partitions does:
// k=v/k2=v2, a null value as partition.default-name.
func (t *Table) partitionSpecString(types []paimontype.DataType, vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		s := t.partitionDefaultName()
		if v != nil {
			s = castString(types[i], v)
		}
		parts[i] = t.schema.PartitionKeys[i] + "=" + s
	}
	return strings.Join(parts, "/")
}

// castRowString is Java's RowToStringCastRule: {v1, v2}, null as null.
func castRowString(types []paimontype.DataType, vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			parts[i] = "null"
			continue
		}
		parts[i] = castString(types[i], v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// castString is Java's cast of a value to STRING: dates as yyyy-MM-dd,
// timestamps as yyyy-MM-dd HH:mm:ss[.fff], the rest as internalString.
func castString(t paimontype.DataType, v any) string {
	switch t.Root {
	case paimontype.TypeDate:
		if d, ok := v.(int32); ok {
			return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
		}
	case paimontype.TypeTimestamp, paimontype.TypeTimestampLTZ:
		if ts, ok := v.(manifest.Timestamp); ok {
			tm := time.UnixMilli(ts.Millis).UTC().Add(time.Duration(ts.NanoOfMilli))
			s := tm.Format("2006-01-02 15:04:05")
			if p := t.Precision; p > 0 {
				frac := fmt.Sprintf("%09d", tm.Nanosecond())[:min(p, 9)]
				s += "." + frac
			}
			return s
		}
	}
	return internalString(v)
}

// internalString is the toString of Java Paimon's internal value: what
// Arrays.toString and a map's toString print in $files (the legacy
// partition name's rendering; bytes as Java's identity string would not be
// reproducible, so as their text).
func internalString(v any) string {
	if v == nil {
		return "null"
	}
	return *legacyPartitionString(paimontype.DataType{}, v)
}

// keyString renders a key row as Arrays.toString of its internal values:
// [1, a]. A key without fields is nil.
func keyString(types []paimontype.DataType, row []byte) (*string, error) {
	if len(types) == 0 || row == nil {
		return nil, nil
	}
	_, r, err := manifest.DeserializeBinaryRow(row)
	if err != nil {
		return nil, err
	}
	vals, err := manifest.DecodeBinaryRow(types, r)
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = internalString(v)
	}
	s := "[" + strings.Join(parts, ", ") + "]"
	return &s, nil
}

// statsStrings renders a file's value statistics as $files does: maps by
// the current schema's column names in name order, a file's statistics
// evolved to them by field id (a column the file does not have: no
// minimum or maximum, every row null), a column without statistics null.
func (t *Table) statsStrings(fs *paimontype.TableSchema, f *manifest.DataFileMeta) (nulls, mins, maxs string, err error) {
	cols := f.ValueStatsCols
	if cols == nil {
		for _, fd := range fs.Fields {
			cols = append(cols, fd.Name)
		}
	}
	types := make([]paimontype.DataType, len(cols))
	ids := make([]int, len(cols))
	for i, c := range cols {
		j := fs.FieldIndex(c)
		if j < 0 {
			return "", "", "", fmt.Errorf("statistics of unknown column %q", c)
		}
		types[i], ids[i] = fs.Fields[j].Type, fs.Fields[j].ID
	}
	var minVals, maxVals []any
	if len(cols) > 0 && f.ValueStats.MinValues != nil {
		if minVals, err = statsRow(types, f.ValueStats.MinValues); err != nil {
			return
		}
		if maxVals, err = statsRow(types, f.ValueStats.MaxValues); err != nil {
			return
		}
	}
	byID := map[int]int{}
	for i, id := range ids {
		byID[id] = i
	}
	names := make([]string, len(t.schema.Fields))
	for i, fd := range t.schema.Fields {
		names[i] = fd.Name
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return names[order[a]] < names[order[b]] })
	var nb, mnb, mxb strings.Builder
	for n, i := range order {
		if n > 0 {
			nb.WriteString(", ")
			mnb.WriteString(", ")
			mxb.WriteString(", ")
		}
		fd := t.schema.Fields[i]
		fmt.Fprintf(&nb, "%s=", fd.Name)
		fmt.Fprintf(&mnb, "%s=", fd.Name)
		fmt.Fprintf(&mxb, "%s=", fd.Name)
		j, has := byID[fd.ID]
		if !has {
			if hasFieldID(fs, fd.ID) {
				nb.WriteString("null") // the file has the column without statistics
			} else {
				nb.WriteString(strconv.FormatInt(f.RowCount, 10)) // added after the file
			}
			mnb.WriteString("null")
			mxb.WriteString("null")
			continue
		}
		if j < len(f.ValueStats.NullCounts) && f.ValueStats.NullCounts[j] != nil {
			nb.WriteString(strconv.FormatInt(*f.ValueStats.NullCounts[j], 10))
		} else {
			nb.WriteString("null")
		}
		mnb.WriteString(statValue(minVals, j))
		mxb.WriteString(statValue(maxVals, j))
	}
	return "{" + nb.String() + "}", "{" + mnb.String() + "}", "{" + mxb.String() + "}", nil
}

func statValue(vals []any, i int) string {
	if i >= len(vals) {
		return "null"
	}
	return internalString(vals[i])
}

func statsRow(types []paimontype.DataType, b []byte) ([]any, error) {
	_, r, err := manifest.DeserializeBinaryRow(b)
	if err != nil {
		return nil, err
	}
	return manifest.DecodeBinaryRow(types, r)
}

// hasFieldID reports whether the schema has a top-level field of that id.
func hasFieldID(s *paimontype.TableSchema, id int) bool {
	for _, f := range s.Fields {
		if f.ID == id {
			return true
		}
	}
	return false
}
