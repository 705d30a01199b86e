package flightsql

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
)

// DefaultMaxBatchBytes bounds the Arrow data of one result message: well
// under the 16 MiB that gRPC clients (the ADBC drivers among them) accept
// by default, and large enough that per-message costs stay small.
const DefaultMaxBatchBytes = 4 << 20

// splitBatch cuts rec into consecutive slices whose Arrow data is at most
// max bytes each; a row larger than max on its own is a slice of one row.
// The slices are new references (release each); rec is not released. A
// batch within the bound is returned as it is (retained).
func splitBatch(rec arrow.RecordBatch, max int64) []arrow.RecordBatch {
	n := rec.NumRows()
	if n <= 1 || util.TotalRecordSize(rec) <= max {
		rec.Retain()
		return []arrow.RecordBatch{rec}
	}
	// Costs in bits, so that validity bitmaps and booleans count exactly.
	// Fixed-width columns cost the same in every row: they are summed once.
	var fixed int64
	var cost []int64
	for _, c := range rec.Columns() {
		if fw, ok := c.DataType().(arrow.FixedWidthDataType); ok && c.DataType().ID() != arrow.DICTIONARY {
			fixed += 1 + int64(fw.BitWidth())
			continue
		}
		if cost == nil {
			cost = make([]int64, n)
		}
		addRowBits(c, cost)
	}
	maxBits := max * 8
	var out []arrow.RecordBatch
	if cost == nil {
		step := max64(1, maxBits/max64(1, fixed))
		for start := int64(0); start < n; start += step {
			out = append(out, rec.NewSlice(start, min(start+step, n)))
		}
		return out
	}
	start, acc := int64(0), int64(0)
	for i := int64(0); i < n; i++ {
		c := fixed + cost[i]
		if i > start && acc+c > maxBits {
			out = append(out, rec.NewSlice(start, i))
			start, acc = i, 0
		}
		acc += c
	}
	out = append(out, rec.NewSlice(start, n))
	for i, p := range out {
		out[i] = compactViews(p)
	}
	return out
}

// compactViews returns rec with each string or binary view column copied
// into buffers of its own: a slice of a view array shares all of its data
// buffers, and the IPC writer sends them whole. rec is released if copied.
func compactViews(rec arrow.RecordBatch) arrow.RecordBatch {
	var cols []arrow.Array
	for i, c := range rec.Columns() {
		var b array.Builder
		switch c.(type) {
		case *array.StringView:
			b = array.NewStringViewBuilder(memory.DefaultAllocator)
		case *array.BinaryView:
			b = array.NewBinaryViewBuilder(memory.DefaultAllocator)
		default:
			continue
		}
		if cols == nil {
			cols = slices.Clone(rec.Columns())
		}
		for j := 0; j < c.Len(); j++ {
			switch {
			case c.IsNull(j):
				b.AppendNull()
			case c.DataType().ID() == arrow.STRING_VIEW:
				b.(*array.StringViewBuilder).Append(c.(*array.StringView).Value(j))
			default:
				b.(*array.BinaryViewBuilder).Append(c.(*array.BinaryView).Value(j))
			}
		}
		cols[i] = b.NewArray()
		b.Release()
		defer cols[i].Release()
	}
	if cols == nil {
		return rec
	}
	defer rec.Release()
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// addRowBits adds to cost[i] the bits row i of arr takes in an IPC
// message: its value, its offset or view, and its validity bit, with the
// values of its children for nested types. Layouts not walked here (unions,
// run-end encoded) count their buffers spread evenly over their rows.
func addRowBits(arr arrow.Array, cost []int64) {
	n := arr.Len()
	if n == 0 {
		return
	}
	validity := int64(1)
	switch a := arr.(type) {
	case *array.Null:
		return
	case *array.String:
		offs := a.ValueOffsets()
		for i := 0; i < n; i++ {
			cost[i] += validity + 32 + 8*int64(offs[i+1]-offs[i])
		}
	case *array.Binary:
		offs := a.ValueOffsets()
		for i := 0; i < n; i++ {
			cost[i] += validity + 32 + 8*int64(offs[i+1]-offs[i])
		}
	case *array.LargeString:
		for i := 0; i < n; i++ {
			cost[i] += validity + 64 + 8*int64(a.ValueLen(i))
		}
	case *array.LargeBinary:
		for i := 0; i < n; i++ {
			cost[i] += validity + 64 + 8*int64(len(a.Value(i)))
		}
	case *array.StringView:
		for i := 0; i < n; i++ {
			cost[i] += validity + 128 + 8*int64(viewData(a.ValueLen(i)))
		}
	case *array.BinaryView:
		for i := 0; i < n; i++ {
			cost[i] += validity + 128 + 8*int64(viewData(a.ValueLen(i)))
		}
	case array.ListLike:
		// List, LargeList, Map, FixedSizeList (and views): a row holds
		// the child rows [start, end).
		offBits := int64(32)
		switch arr.DataType().ID() {
		case arrow.LARGE_LIST:
			offBits = 64
		case arrow.FIXED_SIZE_LIST:
			offBits = 0
		case arrow.LIST_VIEW:
			offBits = 64
		case arrow.LARGE_LIST_VIEW:
			offBits = 128
		}
		lo, hi := int64(-1), int64(0)
		for i := 0; i < n; i++ {
			s, e := a.ValueOffsets(i)
			if e > s {
				if lo < 0 || s < lo {
					lo = s
				}
				hi = max(hi, e)
			}
		}
		var prefix []int64
		if lo >= 0 {
			child := array.NewSlice(a.ListValues(), lo, hi)
			sub := make([]int64, hi-lo)
			addRowBits(child, sub)
			child.Release()
			prefix = make([]int64, len(sub)+1)
			for j, c := range sub {
				prefix[j+1] = prefix[j] + c
			}
		}
		for i := 0; i < n; i++ {
			cost[i] += validity + offBits
			if s, e := a.ValueOffsets(i); e > s {
				cost[i] += prefix[e-lo] - prefix[s-lo]
			}
		}
	case *array.Struct:
		for i := 0; i < n; i++ {
			cost[i] += validity
		}
		for f := 0; f < a.NumField(); f++ {
			addRowBits(a.Field(f), cost)
		}
	case *array.Dictionary:
		// The dictionary goes in a message of its own; rows carry indices.
		addRowBits(a.Indices(), cost)
	default:
		if fw, ok := arr.DataType().(arrow.FixedWidthDataType); ok {
			w := int64(fw.BitWidth())
			for i := 0; i < n; i++ {
				cost[i] += validity + w
			}
			return
		}
		per := (8*util.TotalArraySize(arr) + int64(n) - 1) / int64(n)
		for i := 0; i < n; i++ {
			cost[i] += per
		}
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// viewData is the bytes a view of a value of n bytes keeps outside the
// view (values of up to 12 bytes are inlined).
func viewData(n int) int {
	if n <= 12 {
		return 0
	}
	return n
}
