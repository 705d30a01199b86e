package arrowutil

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Int64Values returns the values of an integer-like column without nulls
// (INT32, INT64, DATE32, DATE64, TIMESTAMP) as int64s, in their order: an
// INT64 column's own values (do not change them), others widened into a new
// slice. An error names the nulls or the type.
func Int64Values(a arrow.Array) ([]int64, error) {
	if a.NullN() > 0 {
		return nil, fmt.Errorf("%d nulls", a.NullN())
	}
	switch v := a.(type) {
	case *array.Int64:
		return v.Int64Values(), nil
	case *array.Timestamp:
		return widen(v.TimestampValues()), nil
	case *array.Date64:
		return widen(v.Date64Values()), nil
	case *array.Int32:
		return widen(v.Int32Values()), nil
	case *array.Date32:
		return widen(v.Date32Values()), nil
	}
	return nil, fmt.Errorf("type %s", a.DataType())
}

func widen[T ~int32 | ~int64](vals []T) []int64 {
	out := make([]int64, len(vals))
	for i, x := range vals {
		out[i] = int64(x)
	}
	return out
}
