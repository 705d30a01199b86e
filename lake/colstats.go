package lake

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/lake/paimontype"
)

// addColumn folds every value of arr into column i's statistics: the same
// result as add with valueAt of each row, without boxing a value per row
// (boxing and comparing interfaces was a third of a tiering round's CPU).
// Each supported array type finds the rows of its smallest and largest
// value in a typed loop, and only those two rows are converted.
func (s *statsCollector) addColumn(i int, arr arrow.Array) {
	n := arr.Len()
	s.nulls[i] += int64(arr.NullN())
	if arr.NullN() == n {
		return
	}
	lo, hi, ok := minMaxRows(arr)
	if !ok { // a type without a typed loop: one row at a time
		for r := 0; r < n; r++ {
			if v := valueAt(arr, r, s.types[i]); v != nil {
				s.fold(i, v)
			}
		}
		return
	}
	s.fold(i, valueAt(arr, lo, s.types[i]))
	s.fold(i, valueAt(arr, hi, s.types[i]))
}

// fold widens column i's bounds by the non-null value v.
func (s *statsCollector) fold(i int, v any) {
	if s.min[i] == nil || compareValues(v, s.min[i]) < 0 {
		s.min[i] = v
	}
	if s.max[i] == nil || compareValues(v, s.max[i]) > 0 {
		s.max[i] = v
	}
}

// minMaxRows returns the rows holding the smallest and the largest non-null
// value of arr, ordered as compareValues orders their internal values
// (timestamps convert monotonically, so their raw values order the same);
// ok is false for types it has no loop for, or when every value is null.
func minMaxRows(arr arrow.Array) (lo, hi int, ok bool) {
	switch a := arr.(type) {
	case *array.Int8:
		return extremes(a, a.Int8Values(), cmp.Compare[int8])
	case *array.Int16:
		return extremes(a, a.Int16Values(), cmp.Compare[int16])
	case *array.Int32:
		return extremes(a, a.Int32Values(), cmp.Compare[int32])
	case *array.Int64:
		return extremes(a, a.Int64Values(), cmp.Compare[int64])
	case *array.Date32:
		return extremes(a, a.Date32Values(), cmp.Compare[arrow.Date32])
	case *array.Time32:
		return extremes(a, a.Time32Values(), cmp.Compare[arrow.Time32])
	case *array.Timestamp:
		return extremes(a, a.TimestampValues(), cmp.Compare[arrow.Timestamp])
	case *array.Float32:
		return extremes(a, a.Float32Values(), func(x, y float32) int { return cmpFloat(float64(x), float64(y)) })
	case *array.Float64:
		return extremes(a, a.Float64Values(), cmpFloat)
	case *array.Boolean:
		return extremesBy(a, func(x, y int) int { return cmpBool(a.Value(x), a.Value(y)) })
	case *array.String:
		return extremesBytes(a, a.ValueOffsets(), a.ValueBytes())
	case *array.LargeString:
		return extremesBytes(a, a.ValueOffsets(), a.ValueBytes())
	case *array.Binary:
		return extremesBytes(a, a.ValueOffsets(), a.ValueBytes())
	}
	return 0, 0, false
}

// extremes is minMaxRows over a fixed-width values slice.
func extremes[T any](arr arrow.Array, vals []T, compare func(a, b T) int) (lo, hi int, ok bool) {
	hasNulls := arr.NullN() > 0
	lo, hi = -1, -1
	for r := range vals {
		if hasNulls && arr.IsNull(r) {
			continue
		}
		if lo < 0 {
			lo, hi = r, r
			continue
		}
		if compare(vals[r], vals[lo]) < 0 {
			lo = r
		} else if compare(vals[r], vals[hi]) > 0 {
			hi = r
		}
	}
	return lo, hi, lo >= 0
}

