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
)

// TakeRecord returns the rows of rec at the positions rows, in that order
// (a position may repeat). The caller releases the result.
//
// Fixed-width, boolean and (large) string or binary columns are copied
// value by value without arrow-go's Take kernel, whose bounds checks and
// builders were a quarter of the server's CPU when ingest split each batch
// by bucket; other types go through the kernel.
func TakeRecord[I int32 | int64](ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, rows []I) (arrow.RecordBatch, error) {
	n := I(rec.NumRows())
	for _, r := range rows {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("arrowutil: take of row %d from %d rows", r, n)
		}
	}
	var idx arrow.Array // for the columns taken by the kernel, built once
	defer func() {
		if idx != nil {
			idx.Release()
		}
	}()
	return selectRows(rec, len(rows), "take",
		func(col arrow.Array) arrow.Array { return takeRows(mem, col, rows) },
		func(col arrow.Array) (arrow.Array, error) {
			if idx == nil {
				idx = indexArray(mem, rows)
			}
			return compute.TakeArray(compute.WithAllocator(ctx, mem), col, idx)
		})
}

// indexArray is rows as an Arrow array of their width.
func indexArray[I int32 | int64](mem memory.Allocator, rows []I) arrow.Array {
	switch rows := any(rows).(type) {
	case []int32:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.AppendValues(rows, nil)
		return b.NewArray()
	default:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(rows.([]int64), nil)
		return b.NewArray()
	}
}

// takeRows copies the values of arr at rows, or returns nil when its type
// is not one it copies.
func takeRows[I int32 | int64](mem memory.Allocator, arr arrow.Array, rows []I) arrow.Array {
	d := arr.Data()
	off := d.Offset()
	dt := arr.DataType()
	n := len(rows)
	var buffers []*memory.Buffer
	switch dt.ID() {
	case arrow.BOOL:
		buffers = []*memory.Buffer{nil, takeBits(mem, d.Buffers()[1].Bytes(), off, rows)}
	case arrow.STRING, arrow.BINARY:
		offs, data := takeVarBinary[int32](mem, d, rows)
		buffers = []*memory.Buffer{nil, offs, data}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		offs, data := takeVarBinary[int64](mem, d, rows)
		buffers = []*memory.Buffer{nil, offs, data}
	default:
		w, ok := fixedWidth(d)
		if !ok {
			return nil
		}
		src := d.Buffers()[1].Bytes()[off*w:]
		buf := memory.NewResizableBuffer(mem)
		buf.Resize(n * w)
		dst := buf.Bytes()
		switch w {
		case 8:
			takeFixed(unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(dst))), n), unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/8), rows)
		case 4:
			takeFixed(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(dst))), n), unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/4), rows)
		default:
			for i, r := range rows {
				copy(dst[i*w:(i+1)*w], src[int(r)*w:(int(r)+1)*w])
			}
		}
		buffers = []*memory.Buffer{nil, buf}
	}
	nulls := 0
	if arr.NullN() > 0 {
		buffers[0] = takeBits(mem, d.Buffers()[0].Bytes(), off, rows)
		nulls = n - bitutil.CountSetBits(buffers[0].Bytes(), 0, n)
	}
	return newArray(dt, n, buffers, nulls)
}

func takeFixed[T uint32 | uint64, I int32 | int64](dst, src []T, rows []I) {
	for i, r := range rows {
		dst[i] = src[r]
	}
}

// takeBits copies the bits at rows (shifted by off) into a new bitmap.
func takeBits[I int32 | int64](mem memory.Allocator, src []byte, off int, rows []I) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(rows)))))
	dst := buf.Bytes()
	for i, r := range rows {
		if bitutil.BitIsSet(src, off+int(r)) {
			bitutil.SetBit(dst, i)
		}
	}
	return buf
}

// takeVarBinary copies the values at rows of a (large) string or binary
// array into new offsets and data buffers.
func takeVarBinary[O, I int32 | int64](mem memory.Allocator, d arrow.ArrayData, rows []I) (*memory.Buffer, *memory.Buffer) {
	srcOffs, srcData := varBinaryBuffers[O](d)
	size := 0
	for _, r := range rows {
		size += int(srcOffs[r+1] - srcOffs[r])
	}
	ob, offs, db, data := newVarBinaryBuffers[O](mem, len(rows), size)
	pos := O(0)
	for i, r := range rows {
		offs[i] = pos
		pos += O(copy(data[pos:], srcData[srcOffs[r]:srcOffs[r+1]]))
	}
	offs[len(rows)] = pos
	return ob, db
}
