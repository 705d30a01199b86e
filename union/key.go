package union

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// rowKeys builds one equality key per row from the columns at idx. Keys of
// equal values are equal byte strings; the encoding is not order-preserving
// and never leaves the process.
func rowKeys(rec arrow.RecordBatch, idx []int) ([]string, error) {
	n := int(rec.NumRows())
	bufs := make([][]byte, n)
	for _, ci := range idx {
		if err := appendColumn(bufs, rec.Column(ci)); err != nil {
			return nil, fmt.Errorf("union: key column %q: %w", rec.ColumnName(ci), err)
		}
	}
	keys := make([]string, n)
	for i, b := range bufs {
		keys[i] = string(b)
	}
	return keys, nil
}

func appendColumn(bufs [][]byte, col arrow.Array) error {
	var put func(i int, b []byte) []byte
	switch a := col.(type) {
	case *array.Int8:
		put = func(i int, b []byte) []byte { return append(b, byte(a.Value(i))) }
	case *array.Int16:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint16(b, uint16(a.Value(i))) }
	case *array.Int32:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint32(b, uint32(a.Value(i))) }
	case *array.Int64:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint64(b, uint64(a.Value(i))) }
	case *array.Uint8:
		put = func(i int, b []byte) []byte { return append(b, a.Value(i)) }
	case *array.Uint16:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint16(b, a.Value(i)) }
	case *array.Uint32:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint32(b, a.Value(i)) }
	case *array.Uint64:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint64(b, a.Value(i)) }
	case *array.Float32:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint32(b, math.Float32bits(a.Value(i))) }
	case *array.Float64:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint64(b, math.Float64bits(a.Value(i))) }
	case *array.Boolean:
		put = func(i int, b []byte) []byte {
			if a.Value(i) {
				return append(b, 1)
			}
			return append(b, 0)
		}
	case *array.Date32:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint32(b, uint32(a.Value(i))) }
	case *array.Date64:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint64(b, uint64(a.Value(i))) }
	case *array.Time32:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint32(b, uint32(a.Value(i))) }
	case *array.Time64:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint64(b, uint64(a.Value(i))) }
	case *array.Timestamp:
		put = func(i int, b []byte) []byte { return binary.BigEndian.AppendUint64(b, uint64(a.Value(i))) }
	case *array.Decimal128:
		put = func(i int, b []byte) []byte {
			v := a.Value(i)
			b = binary.BigEndian.AppendUint64(b, uint64(v.HighBits()))
			return binary.BigEndian.AppendUint64(b, v.LowBits())
		}
	case *array.String:
		put = func(i int, b []byte) []byte { return appendVar(b, []byte(a.Value(i))) }
	case *array.LargeString:
		put = func(i int, b []byte) []byte { return appendVar(b, []byte(a.Value(i))) }
	case *array.Binary:
		put = func(i int, b []byte) []byte { return appendVar(b, a.Value(i)) }
	case *array.LargeBinary:
		put = func(i int, b []byte) []byte { return appendVar(b, a.Value(i)) }
	case *array.FixedSizeBinary:
		put = func(i int, b []byte) []byte { return appendVar(b, a.Value(i)) }
	default:
		return fmt.Errorf("type %s cannot be a key", col.DataType())
	}
	for i := range bufs {
		if col.IsNull(i) {
			bufs[i] = append(bufs[i], 0)
			continue
		}
		bufs[i] = put(i, append(bufs[i], 1))
	}
	return nil
}

func appendVar(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
