package arrowutil

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// TestValidateRecordReportsOffsetsPastTheirData: a string column with an
// offset past its data (the last one in bounds, so the array is built)
// panicked inside arrow-go's own full validation; it is an error.
func TestValidateRecordReportsOffsetsPastTheirData(t *testing.T) {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues([]string{"ab", "c"}, nil)
	good := b.NewStringArray()
	b.Release()
	defer good.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{good}, 2)
	require.NoError(t, ValidateRecord(rec))
	rec.Release()

	offsets := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 16385, 3}))
	data := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, offsets, good.Data().Buffers()[2]}, nil, 0, 0)
	bad := array.MakeFromData(data)
	data.Release()
	defer bad.Release()
	rec = array.NewRecordBatch(sc, []arrow.Array{bad}, 2)
	defer rec.Release()
	require.Error(t, ValidateRecord(rec))
}
