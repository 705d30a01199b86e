package lakestream

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Paimon's system tables of a table t that flightd serves, with Java Paimon's
// columns (as of 1.4) and values: t$snapshots (one row per snapshot that
// exists), t$schemas (one per schema, the parts as the schema file's JSON)
// and t$options (the latest schema's options). Their TIMESTAMP(3) columns
// are wall-clock times in UTC, where Java shows the JVM's zone.
//
// t$files (the live data files of every level: partition, bucket, path
// relative to the warehouse where Java shows the full path, level, counts,
// keys and statistics as Java renders them), t$manifests, t$partitions
// and t$buckets (sums over the live files) read the latest snapshot, or
// the one the table's time-travel option names, as Java's do. t$tags lists
// the tags (tag/tag-<name>).
const (
	SnapshotsSuffix  = "$snapshots"
	SchemasSuffix    = "$schemas"
	OptionsSuffix    = "$options"
	FilesSuffix      = "$files"
	ManifestsSuffix  = "$manifests"
	PartitionsSuffix = "$partitions"
	BucketsSuffix    = "$buckets"
	// AuditLogSuffix is Paimon's t$audit_log: rowkind, then the table's
	// columns; a primary-key table's newest version of each key with the
	// kind it was stored with (a deleted key that compaction has not
	// dropped yet reads as -D), an append table's rows as +I.
	AuditLogSuffix = "$audit_log"
	// TagsSuffix is Paimon's t$tags: a row per tag, by name.
	TagsSuffix = "$tags"
	// BinlogSuffix is Paimon's t$binlog as its batch read gives it: the
	// rows of t$audit_log with each column's value in an array of one
	// (Paimon packs an update's before and after into an array of two
	// only in a streaming read, which flightd does not serve for it).
	BinlogSuffix = "$binlog"
)

// metaSuffixes lists the system tables.
var metaSuffixes = []string{SnapshotsSuffix, SchemasSuffix, OptionsSuffix, FilesSuffix, ManifestsSuffix, PartitionsSuffix, BucketsSuffix, AuditLogSuffix, TagsSuffix, BinlogSuffix}

// ReservedSuffix returns the suffix of a read-only name derived from a
// table (ViewSuffix or MetaSuffix) that name ends with, or "": no table
// may be named with one.
func ReservedSuffix(name string) string {
	if s := ViewSuffix(name); s != "" {
		return s
	}
	return MetaSuffix(name)
}

// MetaSuffix returns the system-table suffix name ends with, or "".
func MetaSuffix(name string) string {
	lower := strings.ToLower(name)
	for _, s := range metaSuffixes {
		if strings.HasSuffix(lower, s) {
			return s
		}
	}
	return ""
}

func field(name string, t arrow.DataType, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: nullable}
}

var (
	str = arrow.BinaryTypes.String
	i64 = arrow.PrimitiveTypes.Int64
	i32 = arrow.PrimitiveTypes.Int32
	ms  = &arrow.TimestampType{Unit: arrow.Millisecond}
)

// metaSchemas are the system tables' columns.
var metaSchemas = map[string]*arrow.Schema{
	SnapshotsSuffix: arrow.NewSchema([]arrow.Field{
		field("snapshot_id", i64, false), field("schema_id", i64, false), field("commit_user", str, false),
		field("commit_identifier", i64, false), field("commit_kind", str, false), field("commit_time", ms, false),
		field("base_manifest_list", str, false), field("delta_manifest_list", str, false),
		field("changelog_manifest_list", str, true), field("total_record_count", i64, true),
		field("delta_record_count", i64, true), field("changelog_record_count", i64, true),
		field("watermark", i64, true), field("next_row_id", i64, true),
	}, nil),
	SchemasSuffix: arrow.NewSchema([]arrow.Field{
		field("schema_id", i64, false), field("fields", str, false), field("partition_keys", str, false),
		field("primary_keys", str, false), field("options", str, false), field("comment", str, true),
		field("update_time", ms, false),
	}, nil),
	OptionsSuffix: arrow.NewSchema([]arrow.Field{field("key", str, false), field("value", str, false)}, nil),
	TagsSuffix: arrow.NewSchema([]arrow.Field{
		field("tag_name", str, false), field("snapshot_id", i64, false), field("schema_id", i64, false),
		field("commit_time", ms, false), field("record_count", i64, true), field("create_time", ms, true),
		field("time_retained", str, true),
	}, nil),
	FilesSuffix: arrow.NewSchema([]arrow.Field{
		field("partition", str, true), field("bucket", i32, false), field("file_path", str, false),
		field("file_format", str, false), field("schema_id", i64, false), field("level", i32, false),
		field("record_count", i64, false), field("file_size_in_bytes", i64, false),
		field("min_key", str, true), field("max_key", str, true), field("null_value_counts", str, false),
		field("min_value_stats", str, false), field("max_value_stats", str, false),
		field("min_sequence_number", i64, true), field("max_sequence_number", i64, true),
		field("creation_time", ms, true), field("deleteRowCount", i64, true), field("file_source", str, true),
		field("first_row_id", i64, true), field("write_cols", arrow.ListOf(str), true),
	}, nil),
	ManifestsSuffix: arrow.NewSchema([]arrow.Field{
		field("file_name", str, false), field("file_size", i64, false), field("num_added_files", i64, false),
		field("num_deleted_files", i64, false), field("schema_id", i64, false),
		field("min_partition_stats", str, true), field("max_partition_stats", str, true),
		field("min_row_id", i64, true), field("max_row_id", i64, true),
	}, nil),
	PartitionsSuffix: arrow.NewSchema([]arrow.Field{
		field("partition", str, true), field("record_count", i64, false), field("file_size_in_bytes", i64, false),
		field("file_count", i64, false), field("last_update_time", ms, true), field("created_at", ms, true),
		field("created_by", str, true), field("updated_by", str, true), field("options", str, true),
	}, nil),
	BucketsSuffix: arrow.NewSchema([]arrow.Field{
		field("partition", str, true), field("bucket", i32, false), field("record_count", i64, false),
		field("file_size_in_bytes", i64, false), field("file_count", i64, false), field("last_update_time", ms, true),
	}, nil),
}

