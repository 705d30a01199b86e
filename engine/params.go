package engine

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// Literal writes row i of col as a SQL literal of DuckDB's dialect that
// stands for the same value and type: INTEGER values and strings plainly,
// other integers cast to their width (DuckDB reads a plain integer as
// INTEGER, so SELECT ? bound to a BIGINT came back INTEGER; key lookups and
// pruning read through such casts), other types as a typed literal or
// cast, and NULL cast to the column's type where DuckDB has it.
func Literal(col arrow.Array, i int) (string, error) {
	if col.IsNull(i) {
		if t, ok := nullTypes[col.DataType().ID()]; ok {
			return "CAST(NULL AS " + t + ")", nil
		}
		return "NULL", nil
	}
	switch a := col.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return "TRUE", nil
		}
		return "FALSE", nil
	case *array.Int8:
		return "CAST(" + strconv.FormatInt(int64(a.Value(i)), 10) + " AS TINYINT)", nil
	case *array.Int16:
		return "CAST(" + strconv.FormatInt(int64(a.Value(i)), 10) + " AS SMALLINT)", nil
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int64:
		return "CAST(" + strconv.FormatInt(a.Value(i), 10) + " AS BIGINT)", nil
	case *array.Uint8:
		return "CAST(" + strconv.FormatUint(uint64(a.Value(i)), 10) + " AS UTINYINT)", nil
	case *array.Uint16:
		return "CAST(" + strconv.FormatUint(uint64(a.Value(i)), 10) + " AS USMALLINT)", nil
	case *array.Uint32:
		return "CAST(" + strconv.FormatUint(uint64(a.Value(i)), 10) + " AS UINTEGER)", nil
	case *array.Uint64:
		return "CAST(" + strconv.FormatUint(a.Value(i), 10) + " AS UBIGINT)", nil
	case *array.Float16:
		return floatLiteral(float64(a.Value(i).Float32()), "FLOAT"), nil
	case *array.Float32:
		return floatLiteral(float64(a.Value(i)), "FLOAT"), nil
	case *array.Float64:
		return floatLiteral(a.Value(i), "DOUBLE"), nil
	case *array.String:
		return quote(a.Value(i)), nil
	case *array.LargeString:
		return quote(a.Value(i)), nil
	case *array.StringView:
		return quote(a.Value(i)), nil
	case *array.Binary:
		return blob(a.Value(i)), nil
	case *array.LargeBinary:
		return blob(a.Value(i)), nil
	case *array.BinaryView:
		return blob(a.Value(i)), nil
	case *array.FixedSizeBinary:
		return blob(a.Value(i)), nil
	case *array.Date32:
		return "DATE '" + a.Value(i).ToTime().Format(time.DateOnly) + "'", nil
	case *array.Date64:
		return "DATE '" + a.Value(i).ToTime().Format(time.DateOnly) + "'", nil
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		ts := a.Value(i).ToTime(t.Unit).UTC()
		switch {
		case t.TimeZone != "":
			return "CAST('" + ts.Format("2006-01-02 15:04:05.999999999") + "+00' AS TIMESTAMPTZ)", nil
		case t.Unit == arrow.Nanosecond:
			return "CAST('" + ts.Format("2006-01-02 15:04:05.999999999") + "' AS TIMESTAMP_NS)", nil
		default:
			return "CAST('" + ts.Format("2006-01-02 15:04:05.999999") + "' AS TIMESTAMP)", nil
		}
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return "CAST('" + a.Value(i).ToTime(unit).Format("15:04:05.999999") + "' AS TIME)", nil
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return "CAST('" + a.Value(i).ToTime(unit).Format("15:04:05.999999") + "' AS TIME)", nil
	case *array.Decimal128:
		t := a.DataType().(*arrow.Decimal128Type)
		return decimalLiteral(decimal128.Num(a.Value(i)).ToString(t.Scale), t.Precision, t.Scale), nil
	case *array.Decimal256:
		t := a.DataType().(*arrow.Decimal256Type)
		return decimalLiteral(decimal256.Num(a.Value(i)).ToString(t.Scale), t.Precision, t.Scale), nil
	case *array.Null:
		return "NULL", nil
	}
	return "", fmt.Errorf("values of type %s cannot be bound; pass it as a string and CAST it in the statement", col.DataType())
}

// nullTypes are DuckDB's names of the Arrow types whose NULL is bound typed.
var nullTypes = map[arrow.Type]string{
	arrow.BOOL: "BOOLEAN", arrow.INT8: "TINYINT", arrow.INT16: "SMALLINT", arrow.INT32: "INTEGER", arrow.INT64: "BIGINT",
	arrow.UINT8: "UTINYINT", arrow.UINT16: "USMALLINT", arrow.UINT32: "UINTEGER", arrow.UINT64: "UBIGINT",
	arrow.FLOAT32: "FLOAT", arrow.FLOAT64: "DOUBLE", arrow.STRING: "VARCHAR", arrow.LARGE_STRING: "VARCHAR",
	arrow.BINARY: "BLOB", arrow.LARGE_BINARY: "BLOB", arrow.DATE32: "DATE", arrow.DATE64: "DATE",
}

func floatLiteral(f float64, typ string) string {
	switch {
	case math.IsNaN(f):
		return "CAST('NaN' AS " + typ + ")"
	case math.IsInf(f, 1):
		return "CAST('Infinity' AS " + typ + ")"
	case math.IsInf(f, -1):
		return "CAST('-Infinity' AS " + typ + ")"
	}
	bits := 64
	if typ == "FLOAT" {
		bits = 32
	}
	// From a string: DuckDB reads 0.30000000000000004 written plainly as a
	// DECIMAL and rounds it again on the way to DOUBLE.
	return "CAST('" + strconv.FormatFloat(f, 'g', -1, bits) + "' AS " + typ + ")"
}

func decimalLiteral(s string, precision, scale int32) string {
	if precision > 38 { // beyond DuckDB's DECIMAL
		return "CAST('" + s + "' AS DOUBLE)"
	}
	return fmt.Sprintf("CAST('%s' AS DECIMAL(%d, %d))", s, precision, scale)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func blob(b []byte) string {
	var sb strings.Builder
	sb.WriteString("CAST('")
	h := hex.EncodeToString(b)
	for i := 0; i < len(h); i += 2 {
		sb.WriteString(`\x`)
		sb.WriteString(h[i : i+2])
	}
	sb.WriteString("' AS BLOB)")
	return sb.String()
}
