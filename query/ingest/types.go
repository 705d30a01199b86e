package ingest

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/query/plan"
)

// DuckType spells an Arrow type as the DuckDB type to cast INSERT values to
// (nested types too: T[], STRUCT("f" T, ...), MAP(K, V)). ok is false for
// types without a spelling: their values are passed through and converted
// on write.
func DuckType(t arrow.DataType) (string, bool) {
	switch t := t.(type) {
	case *arrow.ListType:
		e, ok := DuckType(t.Elem())
		return e + "[]", ok
	case *arrow.MapType:
		k, ok1 := DuckType(t.KeyType())
		v, ok2 := DuckType(t.ItemType())
		return "MAP(" + k + ", " + v + ")", ok1 && ok2
	case *arrow.StructType:
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			ft, ok := DuckType(f.Type)
			if !ok {
				return "", false
			}
			parts[i] = plan.QuoteIdent(f.Name) + " " + ft
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
