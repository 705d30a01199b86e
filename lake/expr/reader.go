package expr

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
)

// Filter is a conjunction of predicates bound to the columns of a schema
// (BindSchema), one Term per predicate in the order given.
type Filter []Term

// Term is a predicate of a Filter, bound to column Col (its index in the
// schema; a caller that reads fewer columns may renumber it).
type Term struct {
	Col   int
	Bound Bound
}

// BindSchema binds ps to the columns of sc, found by name as SQL finds
// them (case-insensitively). ok is false when a predicate names no column
// of sc or does not bind (Bind): the statement is then DuckDB's to run,
// which has the last word.
func BindSchema(sc *arrow.Schema, ps []Predicate) (f Filter, ok bool) {
	for _, p := range ps {
		col := -1
		for i, fd := range sc.Fields() {
			if strings.EqualFold(fd.Name, p.Column) {
				col = i
				break
			}
		}
		if col < 0 {
			return nil, false
		}
		b, ok := Bind(KindOf(sc.Field(col).Type), p)
		if !ok {
			return nil, false
		}
		f = append(f, Term{Col: col, Bound: b})
	}
	return f, true
}

// colConj is the conjunction of a Filter's predicates on one column.
type colConj struct {
	col  int
	conj Conj
}

// byColumn groups f's predicates by column, in order of first mention.
func (f Filter) byColumn() []colConj {
	var out []colConj
	for _, t := range f {
		i := 0
		for i < len(out) && out[i].col != t.Col {
			i++
		}
		if i == len(out) {
			out = append(out, colConj{col: t.Col})
		}
		out[i].conj = append(out[i].conj, t.Bound)
	}
	return out
}

// filterReader hands out the rows of r's batches that match a Filter.
type filterReader struct {
	refs atomic.Int64
	ctx  context.Context
	mem  memory.Allocator
	r    array.RecordReader
	cols []colConj
	cur  arrow.RecordBatch
	err  error
}

// NewReader hands out the rows of r's batches that match every predicate
// of f (nulls never match), in order; it takes over r. A batch without a
// matching row is left out, but a batch without rows is passed on (a
// stream's empty batch marks a point in it). A column that is not of its
// predicates' kind is an error.
func NewReader(ctx context.Context, mem memory.Allocator, r array.RecordReader, f Filter) array.RecordReader {
	fr := &filterReader{ctx: ctx, mem: mem, r: r, cols: f.byColumn()}
	fr.refs.Store(1)
	return fr
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
		if n == 0 {
			rec.Retain()
			f.cur = rec
			return true
		}
		var keep []bool
		for _, c := range f.cols {
			match, ok := c.conj.Matcher(rec.Column(c.col))
			if !ok {
				f.err = fmt.Errorf("expr: filter column %q is %s, not of its predicates' kind", rec.ColumnName(c.col), rec.Column(c.col).DataType())
				return false
			}
			keep = Narrow(keep, n, match)
		}
		if keep == nil { // every row
			rec.Retain()
			f.cur = rec
			return true
		}
		out, err := arrowutil.FilterRecord(f.ctx, f.mem, rec, keep)
		if err != nil {
			f.err = err
			return false
		}
		if out != nil {
			f.cur = out
			return true
		}
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
