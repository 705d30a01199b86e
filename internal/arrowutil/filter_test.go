package arrowutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/bufpool"
)

// filterTypes is every type FilterRecord copies by runs, and some it
// hands to arrow-go's kernel.
var filterTypes = []arrow.DataType{
	arrow.FixedWidthTypes.Boolean,
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Time32ms, arrow.FixedWidthTypes.Time64us,
	arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Timestamp_ns, arrow.FixedWidthTypes.Duration_ms,
	&arrow.Decimal128Type{Precision: 10, Scale: 2}, &arrow.Decimal128Type{Precision: 38, Scale: 10},
	&arrow.Decimal256Type{Precision: 50, Scale: 3}, &arrow.FixedSizeBinaryType{ByteWidth: 5},
	arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary,
	arrow.ListOf(arrow.PrimitiveTypes.Int32),
	arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}),
	arrow.Null,
}

// randomArray returns n random values of dt, each null with probability
// nulls.
func randomArray(rng *rand.Rand, dt arrow.DataType, n int, nulls float64) arrow.Array {
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for i := 0; i < n; i++ {
		if rng.Float64() < nulls {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.BooleanBuilder:
			bb.Append(rng.IntN(2) == 1)
		case *array.StringBuilder:
			bb.Append(strconv.Itoa(rng.IntN(1 << rng.IntN(30))))
		case *array.LargeStringBuilder:
			bb.Append(strconv.Itoa(rng.IntN(1000)) + "é")
		case *array.BinaryBuilder:
			v := make([]byte, rng.IntN(20))
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			bb.Append(v)
		case *array.FixedSizeBinaryBuilder:
			bb.Append([]byte{byte(i), 1, 2, 3, byte(rng.Uint32())})
		case *array.Decimal128Builder:
			bb.Append(decimal128.FromI64(rng.Int64()))
		case *array.Decimal256Builder:
			bb.Append(decimal256.FromI64(rng.Int64()))
		case *array.ListBuilder:
			bb.Append(true)
			for j := rng.IntN(3); j > 0; j-- {
				bb.ValueBuilder().(*array.Int32Builder).Append(rng.Int32())
			}
		case *array.StructBuilder:
			bb.Append(true)
			bb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprint(rng.IntN(99)))
		case *array.NullBuilder:
			bb.AppendNull()
		case *array.Date32Builder:
			bb.Append(arrow.Date32(rng.Int32()))
		case *array.Date64Builder:
			bb.Append(arrow.Date64(rng.Int64()))
		case *array.Time32Builder:
			bb.Append(arrow.Time32(rng.Int32N(86_400_000)))
		case *array.Time64Builder:
			bb.Append(arrow.Time64(rng.Int64N(86_400_000_000)))
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(rng.Int64()))
		case *array.DurationBuilder:
			bb.Append(arrow.Duration(rng.Int64()))
		default:
			// Every other type of filterTypes is a plain number.
			if err := b.AppendValueFromString(strconv.Itoa(rng.IntN(100))); err != nil {
				panic(fmt.Sprintf("%s: %v", dt, err))
			}
		}
	}
	return b.NewArray()
}

