package query

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// duckType spells an Arrow type as the DuckDB type to cast INSERT values to
// (nested types too: T[], STRUCT("f" T, ...), MAP(K, V)). ok is false for
// types without a spelling: their values are passed through and converted
// on write.
func duckType(t arrow.DataType) (string, bool) {
	switch t := t.(type) {
	case *arrow.ListType:
		e, ok := duckType(t.Elem())
		return e + "[]", ok
	case *arrow.MapType:
		k, ok1 := duckType(t.KeyType())
		v, ok2 := duckType(t.ItemType())
		return "MAP(" + k + ", " + v + ")", ok1 && ok2
	case *arrow.StructType:
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			ft, ok := duckType(f.Type)
			if !ok {
				return "", false
			}
			parts[i] = quoteIdent(f.Name) + " " + ft
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", true
	case *arrow.BooleanType:
		return "BOOLEAN", true
	case *arrow.Int8Type:
		return "TINYINT", true
	case *arrow.Int16Type:
		return "SMALLINT", true
	case *arrow.Int32Type:
		return "INTEGER", true
	case *arrow.Int64Type:
		return "BIGINT", true
	case *arrow.Float32Type:
		return "FLOAT", true
	case *arrow.Float64Type:
		return "DOUBLE", true
	case *arrow.StringType, *arrow.LargeStringType:
		return "VARCHAR", true
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.FixedSizeBinaryType:
		return "BLOB", true
	case *arrow.Date32Type:
		return "DATE", true
	case *arrow.Time32Type, *arrow.Time64Type:
		return "TIME", true
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), true
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "TIMESTAMPTZ", true
		}
		switch t.Unit {
		case arrow.Second:
			return "TIMESTAMP_S", true
		case arrow.Millisecond:
			return "TIMESTAMP_MS", true
		case arrow.Nanosecond:
			return "TIMESTAMP_NS", true
		default:
			return "TIMESTAMP", true
		}
	}
	return "", false
}

// paimonType spells an Arrow type as the Paimon type an ingest-created table
// gets for it.
func paimonType(t arrow.DataType) (string, error) {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.Int8Type:
		return "TINYINT", nil
	case *arrow.Int16Type, *arrow.Uint8Type:
		return "SMALLINT", nil
	case *arrow.Int32Type, *arrow.Uint16Type:
		return "INT", nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return "BIGINT", nil
	case *arrow.Float16Type, *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "STRING", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return "BYTES", nil
	case *arrow.FixedSizeBinaryType:
		return fmt.Sprintf("BINARY(%d)", t.ByteWidth), nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return "DATE", nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale), nil
	case *arrow.TimestampType:
		p := map[arrow.TimeUnit]int{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}[t.Unit]
		if t.TimeZone != "" {
			return fmt.Sprintf("TIMESTAMP(%d) WITH LOCAL TIME ZONE", p), nil
		}
		return fmt.Sprintf("TIMESTAMP(%d)", p), nil
	case *arrow.Time32Type:
		return "TIME(3)", nil
	case *arrow.Time64Type:
		return "TIME(6)", nil
	}
	return "", fmt.Errorf("arrow type %s has no Paimon counterpart yet", t)
}

// quoteIdent quotes an identifier for DuckDB.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
