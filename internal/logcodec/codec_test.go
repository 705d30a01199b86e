package logcodec

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	rec := b.NewRecordBatch()
	defer rec.Release()

	for _, tc := range []struct {
		name  string
		kinds []byte
	}{{"no kinds", nil}, {"kinds", []byte{0, 2, 3}}} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().Add(-time.Millisecond)
			p, err := Encode(rec, tc.kinds)
			require.NoError(t, err)
			at, ok := WriteTime(p)
			require.True(t, ok)
			require.WithinRange(t, at, before.Truncate(time.Millisecond), time.Now())
			got, kinds, err := Decode(p, 3, mem)
			require.NoError(t, err)
			defer got.Release()
			require.Equal(t, tc.kinds, kinds)
			require.True(t, array.RecordEqual(rec, got))
		})
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, tc := range []struct {
		name    string
		payload []byte
		rows    int64
	}{
		{"empty", nil, 1},
		{"bad version", []byte{9, 0}, 1},
		{"v2 header truncated", []byte{2, 0, 1, 2}, 1},
		{"kinds truncated", []byte{1, 1, 0}, 3},
		{"not ipc", []byte{1, 0, 1, 2, 3, 4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(tc.payload, tc.rows, mem)
			require.ErrorIs(t, err, ErrCorrupt)
		})
	}
}
