package logcodec

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// fuzzSchema has a column of each kind the lake maps to Arrow.
var fuzzSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
}, nil)

const fuzzRows = `[{"id": 1, "s": "a", "b": "AAE=", "d": "1.25", "ts": "2024-01-02T03:04:05.000006", "l": ["x", null], "m": [{"key": "k", "value": 1}], "r": {"a": 1}},
 {"id": 2, "s": null, "b": null, "d": null, "ts": null, "l": [], "m": null, "r": null},
 {"id": 3, "s": "", "b": "", "d": "-0.01", "ts": "1970-01-01T00:00:00", "l": null, "m": [], "r": {"a": null}}]`

// FuzzDecode: any payload and row count decode or fail with an error (never
// a panic or a fatal out of memory); a decoded batch and its kinds encode to a payload
// that decodes to the same batch and kinds.
func FuzzDecode(f *testing.F) {
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, fuzzSchema, strings.NewReader(fuzzRows))
	require.NoError(f, err)
	defer rec.Release()
	for _, kinds := range [][]byte{nil, {0, 1, 2}, {3, 3, 3}} {
		p, err := Encode(rec, kinds, 7)
		require.NoError(f, err)
		f.Add(p, int64(3))
		f.Add(append([]byte{version2, p[1]}, append(p[2:10:10], p[18:]...)...), int64(3))
		f.Add(append([]byte{version1, p[1]}, p[18:]...), int64(3))
	}
	empty := rec.NewSlice(0, 0)
	p, err := Encode(empty, nil, 0)
	empty.Release()
	require.NoError(f, err)
	f.Add(p, int64(0))
	f.Fuzz(func(t *testing.T, payload []byte, rows int64) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		got, kinds, err := Decode(payload, rows, mem)
		if err != nil {
			// arrow-go leaks a message body when it recovers from a
			// panic on bad buffers (the Go allocator's memory is
			// collected): no leak check on this path.
			return
		}
		defer mem.AssertSize(t, 0)
		defer got.Release()
		if got.NumRows() != rows {
			t.Fatalf("%d rows, entry says %d", got.NumRows(), rows)
		}
		if kinds != nil && int64(len(kinds)) != rows {
			t.Fatalf("%d kinds for %d rows", len(kinds), rows)
		}
		again, err := Encode(got, kinds, 0)
		if err != nil {
			t.Fatalf("decoded batch does not encode: %v", err)
		}
		back, backKinds, err := Decode(again, rows, mem)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		defer back.Release()
		if !array.RecordEqual(got, back) || string(kinds) != string(backKinds) {
			t.Fatalf("batch changed through encode and decode")
		}
	})
}
