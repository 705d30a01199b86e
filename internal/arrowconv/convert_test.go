package arrowconv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// TestConvertNestedSlicesKeepEveryValue: random nested columns (lists of
// every kind, structs, maps, dictionaries, with nulls at every level),
// sliced at random offsets, converted to the Arrow type of the Paimon
// type ingest creates for them, print the same value in every row.
func TestConvertNestedSlicesKeepEveryValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(3, 5))
	types := []arrow.DataType{
		arrow.ListOf(arrow.PrimitiveTypes.Uint8),
		arrow.LargeListOf(arrow.BinaryTypes.LargeString),
		arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Uint32),
		arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int8), Nullable: true}),
		arrow.MapOf(arrow.BinaryTypes.LargeString, arrow.ListOf(arrow.PrimitiveTypes.Uint32)),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "s", Type: arrow.BinaryTypes.StringView, Nullable: true})),
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String},
	}
	for round := range 200 {
		typ := types[round%len(types)]
		ts, err := PaimonType(typ)
		require.NoError(t, err)
		pt, err := paimontype.ParseType(ts)
		require.NoError(t, err)
		to := pt.ArrowType()
		b := array.NewBuilder(mem, typ)
		n := rng.IntN(50) + 1
		for range n {
			fill(rng, b)
		}
		arr := b.NewArray()
		b.Release()
		lo := rng.IntN(n)
		hi := lo + rng.IntN(n-lo+1)
		in := array.NewSlice(arr, int64(lo), int64(hi))
		out, err := Array(context.Background(), mem, in, to)
		require.NoError(t, err, "%s -> %s", typ, to)
		require.True(t, arrow.TypeEqual(to, out.DataType()), "%s -> %s gave %s", typ, to, out.DataType())
		require.Equal(t, in.Len(), out.Len())
		for i := 0; i < in.Len(); i++ {
			require.Equal(t, in.IsNull(i), out.IsNull(i), "round %d row %d", round, i)
			if in.IsValid(i) {
				require.Equal(t, in.ValueStr(i), out.ValueStr(i), "round %d %s row %d", round, typ, i)
			}
		}
		if v, ok := out.(interface{ ValidateFull() error }); ok {
			require.NoError(t, v.ValidateFull())
		}
		out.Release()
		in.Release()
		arr.Release()
	}
}

// fill appends one random value (sometimes null) to b.
func fill(rng *rand.Rand, b array.Builder) {
	if rng.IntN(6) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Uint8Builder:
		b.Append(uint8(rng.Uint32()))
	case *array.Uint16Builder:
		b.Append(uint16(rng.Uint32()))
	case *array.Uint32Builder:
		b.Append(rng.Uint32())
	case *array.Uint64Builder:
		b.Append(rng.Uint64())
	case *array.Int8Builder:
		b.Append(int8(rng.Uint32()))
	case *array.LargeStringBuilder:
		b.Append(fmt.Sprint("v", rng.IntN(1000)))
	case *array.StringViewBuilder:
		b.Append(fmt.Sprint("a longer view value ", rng.IntN(1000)))
	case *array.BinaryDictionaryBuilder:
		_ = b.AppendString(fmt.Sprint("d", rng.IntN(5)))
	case *array.FixedSizeListBuilder:
		b.Append(true)
		for range 3 {
			fill(rng, b.ValueBuilder())
		}
	case *array.MapBuilder:
		b.Append(true)
		for k := range rng.IntN(3) {
			b.KeyBuilder().(*array.LargeStringBuilder).Append(fmt.Sprint("k", k))
			fill(rng, b.ItemBuilder())
		}
	case array.ListLikeBuilder:
		b.Append(true)
		for range rng.IntN(4) {
			fill(rng, b.ValueBuilder())
		}
	case *array.StructBuilder:
		b.Append(true)
		for f := 0; f < b.NumField(); f++ {
			fill(rng, b.FieldBuilder(f))
		}
	default:
		panic(fmt.Sprintf("fill: %T", b))
	}
}
