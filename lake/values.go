package lake

import (
	"bytes"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// Internal values. Values taken out of Arrow arrays for keys, partitions and stats use these Go types:
// nil, bool, int8, int16, int32 (INT, DATE days, TIME millis), int64, float32, float64, string, []byte,
// manifest.Decimal, manifest.Timestamp.

// valueAt returns the internal value of arr[row] for Paimon type t. Only atomic types are supported;
// composite types return nil.
func valueAt(arr arrow.Array, row int, t paimontype.DataType) any {
	if arr.IsNull(row) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(row)
	case *array.Int8:
		return a.Value(row)
	case *array.Int16:
		return a.Value(row)
	case *array.Int32:
		return a.Value(row)
	case *array.Int64:
		return a.Value(row)
	case *array.Float32:
		return a.Value(row)
	case *array.Float64:
		return a.Value(row)
	case *array.String:
		return a.Value(row)
	case *array.LargeString:
		return a.Value(row)
	case *array.Binary:
		return bytes.Clone(a.Value(row))
	case *array.Date32:
		return int32(a.Value(row))
	case *array.Time32:
		return int32(a.Value(row))
	case *array.Decimal128:
		return manifest.Decimal{Unscaled: a.Value(row).BigInt(), Scale: t.Scale}
	case *array.Timestamp:
		v := int64(a.Value(row))
		unit := a.DataType().(*arrow.TimestampType).Unit
		var per int64
		switch unit {
		case arrow.Second:
			return manifest.Timestamp{Millis: v * 1000}
		case arrow.Millisecond:
			return manifest.Timestamp{Millis: v}
		case arrow.Microsecond:
			per = 1000
		default:
			per = 1000000
		}
		ms := floorDiv(v, per)
		rem := v - ms*per
		if per == 1000 {
			rem *= 1000
		}
		return manifest.Timestamp{Millis: ms, NanoOfMilli: int32(rem)}
	}
	return nil
}

// rowValues returns the internal values of the columns idx (of Paimon
// types types) of rec at row.
func rowValues(rec arrow.RecordBatch, idx []int, types []paimontype.DataType, row int) []any {
	vals := make([]any, len(idx))
	for i, c := range idx {
		vals[i] = valueAt(rec.Column(c), row, types[i])
	}
	return vals
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// statsSupported reports whether a type gets min/max stats and can be a key/partition field.
func statsSupported(t paimontype.DataType) bool { return !t.IsComposite() }

// compareValues orders internal values of type t: nulls first, strings/binary as unsigned bytes.
func compareValues(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		default:
			return 1
		}
	}
	switch x := a.(type) {
	case bool:
		return cmpBool(x, b.(bool))
	case int8:
		return cmpOrdered(x, b.(int8))
	case int16:
		return cmpOrdered(x, b.(int16))
	case int32:
		return cmpOrdered(x, b.(int32))
	case int64:
		return cmpOrdered(x, b.(int64))
	case float32:
		return cmpFloat(float64(x), float64(b.(float32)))
	case float64:
		return cmpFloat(x, b.(float64))
	case string:
		return bytes.Compare([]byte(x), []byte(b.(string)))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case manifest.Decimal:
		return x.Unscaled.Cmp(b.(manifest.Decimal).Unscaled)
	case manifest.Timestamp:
		y := b.(manifest.Timestamp)
		if c := cmpOrdered(x.Millis, y.Millis); c != 0 {
			return c
		}
		return cmpOrdered(x.NanoOfMilli, y.NanoOfMilli)
	}
	panic(fmt.Sprintf("lake: compare of %T", a))
}

func cmpOrdered[T int8 | int16 | int32 | int64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders like Java's Double.compare (NaN greatest, -0 < +0).
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if math.IsNaN(a) {
		ab = int64(math.Float64bits(math.NaN()))
	}
	if math.IsNaN(b) {
		bb = int64(math.Float64bits(math.NaN()))
	}
	return cmpOrdered(ab, bb)
}

func compareRows(a, b []any) int {
	for i := range a {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// emptyRowBytes is the serialized empty row.
var emptyRowBytes = manifest.SerializeBinaryRow(0, manifest.EncodeBinaryRow(nil, nil))
