package arrowconv

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Record returns rec with every column that names a column of
// table (exactly, else ignoring case, as the write path matches them)
// brought to that column's Arrow type, exactly: a value the table's type
// cannot hold is an error naming the column. Other columns are left for
// the write path to judge. The result is a new reference (release it).
//
// Arrow's cast kernels do most of it (with overflow and truncation
// checks); what they lack is done here: fixed-size and large lists to
// lists, lists, maps and structs whose children need converting (field
// names matched, not just positions), dictionaries, and 32- and 64-bit
// decimals.
func Record(ctx context.Context, mem memory.Allocator, table *arrow.Schema, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	in := rec.Schema()
	var cols []arrow.Array
	var fields []arrow.Field
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	changed := false
	for j, f := range in.Fields() {
		col := rec.Column(j)
		to := -1
		for i, tf := range table.Fields() {
			if tf.Name == f.Name {
				to = i
				break
			}
			if to < 0 && strings.EqualFold(tf.Name, f.Name) {
				to = i
			}
		}
		if to < 0 || arrow.TypeEqual(col.DataType(), table.Field(to).Type) {
			col.Retain()
			cols, fields = append(cols, col), append(fields, f)
			continue
		}
		tt := table.Field(to).Type
		out, err := Array(ctx, mem, col, tt)
		if err != nil {
			release()
			if _, ok := tt.(*arrow.Time32Type); ok {
				err = fmt.Errorf("%w (Paimon stores TIME as milliseconds of the day; a finer value is refused, not cut)", err)
			}
			return nil, fmt.Errorf("column %q: cannot write %s into %s: %w", f.Name, col.DataType(), tt, err)
		}
		changed = true
		f.Type = tt
		cols, fields = append(cols, out), append(fields, f)
	}
	if !changed {
		release()
		rec.Retain()
		return rec, nil
	}
	defer release()
	md := in.Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows()), nil
}

// Array converts arr to type to exactly (see Record). The result is a
// new reference.
func Array(ctx context.Context, mem memory.Allocator, arr arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), to) {
		arr.Retain()
		return arr, nil
	}
	switch a := arr.(type) {
	case *array.Dictionary:
		dense, err := compute.TakeArray(compute.WithAllocator(ctx, mem), a.Dictionary(), a.Indices())
		if err != nil {
			return nil, err
		}
		defer dense.Release()
		return Array(ctx, mem, dense, to)
	case *array.Decimal32, *array.Decimal64:
		wide, err := widenDecimal(mem, a)
		if err != nil {
			return nil, err
		}
		defer wide.Release()
		return Array(ctx, mem, wide, to)
	case *array.Struct:
		if st, ok := to.(*arrow.StructType); ok {
			return convertStruct(ctx, mem, a, st)
		}
	case *array.List, *array.LargeList, *array.FixedSizeList, *array.Map:
		switch to.(type) {
		case *arrow.ListType, *arrow.MapType:
			return convertList(ctx, mem, a.(array.ListLike), to)
		}
	}
	return compute.CastArray(compute.WithAllocator(ctx, mem), arr, compute.SafeCastOptions(to))
}

