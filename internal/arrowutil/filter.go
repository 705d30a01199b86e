package arrowutil

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/bufpool"
)

// FilterRecord returns the rows of rec whose keep entry is true (len(keep)
// must be rec's row count): rec itself, retained, when all are kept, and
// nil when none is. The caller releases the result.
//
// It copies the runs of kept rows with one copy per run and column, so it
// costs about a copy of the kept bytes when the dropped rows are few (the
// lake rows a log replaces in a t$rt scan: arrow-go's Filter kernel copied
// strings value by value, a sixth of that scan's CPU). Columns of types
// other than fixed-width, boolean and (large) string or binary go through
// arrow-go's Filter kernel, MAP columns through its Take kernel.
func FilterRecord(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
	if len(keep) != int(rec.NumRows()) {
		return nil, fmt.Errorf("arrowutil: filter of %d rows with %d keep flags", rec.NumRows(), len(keep))
	}
	var runs [][2]int
	n := 0
	for i := 0; i < len(keep); {
		if !keep[i] {
			i++
			continue
		}
		j := i + 1
		for j < len(keep) && keep[j] {
			j++
		}
		runs = append(runs, [2]int{i, j})
		n += j - i
		i = j
	}
	switch n {
	case 0:
		return nil, nil
	case len(keep):
		rec.Retain()
		return rec, nil
	}
	var mask, idx arrow.Array // for the columns the runs cannot copy, built once
	defer func() {
		for _, a := range []arrow.Array{mask, idx} {
			if a != nil {
				a.Release()
			}
		}
	}()
	return selectRows(rec, n, "filter",
		func(col arrow.Array) arrow.Array { return filterRuns(mem, col, runs, n) },
		func(col arrow.Array) (arrow.Array, error) {
			if col.DataType().ID() == arrow.MAP {
				// arrow-go's Filter kernel has none for a MAP (its Take has)
				if idx == nil {
					rows := make([]int32, 0, n)
					for _, r := range runs {
						for i := r[0]; i < r[1]; i++ {
							rows = append(rows, int32(i))
						}
					}
					idx = indexArray(mem, rows)
				}
				return compute.TakeArray(compute.WithAllocator(ctx, mem), col, idx)
			}
			if mask == nil {
				bb := array.NewBooleanBuilder(mem)
				bb.AppendValues(keep, nil)
				mask = bb.NewArray()
				bb.Release()
			}
			return compute.FilterArray(compute.WithAllocator(ctx, mem), col, mask, *compute.DefaultFilterOptions())
		})
}

// selectRows assembles the n rows a filter or a take of rec keeps: each
// column as copyCol copies it, or, for a type copyCol does not copy (it
// returns nil), as arrow-go's kernel does. what names the operation in
// errors.
func selectRows(rec arrow.RecordBatch, n int, what string, copyCol func(arrow.Array) arrow.Array, kernel func(arrow.Array) (arrow.Array, error)) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for i, col := range rec.Columns() {
		out := copyCol(col)
		if out == nil {
			var err error
			if out, err = kernel(col); err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return nil, fmt.Errorf("arrowutil: %s column %q: %w", what, rec.ColumnName(i), err)
			}
		}
		cols[i] = out
	}
	res := array.NewRecordBatch(rec.Schema(), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return res, nil
}

// filterRuns copies the rows of runs (n in all) of arr, or returns nil
// when its type is not one it copies.
func filterRuns(mem memory.Allocator, arr arrow.Array, runs [][2]int, n int) arrow.Array {
	d := arr.Data()
	off := d.Offset()
	dt := arr.DataType()
	var buffers []*memory.Buffer
	switch dt.ID() {
	case arrow.BOOL:
		buffers = []*memory.Buffer{nil, copyBits(mem, d.Buffers()[1].Bytes(), off, runs, n)}
	case arrow.STRING, arrow.BINARY:
		offs, data := copyVarBinary[int32](mem, d, runs, n)
		buffers = []*memory.Buffer{nil, offs, data}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		offs, data := copyVarBinary[int64](mem, d, runs, n)
		buffers = []*memory.Buffer{nil, offs, data}
	default:
		w, ok := fixedWidth(d)
		if !ok {
			return nil
		}
		src := d.Buffers()[1].Bytes()
		// The runs write every value: a pool need not clear the buffer.
		raw, _ := bufpool.UnzeroedOf(mem)
		buf := memory.NewResizableBuffer(raw)
		buf.Resize(n * w)
		dst := buf.Bytes()
		at := 0
		for _, r := range runs {
			at += copy(dst[at:], src[(off+r[0])*w:(off+r[1])*w])
		}
		buffers = []*memory.Buffer{nil, buf}
	}
	nulls := 0
	if arr.NullN() > 0 {
		buffers[0] = copyBits(mem, d.Buffers()[0].Bytes(), off, runs, n)
		nulls = n - bitutil.CountSetBits(buffers[0].Bytes(), 0, n)
	}
	return newArray(dt, n, buffers, nulls)
}

