package lakestream

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/union"
)

// keyFilter's predicates bind to their key columns (integer, DATE and
// string keys) and hold for every key of the entries: a DATE key gives
// dates, which bind to a DATE column, as an integer would not.
func TestKeyFilterBindsEveryKeyType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{3, -1}, nil)
	b.Field(1).(*array.Date32Builder).AppendValues([]arrow.Date32{19000, -5}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"x", "é"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	ps := keyFilter(&tableMeta{schema: sc, key: []int{0, 1, 2}}, []union.ChangelogEntry{{LogBatch: union.LogBatch{Rec: rec}}})
	require.Len(t, ps, 3)
	for i, p := range ps {
		require.Equal(t, sc.Field(i).Name, p.Column)
		bound, ok := expr.Bind(expr.KindOf(sc.Field(i).Type), p)
		require.True(t, ok, "%v", p)
		match, ok := expr.Conj{bound}.Matcher(rec.Column(i))
		require.True(t, ok)
		require.True(t, match(0) && match(1), "%v", p)
	}
}
