package arrowutil

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func TestConcatRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mk := func(v ...int64) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(v, nil)
		return b.NewRecordBatch()
	}
	r1, r2 := mk(1, 2), mk(3)
	defer r1.Release()
	defer r2.Release()
	out, err := ConcatRecords([]arrow.RecordBatch{r1, r2}, mem)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, out.Column(0).(*array.Int64).Int64Values())
	out.Release()
	one, err := ConcatRecords([]arrow.RecordBatch{r1}, mem)
	require.NoError(t, err)
	require.Same(t, r1, one)
	one.Release()
	_, err = ConcatRecords(nil, mem)
	require.Error(t, err)
}
