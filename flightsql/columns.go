package flightsql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/arrowutil"
)

// Flight SQL describes columns in Arrow field metadata (ARROW:FLIGHT:SQL:*):
// JDBC's getColumns reads a table's from GetTables with include_schema, and
// its ResultSetMetaData a result's from the result schema. Without them the
// driver shows Arrow type names (int64, utf8), VARCHAR(100) as 65536 wide,
// and precision and scale 0 for DECIMAL(38, 10).

// tableSchema is t's schema as GetTables sends it: each field with its
// declared SQL type, its table, and whether it can be written (t$rt and
// t$changelog cannot).
func tableSchema(t engine.TableInfo) *arrow.Schema {
	fields := make([]arrow.Field, t.Schema.NumFields())
	for i, f := range t.Schema.Fields() {
		c, ok := engine.ColumnInfo{}, false
		if i < len(t.Columns) {
			c, ok = t.Columns[i], true
		}
		if !ok {
			c = sqlColumn(f.Type)
		}
		mb := columnMetadata(c, isText(f.Type))
		mb.SchemaName(t.Database).TableName(t.Name).IsReadOnly(t.Type != "TABLE")
		f.Metadata = withMetadata(f.Metadata, mb.Metadata())
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil)
}

// resultSchema is a query result's schema with each field described by its
// Arrow type (a result's columns have no declared types). Both the schema
// GetFlightInfo sends and the stream use it, so they stay equal.
func resultSchema(sc *arrow.Schema) *arrow.Schema {
	if sc == nil {
		return nil
	}
	fields := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		mb := columnMetadata(sqlColumn(f.Type), isText(f.Type))
		mb.IsReadOnly(true)
		f.Metadata = withMetadata(f.Metadata, mb.Metadata())
		fields[i] = f
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
}

func columnMetadata(c engine.ColumnInfo, text bool) *flightsql.ColumnMetadataBuilder {
	mb := flightsql.NewColumnMetadataBuilder()
	mb.TypeName(c.TypeName).IsAutoIncrement(false).IsCaseSensitive(text).IsSearchable(true)
	if c.Precision > 0 {
		mb.Precision(c.Precision)
	}
	if c.Scale > 0 {
		mb.Scale(c.Scale)
	}
	return mb
}

// isText reports whether values of dt compare as case-sensitive text.
func isText(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

// withMetadata is a's keys with b's added (b wins).
func withMetadata(a, b arrow.Metadata) arrow.Metadata {
	if a.Len() == 0 {
		return b
	}
	keys, vals := append([]string{}, a.Keys()...), append([]string{}, a.Values()...)
	for i, k := range b.Keys() {
		if j := a.FindKey(k); j >= 0 {
			vals[j] = b.Values()[i]
			continue
		}
		keys, vals = append(keys, k), append(vals, b.Values()[i])
	}
	return arrow.NewMetadata(keys, vals)
}

// sqlColumn names an Arrow type as DuckDB's SQL does, with its precision.
func sqlColumn(dt arrow.DataType) engine.ColumnInfo {
	switch t := dt.(type) {
	case *arrow.Decimal128Type, *arrow.Decimal256Type:
		d := dt.(arrow.DecimalType)
		return engine.ColumnInfo{TypeName: fmt.Sprintf("DECIMAL(%d, %d)", d.GetPrecision(), d.GetScale()), Precision: d.GetPrecision(), Scale: d.GetScale()}
	case *arrow.TimestampType:
		name := "TIMESTAMP"
		if t.TimeZone != "" {
			name = "TIMESTAMP WITH TIME ZONE"
		}
		return engine.ColumnInfo{TypeName: name, Precision: unitDigits[t.Unit]}
	case *arrow.Time32Type, *arrow.Time64Type:
		return engine.ColumnInfo{TypeName: "TIME", Precision: unitDigits[dt.(arrow.TemporalWithUnit).TimeUnit()]}
	case *arrow.FixedSizeBinaryType:
		return engine.ColumnInfo{TypeName: "BLOB", Precision: int32(t.ByteWidth)}
	case arrow.ListLikeType:
		return engine.ColumnInfo{TypeName: sqlColumn(t.Elem()).TypeName + "[]"}
	case *arrow.StructType:
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			parts[i] = `"` + strings.ReplaceAll(f.Name, `"`, `""`) + `" ` + sqlColumn(f.Type).TypeName
		}
		return engine.ColumnInfo{TypeName: "STRUCT(" + strings.Join(parts, ", ") + ")"}
	}
	if n, ok := sqlNames[dt.ID()]; ok {
		return engine.ColumnInfo{TypeName: n}
	}
	return engine.ColumnInfo{TypeName: strings.ToUpper(dt.String())}
}

// unitDigits are the fractional-second digits of a time unit.
var unitDigits = map[arrow.TimeUnit]int32{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}

var sqlNames = map[arrow.Type]string{
	arrow.NULL: "NULL", arrow.BOOL: "BOOLEAN",
	arrow.INT8: "TINYINT", arrow.INT16: "SMALLINT", arrow.INT32: "INTEGER", arrow.INT64: "BIGINT",
	arrow.UINT8: "UTINYINT", arrow.UINT16: "USMALLINT", arrow.UINT32: "UINTEGER", arrow.UINT64: "UBIGINT",
	arrow.FLOAT16: "FLOAT", arrow.FLOAT32: "FLOAT", arrow.FLOAT64: "DOUBLE",
	arrow.STRING: "VARCHAR", arrow.LARGE_STRING: "VARCHAR", arrow.STRING_VIEW: "VARCHAR",
	arrow.BINARY: "BLOB", arrow.LARGE_BINARY: "BLOB", arrow.BINARY_VIEW: "BLOB",
	arrow.DATE32: "DATE", arrow.DATE64: "DATE",
	arrow.INTERVAL_MONTH_DAY_NANO: "INTERVAL", arrow.INTERVAL_DAY_TIME: "INTERVAL", arrow.INTERVAL_MONTHS: "INTERVAL",
	arrow.DURATION: "INTERVAL",
}

// describeResult is r under resultSchema's schema.
func describeResult(r array.RecordReader) array.RecordReader {
	return arrowutil.NewSchemaReader(r, resultSchema(r.Schema()))
}