// MetaSchema is the Arrow schema of the system table suffix of db.name.
func (s *Service) MetaSchema(ctx context.Context, db, name, suffix string) (*arrow.Schema, error) {
	if suffix != AuditLogSuffix && suffix != BinlogSuffix {
		return metaSchemas[suffix], nil
	}
	m, err := s.lookup(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if suffix == BinlogSuffix {
		return binlogSchema(m.schema), nil
	}
	return auditLogSchema(m.schema), nil
}

// binlogSchema is Paimon's BinlogTable's: rowkind, then each column as a
// nullable array of its (nullable) type.
func binlogSchema(table *arrow.Schema) *arrow.Schema {
	fields := []arrow.Field{field("rowkind", str, true)}
	for _, f := range table.Fields() {
		fields = append(fields, field(f.Name, arrow.ListOf(f.Type), true))
	}
	return arrow.NewSchema(fields, nil)
}

func auditLogSchema(table *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{field("rowkind", str, true)}, table.Fields()...), nil)
}

// Meta reads the system table suffix of db.name.
func (s *Service) Meta(ctx context.Context, db, name, suffix string) (array.RecordReader, error) {
	if suffix == AuditLogSuffix || suffix == BinlogSuffix {
		return s.auditLog(ctx, db, name, suffix == BinlogSuffix)
	}
	t, err := s.Table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	sc := metaSchemas[suffix]
	b := array.NewRecordBuilder(s.mem, sc)
	defer b.Release()
	optInt := func(col int, v *int64) {
		if v == nil {
			b.Field(col).AppendNull()
		} else {
			b.Field(col).(*array.Int64Builder).Append(*v)
		}
	}
	switch suffix {
	case SnapshotsSuffix:
		snaps, err := t.Snapshots(ctx)
		if err != nil {
			return nil, err
		}
		for _, sn := range snaps {
			b.Field(0).(*array.Int64Builder).Append(sn.ID)
			b.Field(1).(*array.Int64Builder).Append(sn.SchemaID)
			b.Field(2).(*array.StringBuilder).Append(sn.CommitUser)
			b.Field(3).(*array.Int64Builder).Append(sn.CommitIdentifier)
			b.Field(4).(*array.StringBuilder).Append(sn.CommitKind)
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(sn.TimeMillis))
			b.Field(6).(*array.StringBuilder).Append(sn.BaseManifestList)
			b.Field(7).(*array.StringBuilder).Append(sn.DeltaManifestList)
			if sn.ChangelogManifestList == nil {
				b.Field(8).AppendNull()
			} else {
				b.Field(8).(*array.StringBuilder).Append(*sn.ChangelogManifestList)
			}
			total, delta := sn.TotalRecordCount, sn.DeltaRecordCount
			optInt(9, &total)
			optInt(10, &delta)
			optInt(11, sn.ChangelogRecordCount)
			optInt(12, sn.Watermark)
			optInt(13, sn.NextRowID)
		}
	case SchemasSuffix:
		schemas, err := t.Schemas(ctx)
		if err != nil {
			return nil, err
		}
		for _, ts := range schemas {
			j, err := ts.JSONParts()
			if err != nil {
				return nil, err
			}
			b.Field(0).(*array.Int64Builder).Append(ts.ID)
			b.Field(1).(*array.StringBuilder).Append(j.Fields)
			b.Field(2).(*array.StringBuilder).Append(j.PartitionKeys)
			b.Field(3).(*array.StringBuilder).Append(j.PrimaryKeys)
			b.Field(4).(*array.StringBuilder).Append(j.Options)
			if ts.Comment == "" {
				b.Field(5).AppendNull()
			} else {
				b.Field(5).(*array.StringBuilder).Append(ts.Comment)
			}
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.TimeMillis))
		}
	case FilesSuffix, ManifestsSuffix, PartitionsSuffix, BucketsSuffix:
		if err := s.metaFiles(ctx, db, name, suffix, b); err != nil {
			return nil, err
		}
	case TagsSuffix:
		tags, err := t.Tags(ctx)
		if err != nil {
			return nil, err
		}
		for _, tg := range tags {
			b.Field(0).(*array.StringBuilder).Append(tg.Name)
			b.Field(1).(*array.Int64Builder).Append(tg.Snapshot.ID)
			b.Field(2).(*array.Int64Builder).Append(tg.Snapshot.SchemaID)
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(tg.Snapshot.TimeMillis))
			total := tg.Snapshot.TotalRecordCount
			optInt(4, &total)
			if ct, err := time.Parse("2006-01-02T15:04:05.999999999", tg.CreateTime); err == nil {
				b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(ct.UnixMilli()))
			} else {
				b.Field(5).AppendNull()
			}
			if tg.TimeRetained == "" {
				b.Field(6).AppendNull()
			} else {
				b.Field(6).(*array.StringBuilder).Append(tg.TimeRetained)
			}
		}
	case OptionsSuffix:
		opts := t.Schema().Options
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.Field(0).(*array.StringBuilder).Append(k)
			b.Field(1).(*array.StringBuilder).Append(opts[k])
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(sc, []arrow.RecordBatch{rec})
}