// convertList converts a list, large list, fixed-size list or map whose
// rows lie in order in its child to the list or map type to (int32
// offsets).
func convertList(ctx context.Context, mem memory.Allocator, a array.ListLike, to arrow.DataType) (arrow.Array, error) {
	n := a.Len()
	var elem arrow.DataType
	switch t := to.(type) {
	case *arrow.ListType:
		elem = t.Elem()
	case *arrow.MapType:
		elem = t.Elem()
	}
	var lo, hi int64
	if n > 0 {
		lo, _ = a.ValueOffsets(0)
		_, hi = a.ValueOffsets(n - 1)
	}
	// A null row that spans values (a fixed-size list's always do) gets
	// none: Parquet writers refuse null lists with values. Then the rows'
	// values are taken rather than sliced.
	var keep []int64
	for i := 0; i < n && keep == nil; i++ {
		if s, e := a.ValueOffsets(i); a.IsNull(i) && e > s {
			keep = []int64{}
		}
	}
	if keep != nil {
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				for s, e := a.ValueOffsets(i); s < e; s++ {
					keep = append(keep, s)
				}
			}
		}
		lo, hi = 0, int64(len(keep))
	}
	if hi-lo > math.MaxInt32 {
		return nil, fmt.Errorf("a batch's lists hold %d values, more than a list holds (2^31-1); send smaller batches", hi-lo)
	}
	var child arrow.Array
	if keep != nil {
		idx := array.NewInt64Builder(mem)
		idx.AppendValues(keep, nil)
		ia := idx.NewArray()
		idx.Release()
		var err error
		child, err = compute.TakeArray(compute.WithAllocator(ctx, mem), a.ListValues(), ia)
		ia.Release()
		if err != nil {
			return nil, err
		}
	} else {
		child = array.NewSlice(a.ListValues(), lo, hi)
	}
	defer child.Release()
	values, err := Array(ctx, mem, child, elem)
	if err != nil {
		return nil, fmt.Errorf("list values: %w", err)
	}
	defer values.Release()
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	defer offsets.Release()
	off := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	if keep != nil {
		at := int32(0)
		for i := 0; i < n; i++ {
			off[i] = at
			if s, e := a.ValueOffsets(i); a.IsValid(i) {
				at += int32(e - s)
			}
		}
		off[n] = at
	} else {
		for i := 0; i < n; i++ {
			s, e := a.ValueOffsets(i)
			off[i], off[i+1] = int32(s-lo), int32(e-lo)
		}
	}
	validity := copyValidity(mem, a)
	if validity != nil {
		defer validity.Release()
	}
	data := array.NewData(to, n, []*memory.Buffer{validity, offsets}, []arrow.ArrayData{values.Data()}, a.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// convertStruct converts a struct's fields to those of to, matched by
// name (else by position when no name matches and the counts agree).
func convertStruct(ctx context.Context, mem memory.Allocator, a *array.Struct, to *arrow.StructType) (arrow.Array, error) {
	st := a.DataType().(*arrow.StructType)
	byName := true
	for _, f := range to.Fields() {
		if _, ok := structField(st, f.Name); !ok {
			byName = false
		}
	}
	if !byName && st.NumFields() != to.NumFields() {
		for _, f := range to.Fields() {
			if _, ok := structField(st, f.Name); !ok && !f.Nullable {
				return nil, fmt.Errorf("struct field %q is missing and is NOT NULL", f.Name)
			}
		}
		byName = true // missing nullable fields are null
	}
	used := make([]bool, st.NumFields())
	children := make([]arrow.ArrayData, to.NumFields())
	defer func() {
		for _, c := range children {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range to.Fields() {
		j, ok := i, true
		if byName {
			j, ok = structField(st, f.Name)
		}
		if !ok {
			null := array.MakeArrayOfNull(mem, f.Type, a.Len())
			children[i] = null.Data()
			children[i].Retain()
			null.Release()
			continue
		}
		used[j] = true
		c, err := Array(ctx, mem, a.Field(j), f.Type)
		if err != nil {
			return nil, fmt.Errorf("struct field %q: %w", f.Name, err)
		}
		children[i] = c.Data()
		children[i].Retain()
		c.Release()
	}
	for j, u := range used {
		if !u {
			return nil, fmt.Errorf("struct field %q has no counterpart in %s", st.Field(j).Name, to)
		}
	}
	validity := copyValidity(mem, a)
	if validity != nil {
		defer validity.Release()
	}
	data := array.NewData(to, a.Len(), []*memory.Buffer{validity}, children, a.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

func structField(st *arrow.StructType, name string) (int, bool) {
	if i, ok := st.FieldIdx(name); ok {
		return i, true
	}
	for i, f := range st.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i, true
		}
	}
	return -1, false
}

// copyValidity is arr's validity bitmap starting at its first row, or nil
// when it has no nulls.
func copyValidity(mem memory.Allocator, arr arrow.Array) *memory.Buffer {
	if arr.NullN() == 0 {
		return nil
	}
	src := arr.Data().Buffers()[0]
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(arr.Len()))))
	bitutil.CopyBitmap(src.Bytes(), arr.Data().Offset(), arr.Len(), buf.Bytes(), 0)
	return buf
}

// widenDecimal copies a 32- or 64-bit decimal array into decimal128 of the
// same precision and scale.
func widenDecimal(mem memory.Allocator, arr arrow.Array) (arrow.Array, error) {
	dt := arr.DataType().(arrow.DecimalType)
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: dt.GetPrecision(), Scale: dt.GetScale()})
	defer b.Release()
	b.Reserve(arr.Len())
	for i := 0; i < arr.Len(); i++ {
		if arr.IsNull(i) {
			b.AppendNull()
			continue
		}
		switch a := arr.(type) {
		case *array.Decimal32:
			b.Append(decimal128.FromI64(int64(a.Value(i))))
		case *array.Decimal64:
			b.Append(decimal128.FromI64(int64(a.Value(i))))
		}
	}
	return b.NewArray(), nil
}
