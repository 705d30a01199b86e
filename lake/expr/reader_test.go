package expr_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
)

var readerSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "Name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
}, nil)

// batch builds a batch of readerSchema; a name "" is null.
func batch(mem memory.Allocator, ids []int64, names []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, readerSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		if names[i] == "" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(names[i])
		}
		b.Field(2).(*array.Date32Builder).Append(arrow.Date32(18997 + id))
	}
	return b.NewRecordBatch()
}

// BindSchema finds columns as SQL does and refuses what does not bind;
// NewReader hands out exactly the matching rows, leaves out batches
// without one, passes empty batches on and hands a batch whose rows all
// match as it is.
func TestReader(t *testing.T) {
	mem := newMem(t)
	_, ok := expr.BindSchema(readerSchema, []expr.Predicate{{Column: "nope", Op: expr.OpEq, Values: []any{int64(1)}}})
	require.False(t, ok, "unknown column")
	_, ok = expr.BindSchema(readerSchema, []expr.Predicate{{Column: "name", Op: expr.OpEq, Values: []any{int64(1)}}})
	require.False(t, ok, "an integer for a string column")
	_, ok = expr.BindSchema(readerSchema, []expr.Predicate{{Column: "d", Op: expr.OpEq, Values: []any{int64(1)}}})
	require.False(t, ok, "an integer for a DATE column")
	f, ok := expr.BindSchema(readerSchema, []expr.Predicate{
		{Column: "ID", Op: expr.OpGe, Values: []any{"2"}},
		{Column: "name", Op: expr.OpIn, Values: []any{"b", "c", "x"}},
		{Column: "D", Op: expr.OpLt, Values: []any{"2022-01-15"}}, // id < 10
	})
	require.True(t, ok)
	require.Equal(t, []int{0, 1, 2}, []int{f[0].Col, f[1].Col, f[2].Col})

	batches := []arrow.RecordBatch{
		batch(mem, []int64{1, 2, 3, 4, 5}, []string{"b", "b", "", "c", "a"}), // rows 2, 4
		batch(mem, nil, nil),                                    // passed on
		batch(mem, []int64{0, 1}, []string{"b", "c"}),           // none
		batch(mem, []int64{7, 8}, []string{"x", "c"}),           // all: as it is
		batch(mem, []int64{9, 10, 11}, []string{"c", "c", "c"}), // 9
	}
	rr, err := array.NewRecordReader(readerSchema, batches)
	require.NoError(t, err)
	for _, b := range batches {
		b.Release()
	}
	r := expr.NewReader(context.Background(), mem, rr, f)
	defer r.Release()
	var got [][]int64
	for r.Next() {
		rec := r.RecordBatch()
		got = append(got, append([]int64{}, rec.Column(0).(*array.Int64).Int64Values()...))
		if len(got) == 3 {
			require.Same(t, batches[3], rec, "every row matches: the batch itself")
		}
	}
	require.NoError(t, r.Err())
	require.Equal(t, [][]int64{{2, 4}, {}, {7, 8}, {9}}, got)
}

// A column that is not of its predicates' kind fails the reader.
func TestReaderWrongKind(t *testing.T) {
	mem := newMem(t)
	f, ok := expr.BindSchema(readerSchema, []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{int64(1)}}})
	require.True(t, ok)
	f[0].Col = 1 // as a caller renumbering columns wrongly would
	b := batch(mem, []int64{1}, []string{"a"})
	rr, err := array.NewRecordReader(readerSchema, []arrow.RecordBatch{b})
	require.NoError(t, err)
	b.Release()
	r := expr.NewReader(context.Background(), mem, rr, f)
	defer r.Release()
	require.False(t, r.Next())
	require.ErrorContains(t, r.Err(), `"Name"`)
}