// metaFiles fills b with the rows of t$files, t$manifests, t$partitions or
// t$buckets.
func (s *Service) metaFiles(ctx context.Context, db, name, suffix string, b *array.RecordBuilder) error {
	m, err := s.readTable(ctx, db, name)
	if err != nil {
		return err
	}
	travel, err := s.optionTravel(ctx, m, db, name, false)
	if err != nil {
		return err
	}
	snap, unpin, err := s.pinSnapshotAt(ctx, m, db, name, travel)
	if err != nil {
		return err
	}
	defer unpin()
	strOrNull := func(col int, v *string) {
		if v == nil {
			b.Field(col).AppendNull()
		} else {
			b.Field(col).(*array.StringBuilder).Append(*v)
		}
	}
	intOrNull := func(col int, v *int64) {
		if v == nil {
			b.Field(col).AppendNull()
		} else {
			b.Field(col).(*array.Int64Builder).Append(*v)
		}
	}
	timeOrNull := func(col int, v *time.Time) {
		if v == nil {
			b.Field(col).AppendNull()
		} else {
			// a wall-clock time: its digits as they were written
			wall := time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
			b.Field(col).(*array.TimestampBuilder).Append(arrow.Timestamp(wall.UnixMilli()))
		}
	}
	switch suffix {
	case FilesSuffix:
		files, err := m.table.Files(ctx, snap)
		if err != nil {
			return err
		}
		for _, f := range files {
			b.Field(0).(*array.StringBuilder).Append(f.Partition)
			b.Field(1).(*array.Int32Builder).Append(f.Bucket)
			b.Field(2).(*array.StringBuilder).Append(f.FilePath)
			b.Field(3).(*array.StringBuilder).Append(f.FileFormat)
			b.Field(4).(*array.Int64Builder).Append(f.SchemaID)
			b.Field(5).(*array.Int32Builder).Append(f.Level)
			b.Field(6).(*array.Int64Builder).Append(f.RecordCount)
			b.Field(7).(*array.Int64Builder).Append(f.FileSizeInBytes)
			strOrNull(8, f.MinKey)
			strOrNull(9, f.MaxKey)
			b.Field(10).(*array.StringBuilder).Append(f.NullValueCounts)
			b.Field(11).(*array.StringBuilder).Append(f.MinValueStats)
			b.Field(12).(*array.StringBuilder).Append(f.MaxValueStats)
			intOrNull(13, &f.MinSequence)
			intOrNull(14, &f.MaxSequence)
			timeOrNull(15, f.CreationTime)
			intOrNull(16, f.DeleteRowCount)
			strOrNull(17, f.FileSource)
			intOrNull(18, f.FirstRowID)
			b.Field(19).AppendNull()
		}
	case ManifestsSuffix:
		mans, err := m.table.Manifests(ctx, snap)
		if err != nil {
			return err
		}
		for _, mf := range mans {
			b.Field(0).(*array.StringBuilder).Append(mf.FileName)
			b.Field(1).(*array.Int64Builder).Append(mf.FileSize)
			b.Field(2).(*array.Int64Builder).Append(mf.NumAddedFiles)
			b.Field(3).(*array.Int64Builder).Append(mf.NumDeletedFiles)
			b.Field(4).(*array.Int64Builder).Append(mf.SchemaID)
			strOrNull(5, mf.MinPartitionStats)
			strOrNull(6, mf.MaxPartitionStats)
			b.Field(7).AppendNull()
			b.Field(8).AppendNull()
		}
	case PartitionsSuffix, BucketsSuffix:
		rows, err := m.table.BucketStats(ctx, snap, suffix == PartitionsSuffix)
		if err != nil {
			return err
		}
		for _, r := range rows {
			col := 0
			b.Field(col).(*array.StringBuilder).Append(r.Partition)
			col++
			if suffix == BucketsSuffix {
				b.Field(col).(*array.Int32Builder).Append(r.Bucket)
				col++
			}
			b.Field(col).(*array.Int64Builder).Append(r.RecordCount)
			b.Field(col + 1).(*array.Int64Builder).Append(r.FileSizeInBytes)
			b.Field(col + 2).(*array.Int64Builder).Append(r.FileCount)
			timeOrNull(col+3, r.LastUpdateTime)
			for c := col + 4; c < b.Schema().NumFields(); c++ {
				b.Field(c).AppendNull()
			}
		}
	}
	return nil
}

