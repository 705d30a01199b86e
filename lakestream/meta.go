package lakestream

import (
	"context"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Paimon's system tables of a table t that flightd serves, with Java Paimon's
// columns (as of 1.4) and values: t$snapshots (one row per snapshot that
// exists), t$schemas (one per schema, the parts as the schema file's JSON)
// and t$options (the latest schema's options). Their TIMESTAMP(3) columns
// are wall-clock times in UTC, where Java shows the JVM's zone.
const (
	SnapshotsSuffix = "$snapshots"
	SchemasSuffix   = "$schemas"
	OptionsSuffix   = "$options"
)

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
	for _, s := range []string{SnapshotsSuffix, SchemasSuffix, OptionsSuffix} {
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
}

// MetaSchema is the Arrow schema of the system table suffix names.
func MetaSchema(suffix string) *arrow.Schema { return metaSchemas[suffix] }

// Meta reads the system table suffix of db.name.
func (s *Service) Meta(ctx context.Context, db, name, suffix string) (array.RecordReader, error) {
	t, err := s.Table(db, name)
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