// extremesBy is minMaxRows with a comparison of two rows.
func extremesBy(arr arrow.Array, compare func(x, y int) int) (lo, hi int, ok bool) {
	hasNulls := arr.NullN() > 0
	lo, hi = -1, -1
	for r := 0; r < arr.Len(); r++ {
		if hasNulls && arr.IsNull(r) {
			continue
		}
		if lo < 0 {
			lo, hi = r, r
			continue
		}
		if compare(r, lo) < 0 {
			lo = r
		} else if compare(r, hi) > 0 {
			hi = r
		}
	}
	return lo, hi, lo >= 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// extremesBytes is minMaxRows over variable-width values as unsigned bytes
// (strings compare the same way); data starts at the first row's offset.
func extremesBytes[O int32 | int64](arr arrow.Array, offs []O, data []byte) (lo, hi int, ok bool) {
	hasNulls := arr.NullN() > 0
	base := offs[0]
	lo, hi = -1, -1
	var loV, hiV []byte
	for r := 0; r < arr.Len(); r++ {
		if hasNulls && arr.IsNull(r) {
			continue
		}
		v := data[offs[r]-base : offs[r+1]-base]
		if lo < 0 {
			lo, hi, loV, hiV = r, r, v, v
			continue
		}
		if bytes.Compare(v, loV) < 0 {
			lo, loV = r, v
		} else if bytes.Compare(v, hiV) > 0 {
			hi, hiV = r, v
		}
	}
	return lo, hi, lo >= 0
}

// rowCompare orders the rows of rec by the columns idx (of types types) as
// compareRows orders their values: typed loops for the types minMaxRows
// has them for, boxed values otherwise. Sorting a tiering round's rows by
// boxed keys cost two allocations per row and an interface switch per
// comparison.
func rowCompare(rec arrow.RecordBatch, idx []int, types []paimontype.DataType) func(a, b int) int {
	f, ok := typedRowsCompare(rec, rec, idx)
	if ok {
		return f
	}
	keys := make([][]any, rec.NumRows())
	for r := range keys {
		keys[r] = rowValues(rec, idx, types, r)
	}
	return func(a, b int) int { return compareRows(keys[a], keys[b]) }
}

// rowsCompare is rowCompare across two records of the same schema: row a of
// x against row b of y. Keys of types without a typed loop are boxed per
// comparison (it is meant for a few comparisons per record, as a merge's
// bound searches make).
func rowsCompare(x, y arrow.RecordBatch, idx []int, types []paimontype.DataType) func(a, b int) int {
	if f, ok := typedRowsCompare(x, y, idx); ok {
		return f
	}
	return func(a, b int) int {
		return compareRows(rowValues(x, idx, types, a), rowValues(y, idx, types, b))
	}
}

// typedRowsCompare is rowsCompare when every key column has a typed loop.
func typedRowsCompare(x, y arrow.RecordBatch, idx []int) (func(a, b int) int, bool) {
	cmps := make([]func(a, b int) int, len(idx))
	for i, c := range idx {
		f, ok := columnsCompare(x.Column(c), y.Column(c))
		if !ok {
			return nil, false
		}
		cmps[i] = f
	}
	return chainCompare(cmps), true
}

// chainCompare orders by cmps in turn: the first that tells two rows apart
// decides.
func chainCompare(cmps []func(a, b int) int) func(a, b int) int {
	if len(cmps) == 1 {
		return cmps[0]
	}
	return func(a, b int) int {
		for _, f := range cmps {
			if c := f(a, b); c != 0 {
				return c
			}
		}
		return 0
	}
}

// columnsCompare orders row a of x against row b of y (arrays of the same
// type) as compareValues orders their values, nulls first; ok is false for
// types without a typed loop, or when the types differ.
func columnsCompare(x, y arrow.Array) (f func(a, b int) int, ok bool) {
	if !arrow.TypeEqual(x.DataType(), y.DataType()) {
		return nil, false
	}
	switch a := x.(type) {
	case *array.Int8:
		f = valuesCompare(a.Int8Values(), y.(*array.Int8).Int8Values(), cmp.Compare[int8])
	case *array.Int16:
		f = valuesCompare(a.Int16Values(), y.(*array.Int16).Int16Values(), cmp.Compare[int16])
	case *array.Int32:
		f = valuesCompare(a.Int32Values(), y.(*array.Int32).Int32Values(), cmp.Compare[int32])
	case *array.Int64:
		f = valuesCompare(a.Int64Values(), y.(*array.Int64).Int64Values(), cmp.Compare[int64])
	case *array.Date32:
		f = valuesCompare(a.Date32Values(), y.(*array.Date32).Date32Values(), cmp.Compare[arrow.Date32])
	case *array.Time32:
		f = valuesCompare(a.Time32Values(), y.(*array.Time32).Time32Values(), cmp.Compare[arrow.Time32])
	case *array.Timestamp:
		f = valuesCompare(a.TimestampValues(), y.(*array.Timestamp).TimestampValues(), cmp.Compare[arrow.Timestamp])
	case *array.Float32:
		f = valuesCompare(a.Float32Values(), y.(*array.Float32).Float32Values(), func(x, y float32) int { return cmpFloat(float64(x), float64(y)) })
	case *array.Float64:
		f = valuesCompare(a.Float64Values(), y.(*array.Float64).Float64Values(), cmpFloat)
	case *array.Boolean:
		b := y.(*array.Boolean)
		f = func(i, j int) int { return cmpBool(a.Value(i), b.Value(j)) }
	case *array.String:
		b := y.(*array.String)
		f = bytesCompare(a.ValueOffsets(), a.ValueBytes(), b.ValueOffsets(), b.ValueBytes())
	case *array.LargeString:
		b := y.(*array.LargeString)
		f = bytesCompare(a.ValueOffsets(), a.ValueBytes(), b.ValueOffsets(), b.ValueBytes())
	case *array.Binary:
		b := y.(*array.Binary)
		f = bytesCompare(a.ValueOffsets(), a.ValueBytes(), b.ValueOffsets(), b.ValueBytes())
	default:
		return nil, false
	}
	if x.NullN() == 0 && y.NullN() == 0 {
		return f, true
	}
	return nullsFirst(x, y, f), true
}

// nullsFirst orders row a of x against row b of y with nulls before every
// value, and two values by values.
func nullsFirst(x, y arrow.Array, values func(a, b int) int) func(a, b int) int {
	return func(i, j int) int {
		switch nx, ny := x.IsNull(i), y.IsNull(j); {
		case nx && ny:
			return 0
		case nx:
			return -1
		case ny:
			return 1
		}
		return values(i, j)
	}
}

func valuesCompare[T any](xs, ys []T, compare func(a, b T) int) func(a, b int) int {
	return func(a, b int) int { return compare(xs[a], ys[b]) }
}

func bytesCompare[O int32 | int64](xOffs []O, xData []byte, yOffs []O, yData []byte) func(a, b int) int {
	xBase, yBase := xOffs[0], yOffs[0]
	return func(a, b int) int {
		return bytes.Compare(xData[xOffs[a]-xBase:xOffs[a+1]-xBase], yData[yOffs[b]-yBase:yOffs[b+1]-yBase])
	}
}

// orderByKeySeqPos returns the rows of rec by key (cmpKey), then by the
// sequence fields (bySeq, nil when the table has none), then sequence
// number, then position: the order in which Paimon merges versions of a
// key (newest last). A key of one integer column without nulls is sorted
// as plain integers (no comparison closures: 3x faster on a tiering round
// of a BIGINT-keyed table).
func orderByKeySeqPos(rec arrow.RecordBatch, keyIdx []int, cmpKey func(a, b int) int, bySeq func(a, b int) int, seqs []int64) []int {
	n := int(rec.NumRows())
	order := make([]int, n)
	if len(keyIdx) == 1 && bySeq == nil {
		if keys, ok := intKeys(rec.Column(keyIdx[0])); ok {
			type row struct {
				key, seq int64
				pos      int
			}
			rows := make([]row, n)
			for i := range rows {
				rows[i] = row{keys[i], seqs[i], i}
			}
			slices.SortFunc(rows, func(a, b row) int {
				switch {
				case a.key != b.key:
					return cmp.Compare(a.key, b.key)
				case a.seq != b.seq:
					return cmp.Compare(a.seq, b.seq)
				}
				return cmp.Compare(a.pos, b.pos)
			})
			for i, r := range rows {
				order[i] = r.pos
			}
			return order
		}
	}
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmpKey(a, b); c != 0 {
			return c
		}
		if bySeq != nil {
			if c := bySeq(a, b); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(seqs[a], seqs[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// intKeys widens an integer-like column without nulls to int64 (order kept).
func intKeys(arr arrow.Array) ([]int64, bool) {
	keys, err := keyValues(arr)
	return keys, err == nil
}
