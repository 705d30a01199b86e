package plan

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lake"
)

// BoundPred is a predicate bound to a column of a schema, its values
// converted as SQL converts a literal to the column's type: int64 for
// integer and DATE columns (days), string for string columns.
type BoundPred struct {
	Col  int // the column's index in the schema
	op   lake.Op
	vals []any
}

// BindPredicates binds ps to schema. ok is false when a predicate names an
// unknown column, a column of another type, or a value that does not
// convert: the statement then goes to DuckDB, which has the last word.
func BindPredicates(schema *arrow.Schema, ps []lake.Predicate) (out []BoundPred, ok bool) {
	for _, p := range ps {
		col := -1
		for i, f := range schema.Fields() {
			if strings.EqualFold(f.Name, p.Column) {
				col = i
				break
			}
		}
		if col < 0 {
			return nil, false
		}
		bp := BoundPred{Col: col, op: p.Op}
		for _, v := range p.Values {
			cv, ok := literalFor(schema.Field(col).Type, v)
			if !ok {
				return nil, false
			}
			bp.vals = append(bp.vals, cv)
		}
		out = append(out, bp)
	}
	return out, true
}

func literalFor(t arrow.DataType, v any) (any, bool) {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		switch x := v.(type) {
		case int64:
			return x, true
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			return n, err == nil
		}
	case arrow.DATE32:
		if x, ok := v.(string); ok {
			d, err := time.Parse("2006-01-02", x)
			if err != nil {
				return nil, false
			}
			return d.Unix() / 86400, true
		}
	case arrow.STRING, arrow.LARGE_STRING:
		if x, ok := v.(string); ok {
			return x, true
		}
	}
	return nil, false
}

// matches evaluates the conjunction on row i of rec (null never matches).
func matches(rec arrow.RecordBatch, preds []BoundPred, i int) bool {
	for _, p := range preds {
		a := rec.Column(p.Col)
		if a.IsNull(i) {
			return false
		}
		var v any
		switch c := a.(type) {
		case *array.Int8:
			v = int64(c.Value(i))
		case *array.Int16:
			v = int64(c.Value(i))
		case *array.Int32:
			v = int64(c.Value(i))
		case *array.Int64:
			v = c.Value(i)
		case *array.Date32:
			v = int64(c.Value(i))
		case *array.String:
			v = c.Value(i)
		case *array.LargeString:
			v = c.Value(i)
		default:
			return false
		}
		if !compareOp(p.op, v, p.vals) {
			return false
		}
	}
	return true
}

func compareOp(op lake.Op, v any, vals []any) bool {
	cmp := func(b any) int {
		switch x := v.(type) {
		case int64:
			y := b.(int64)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
		case string:
			return strings.Compare(x, b.(string))
		}
		return 0
	}
	switch op {
	case lake.OpEq:
		return cmp(vals[0]) == 0
	case lake.OpLt:
		return cmp(vals[0]) < 0
	case lake.OpLe:
		return cmp(vals[0]) <= 0
	case lake.OpGt:
		return cmp(vals[0]) > 0
	case lake.OpGe:
		return cmp(vals[0]) >= 0
	case lake.OpIn:
		for _, b := range vals {
			if cmp(b) == 0 {
				return true
			}
		}
	}
	return false
}

// filterReader hands out the rows of r's batches that match preds.
type filterReader struct {
	refs  atomic.Int64
	ctx   context.Context
	mem   memory.Allocator
	r     array.RecordReader
	preds []BoundPred
	cur   arrow.RecordBatch
	err   error
}

// NewFilterReader hands out the rows of r's batches that match every
// predicate of preds (nulls never match); it takes over r.
func NewFilterReader(ctx context.Context, mem memory.Allocator, r array.RecordReader, preds []BoundPred) array.RecordReader {
	f := &filterReader{ctx: ctx, mem: mem, r: r, preds: preds}
	f.refs.Store(1)
	return f
}

func (f *filterReader) Retain() { f.refs.Add(1) }

func (f *filterReader) Release() {
	if f.refs.Add(-1) != 0 {
		return
	}
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
	f.r.Release()
}

func (f *filterReader) Schema() *arrow.Schema { return f.r.Schema() }

func (f *filterReader) Next() bool {
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
	for f.err == nil && f.r.Next() {
		rec := f.r.RecordBatch()
		n := int(rec.NumRows())
		if n == 0 { // passed on: a stream's empty batch marks a point in it
			rec.Retain()
			f.cur = rec
			return true
		}
		b := array.NewBooleanBuilder(f.mem)
		b.Reserve(n)
		kept := 0
		for i := 0; i < n; i++ {
			m := matches(rec, f.preds, i)
			if m {
				kept++
			}
			b.UnsafeAppend(m)
		}
		mask := b.NewBooleanArray()
		b.Release()
		switch kept {
		case 0:
			mask.Release()
			continue
		case n:
			mask.Release()
			rec.Retain()
			f.cur = rec
			return true
		}
		out, err := compute.FilterRecordBatch(compute.WithAllocator(f.ctx, f.mem), rec, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			f.err = err
			return false
		}
		f.cur = out
		return true
	}
	return false
}

func (f *filterReader) RecordBatch() arrow.RecordBatch { return f.cur }

// Record is the deprecated spelling of RecordBatch.
func (f *filterReader) Record() arrow.RecordBatch { return f.cur }

func (f *filterReader) Err() error {
	if f.err != nil {
		return f.err
	}
	return f.r.Err()
}
