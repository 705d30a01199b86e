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
			p, err := Encode(rec, tc.kinds, 42)
			require.NoError(t, err)
			id, ok := SchemaID(p)
			require.True(t, ok)
			require.Equal(t, int64(42), id)
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

// TestEntriesWrittenBeforeSchemaIDsStillDecode: versions 1 and 2 (no schema
// id) decode to the same batch and kinds; they report no schema id, and
// version 2 its write time.
func TestEntriesWrittenBeforeSchemaIDsStillDecode(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	p, err := Encode(rec, []byte{0, 3}, 5)
	require.NoError(t, err)
	v2 := append([]byte{version2, p[1]}, append(append([]byte(nil), p[2:10]...), p[18:]...)...)
	v1 := append([]byte{version1, p[1]}, p[18:]...)
	for name, old := range map[string][]byte{"v1": v1, "v2": v2} {
		t.Run(name, func(t *testing.T) {
			got, kinds, err := Decode(old, 2, mem)
			require.NoError(t, err)
			defer got.Release()
			require.True(t, array.RecordEqual(rec, got))
			require.Equal(t, []byte{0, 3}, kinds)
			_, ok := SchemaID(old)
			require.False(t, ok)
			_, ok = WriteTime(old)
			require.Equal(t, name == "v2", ok)
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
		{"v3 header truncated", []byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1},
		{"kinds truncated", []byte{1, 1, 0}, 3},
		{"not ipc", []byte{1, 0, 1, 2, 3, 4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(tc.payload, tc.rows, mem)
			require.ErrorIs(t, err, ErrCorrupt)
		})
	}
}