// randomRecord returns 1 to 300 random rows of a column of every type of
// filterTypes: no, some or only nulls (some columns made by
// MakeArrayOfNull), each column a slice at an offset into its buffers.
func randomRecord(rng *rand.Rand) arrow.RecordBatch {
	n := 1 + rng.IntN(300)
	slice := rng.IntN(5)
	nulls := []float64{0, 0.1, 1}[rng.IntN(3)]
	var fields []arrow.Field
	var cols []arrow.Array
	for i, dt := range filterTypes {
		fields = append(fields, arrow.Field{Name: "c" + strconv.Itoa(i), Type: dt, Nullable: true})
		var full arrow.Array
		if nulls == 1 && rng.IntN(2) == 0 {
			full = array.MakeArrayOfNull(memory.DefaultAllocator, dt, n+slice)
		} else {
			full = randomArray(rng, dt, n+slice, nulls)
		}
		cols = append(cols, array.NewSlice(full, int64(slice), int64(slice+n)))
		full.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// requireSameRows fails unless got is a valid batch with want's rows, and
// each column has want's null count.
func requireSameRows(t *testing.T, want, got arrow.RecordBatch, round int) {
	t.Helper()
	require.Equal(t, want.NumRows(), got.NumRows(), "round %d", round)
	require.NoError(t, ValidateRecord(got))
	for c, f := range want.Schema().Fields() {
		require.Truef(t, array.Equal(want.Column(c), got.Column(c)),
			"round %d, column %s: got %v, want %v", round, f.Type, got.Column(c), want.Column(c))
		require.Equal(t, want.Column(c).NullN(), got.Column(c).NullN(), "round %d, column %s", round, f.Type)
	}
}

// oneColumn is a batch of a alone.
func oneColumn(a arrow.Array) arrow.RecordBatch {
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "a", Type: a.DataType()}}, nil), []arrow.Array{a}, int64(a.Len()))
}

// TestFilterRecordMatchesTheFilterKernel: FilterRecord keeps exactly the
// rows arrow-go's Filter kernel keeps, for every type, with and without
// nulls, of sliced columns (an offset into their buffers) and of all-null
// columns, over random keep patterns from none to all.
func TestFilterRecordMatchesTheFilterKernel(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for round := 0; round < 60; round++ {
		rec := randomRecord(rng)
		n := int(rec.NumRows())
		keep := make([]bool, n)
		p := []float64{0, 0.01, 0.5, 0.99, 1}[rng.IntN(5)]
		for i := range keep {
			keep[i] = rng.Float64() >= p
		}
		got, err := FilterRecord(ctx, mem, rec, keep)
		require.NoError(t, err)
		want := kernelFilter(t, rec, keep)
		if want.NumRows() == 0 {
			require.Nil(t, got, "round %d: no row kept", round)
		} else {
			require.NotNil(t, got, "round %d", round)
			requireSameRows(t, want, got, round)
			got.Release()
		}
		want.Release()
		rec.Release()
	}
}

// kernelFilter is arrow-go's Filter kernel over rec, the reference.
func kernelFilter(t *testing.T, rec arrow.RecordBatch, keep []bool) arrow.RecordBatch {
	t.Helper()
	bb := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer bb.Release()
	bb.AppendValues(keep, nil)
	mask := bb.NewArray()
	defer mask.Release()
	want, err := compute.FilterRecordBatch(context.Background(), rec, mask, compute.DefaultFilterOptions())
	require.NoError(t, err)
	return want
}

// TestFilterRecordRefusesAMaskOfAnotherLength: the flags must be one per row.
func TestFilterRecordRefusesAMaskOfAnotherLength(t *testing.T) {
	a := randomArray(rand.New(rand.NewPCG(1, 1)), arrow.PrimitiveTypes.Int64, 3, 0)
	defer a.Release()
	rec := oneColumn(a)
	defer rec.Release()
	_, err := FilterRecord(context.Background(), memory.DefaultAllocator, rec, []bool{true})
	require.ErrorContains(t, err, "3 rows with 1 keep flags")
}

