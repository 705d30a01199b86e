package expr_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lake/expr"
)

// benchBatch is 64k rows: id int64 0.., s "customer-%06d" of id.
func benchBatch() arrow.RecordBatch {
	const n = 64 * 1024
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer-%06d", i))
	}
	return rb.NewRecordBatch()
}

// BenchmarkMatcher: the row matcher over a batch of 64k rows (a point
// query's key is op=eq), the matcher made once per batch.
func BenchmarkMatcher(b *testing.B) {
	rec := benchBatch()
	defer rec.Release()
	n := int(rec.NumRows())
	for _, tc := range []struct {
		name  string
		preds []expr.Predicate
	}{
		{"col=int64/op=eq", []expr.Predicate{{Op: expr.OpEq, Values: []any{int64(n / 2)}}}},
		{"col=int64/op=range", []expr.Predicate{{Op: expr.OpGe, Values: []any{int64(100)}}, {Op: expr.OpLt, Values: []any{int64(6000)}}}},
		{"col=int64/op=in", []expr.Predicate{{Op: expr.OpIn, Values: []any{int64(5), int64(500), int64(50000)}}}},
		{"col=string/op=eq", []expr.Predicate{{Column: "s", Op: expr.OpEq, Values: []any{"customer-000500"}}}},
		{"col=string/op=range", []expr.Predicate{{Column: "s", Op: expr.OpGe, Values: []any{"customer-000100"}}, {Column: "s", Op: expr.OpLt, Values: []any{"customer-006000"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			col := rec.Column(0)
			if tc.preds[0].Column == "s" {
				col = rec.Column(1)
			}
			var conj expr.Conj
			for _, p := range tc.preds {
				bd, ok := expr.Bind(expr.KindOf(col.DataType()), p)
				if !ok {
					b.Fatal("bind")
				}
				conj = append(conj, bd)
			}
			hits := 0
			for b.Loop() {
				m, _ := conj.Matcher(col)
				for r := 0; r < n; r++ {
					if m(r) {
						hits++
					}
				}
			}
			if hits == 0 {
				b.Fatal("no hits")
			}
		})
	}
}

// BenchmarkFilterReader: NewReader over a batch of 64k rows.
func BenchmarkFilterReader(b *testing.B) {
	rec := benchBatch()
	defer rec.Release()
	sc := rec.Schema()
	for _, tc := range []struct {
		name  string
		preds []expr.Predicate
	}{
		{"op=eq", []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{int64(500)}}}},
		{"op=range", []expr.Predicate{{Column: "id", Op: expr.OpGe, Values: []any{int64(100)}}, {Column: "id", Op: expr.OpLt, Values: []any{int64(6000)}}}},
		{"op=string-range", []expr.Predicate{{Column: "s", Op: expr.OpGe, Values: []any{"customer-000100"}}, {Column: "s", Op: expr.OpLt, Values: []any{"customer-006000"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, ok := expr.BindSchema(sc, tc.preds)
			if !ok {
				b.Fatal("bind")
			}
			for b.Loop() {
				rr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
				if err != nil {
					b.Fatal(err)
				}
				r := expr.NewReader(context.Background(), memory.DefaultAllocator, rr, f)
				rows := 0
				for r.Next() {
					rows += int(r.RecordBatch().NumRows())
				}
				r.Release()
				if rows == 0 {
					b.Fatal("no rows")
				}
			}
		})
	}
}