// fixedWidth returns the byte width of the values of d, when d is an array
// of a fixed-width type of whole bytes with a validity bitmap and one
// values buffer (not dictionaries, extension or nested types).
func fixedWidth(d arrow.ArrayData) (int, bool) {
	dt := d.DataType()
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 || fw.BitWidth() == 0 || len(d.Buffers()) != 2 || len(d.Children()) != 0 || dt.ID() == arrow.DICTIONARY {
		return 0, false
	}
	if _, ext := dt.(arrow.ExtensionType); ext {
		return 0, false
	}
	return fw.BitWidth() / 8, true
}

// newArray makes an array of n values of buffers, which it takes over.
func newArray(dt arrow.DataType, n int, buffers []*memory.Buffer, nulls int) arrow.Array {
	out := array.NewData(dt, n, buffers, nil, nulls, 0)
	for _, b := range buffers {
		if b != nil {
			b.Release()
		}
	}
	defer out.Release()
	return array.MakeFromData(out)
}

// copyBits copies the bits of runs (shifted by off) of a bitmap into a new
// one of n bits.
func copyBits(mem memory.Allocator, src []byte, off int, runs [][2]int, n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	dst, at := buf.Bytes(), 0
	for _, r := range runs {
		bitutil.CopyBitmap(src, off+r[0], r[1]-r[0], dst, at)
		at += r[1] - r[0]
	}
	return buf
}

// copyVarBinary copies the values of runs of a (large) string or binary
// array into new offsets and data buffers.
func copyVarBinary[O int32 | int64](mem memory.Allocator, d arrow.ArrayData, runs [][2]int, n int) (*memory.Buffer, *memory.Buffer) {
	srcOffs, srcData := varBinaryBuffers[O](d)
	size := 0
	for _, r := range runs {
		size += int(srcOffs[r[1]] - srcOffs[r[0]])
	}
	ob, offs, db, data := newVarBinaryBuffers[O](mem, n, size)
	at, pos := 0, O(0)
	for _, r := range runs {
		base := srcOffs[r[0]]
		for i := r[0]; i < r[1]; i++ {
			offs[at] = pos + srcOffs[i] - base
			at++
		}
		pos += O(copy(data[pos:], srcData[base:srcOffs[r[1]]]))
	}
	offs[at] = pos
	return ob, db
}

// varBinaryBuffers returns the offsets (from d's offset on) and the data of
// a (large) string or binary array.
func varBinaryBuffers[O int32 | int64](d arrow.ArrayData) ([]O, []byte) {
	var offs []O
	if b := d.Buffers()[1]; b != nil && b.Len() > 0 {
		raw := b.Bytes()
		offs = unsafe.Slice((*O)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/int(unsafe.Sizeof(O(0))))[d.Offset():]
	}
	var data []byte
	if b := d.Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	return offs, data
}

// newVarBinaryBuffers allocates the offsets of n values and size bytes of
// data, and returns them with their typed views.
func newVarBinaryBuffers[O int32 | int64](mem memory.Allocator, n, size int) (*memory.Buffer, []O, *memory.Buffer, []byte) {
	ob := memory.NewResizableBuffer(mem)
	ob.Resize((n + 1) * int(unsafe.Sizeof(O(0))))
	offs := unsafe.Slice((*O)(unsafe.Pointer(unsafe.SliceData(ob.Bytes()))), n+1)
	db := memory.NewResizableBuffer(mem)
	db.Resize(size)
	return ob, offs, db, db.Bytes()
}