// auditLog reads t$audit_log: the lake table (at the snapshot a
// time-travel option names, as t), each row with its kind.
func (s *Service) auditLog(ctx context.Context, db, name string, binlog bool) (array.RecordReader, error) {
	m, err := s.readTable(ctx, db, name)
	if err != nil {
		return nil, err
	}
	pk := len(m.pk) > 0
	r, err := s.ScanWith(ctx, db, name, ScanOptions{KeepKinds: pk})
	if err != nil {
		return nil, err
	}
	k := &kindReader{r: r, schema: auditLogSchema(m.schema), pk: pk, mem: s.mem}
	if binlog {
		k.schema, k.binlog = binlogSchema(m.schema), true
	}
	k.refs.Store(1)
	return k, nil
}

// rowKinds spells Paimon's RowKind bytes.
var rowKinds = [4]string{"+I", "-U", "+U", "-D"}

// kindReader puts each row's kind first: from the last column
// (_VALUE_KIND) of a KeepKinds scan, or +I.
type kindReader struct {
	r      array.RecordReader
	schema *arrow.Schema
	pk     bool
	binlog bool // each column's values in arrays of one (t$binlog)
	mem    memory.Allocator
	refs   atomic.Int64
	cur    arrow.RecordBatch
	err    error
}

func (k *kindReader) Retain() { k.refs.Add(1) }
func (k *kindReader) Release() {
	if k.refs.Add(-1) > 0 {
		return
	}
	if k.cur != nil {
		k.cur.Release()
		k.cur = nil
	}
	k.r.Release()
}
func (k *kindReader) Schema() *arrow.Schema          { return k.schema }
func (k *kindReader) RecordBatch() arrow.RecordBatch { return k.cur }
func (k *kindReader) Record() arrow.RecordBatch      { return k.cur }
func (k *kindReader) Err() error                     { return k.err }

func (k *kindReader) Next() bool {
	if k.cur != nil {
		k.cur.Release()
		k.cur = nil
	}
	if k.err != nil || !k.r.Next() {
		if k.err == nil {
			k.err = k.r.Err()
		}
		return false
	}
	rec := k.r.RecordBatch()
	n := int(rec.NumRows())
	cols := rec.Columns()
	sb := array.NewStringBuilder(k.mem)
	defer sb.Release()
	sb.Reserve(n)
	if k.pk {
		kinds := cols[len(cols)-1].(*array.Int8)
		cols = cols[:len(cols)-1]
		for i := 0; i < n; i++ {
			v := kinds.Value(i)
			if v < 0 || int(v) >= len(rowKinds) {
				k.err = fmt.Errorf("lakestream: row kind %d is none of Paimon's", v)
				return false
			}
			sb.Append(rowKinds[v])
		}
	} else {
		for i := 0; i < n; i++ {
			sb.Append(rowKinds[0])
		}
	}
	kind := sb.NewArray()
	defer kind.Release()
	if k.binlog {
		offsets := make([]int32, n+1)
		for i := range offsets {
			offsets[i] = int32(i)
		}
		buf := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets))
		lists := make([]arrow.Array, len(cols))
		for j, col := range cols {
			data := array.NewData(arrow.ListOf(col.DataType()), n, []*memory.Buffer{nil, buf}, []arrow.ArrayData{col.Data()}, 0, 0)
			lists[j] = array.NewListData(data)
			data.Release()
			defer lists[j].Release()
		}
		cols = lists
	}
	k.cur = array.NewRecordBatch(k.schema, append([]arrow.Array{kind}, cols...), int64(n))
	return true
}