// TestFilterRecordKeepsMapColumns: arrow-go's Filter kernel has none for a
// MAP column ("function 'array_filter' has no kernel"), so a t$rt scan of
// a primary-key table with a MAP column failed once a log row replaced a
// lake row. Top-level MAP columns, sliced too, and MAPs inside a ROW or an
// ARRAY keep the rows FilterRecord keeps.
func TestFilterRecordKeepsMapColumns(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	m := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "m", Type: m, Nullable: true},
		{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "m", Type: m, Nullable: true}), Nullable: true},
		{Name: "a", Type: arrow.ListOf(m), Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(`[
		{"id": 0, "m": [{"key": "a", "value": 1}], "r": {"m": [{"key": "b", "value": 2}]}, "a": [[{"key": "c", "value": 3}]]},
		{"id": 1, "m": null, "r": null, "a": null},
		{"id": 2, "m": [{"key": "d", "value": 4}, {"key": "e", "value": null}], "r": {"m": null}, "a": [null, []]},
		{"id": 3, "m": [], "r": {"m": []}, "a": []},
		{"id": 4, "m": [{"key": "f", "value": 5}], "r": {"m": [{"key": "g", "value": 6}]}, "a": [[{"key": "h", "value": 7}]]}]`))
	require.NoError(t, err)
	defer rec.Release()
	sliced := rec.NewSlice(1, 5)
	defer sliced.Release()
	for _, tc := range []struct {
		rec  arrow.RecordBatch
		keep []bool
		want string
	}{
		{rec, []bool{true, false, true, false, true}, `[{"id":0,"m":[{"key":"a","value":1}],"r":{"m":[{"key":"b","value":2}]},"a":[[{"key":"c","value":3}]]}
,{"id":2,"m":[{"key":"d","value":4},{"key":"e","value":null}],"r":{"m":null},"a":[null,[]]}
,{"id":4,"m":[{"key":"f","value":5}],"r":{"m":[{"key":"g","value":6}]},"a":[[{"key":"h","value":7}]]}
]`},
		{sliced, []bool{false, true, true, false}, `[{"id":2,"m":[{"key":"d","value":4},{"key":"e","value":null}],"r":{"m":null},"a":[null,[]]}
,{"id":3,"m":[],"r":{"m":[]},"a":[]}
]`},
	} {
		got, err := FilterRecord(ctx, mem, tc.rec, tc.keep)
		require.NoError(t, err)
		require.NoError(t, ValidateRecord(got))
		js, err := got.MarshalJSON()
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(js))
		got.Release()
	}
}

// TestFilterRecordOnDirtyPooledBuffers: over pooled buffers an earlier
// batch left full of 0xff, large columns (pooled sizes) of integers,
// strings and booleans with nulls filter as the kernel does, and no
// validity bit past the last row is set.
func TestFilterRecordOnDirtyPooledBuffers(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	pool := bufpool.New()
	for round := 0; round < 8; round++ {
		for _, size := range []int{1 << 16, 1 << 17, 1 << 18, 1 << 19} { // leave dirty buffers behind
			b := pool.Allocate(size)
			for i := range b {
				b[i] = 0xff
			}
			pool.Free(b)
		}
		n := 20_000 + rng.IntN(50_000)
		if round < 2 {
			n = 530_000 + rng.IntN(10_000) // bitmaps of pooled size too
		}
		cols := []arrow.Array{
			randomArray(rng, arrow.PrimitiveTypes.Int64, n, 0.1),
			randomArray(rng, arrow.BinaryTypes.String, n, 0.1),
			randomArray(rng, arrow.FixedWidthTypes.Boolean, n, 0.1),
		}
		fields := []arrow.Field{{Name: "i", Type: cols[0].DataType(), Nullable: true}, {Name: "s", Type: cols[1].DataType(), Nullable: true}, {Name: "b", Type: cols[2].DataType(), Nullable: true}}
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
		for _, c := range cols {
			c.Release()
		}
		keep := make([]bool, n)
		for i := range keep {
			keep[i] = rng.IntN(100) > 0
		}
		got, err := FilterRecord(ctx, pool, rec, keep)
		require.NoError(t, err)
		want := kernelFilter(t, rec, keep)
		requireSameRows(t, want, got, round)
		for i, col := range got.Columns() {
			if v := col.Data().Buffers()[0]; v != nil && col.Len()%8 != 0 {
				last := v.Bytes()[bitutil.BytesForBits(int64(col.Len()))-1]
				require.Zero(t, last>>(col.Len()%8), "round %d column %d: validity bits past the last row", round, i)
			}
		}
		got.Release()
		want.Release()
		rec.Release()
	}
}
