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
func TakeRecord(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, rows []int32) (arrow.RecordBatch, error) {
	n := int32(rec.NumRows())
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
	cols := make([]arrow.Array, rec.NumCols())
	for i, col := range rec.Columns() {
		out := takeRows(mem, col, rows)
		if out == nil {
			if idx == nil {
				ib := array.NewInt32Builder(mem)
				ib.AppendValues(rows, nil)
				idx = ib.NewArray()
				ib.Release()
			}
			var err error
			out, err = compute.TakeArray(compute.WithAllocator(ctx, mem), col, idx)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return nil, fmt.Errorf("arrowutil: take column %q: %w", rec.ColumnName(i), err)
			}
		}
		cols[i] = out
	}
	res := array.NewRecordBatch(rec.Schema(), cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return res, nil
}

// takeRows copies the values of arr at rows, or returns nil when its type
// is not one it copies.
func takeRows(mem memory.Allocator, arr arrow.Array, rows []int32) arrow.Array {
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

func takeFixed[T uint32 | uint64](dst, src []T, rows []int32) {
	for i, r := range rows {
		dst[i] = src[r]
	}
}

// takeBits copies the bits at rows (shifted by off) into a new bitmap.
func takeBits(mem memory.Allocator, src []byte, off int, rows []int32) *memory.Buffer {
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
func takeVarBinary[O int32 | int64](mem memory.Allocator, d arrow.ArrayData, rows []int32) (*memory.Buffer, *memory.Buffer) {
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
