package lake

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// TestColumnStatsMatchRowStats: the typed column loop gives exactly the
// statistics the row-by-row collector gives, for every atomic type, with
// nulls, all-null columns, NaN, signed zeros and infinities, over random
// columns whose values repeat (ties) or not.
func TestColumnStatsMatchRowStats(t *testing.T) {
	types := []string{"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
		"STRING", "BYTES", "DATE", "TIME", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(6)"}
	rng := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, ts := range types {
		dt := mustType(t, ts)
		for round := 0; round < 40; round++ {
			n := rng.IntN(50)
			nullP := []float64{0, 0.3, 1}[round%3]
			spread := []int64{3, 1000, 1 << 40}[rng.IntN(3)]
			arr := randomColumn(t, mem, dt, n, nullP, spread, rng)

			rows := newStatsCollector([]paimontype.DataType{dt})
			for r := 0; r < n; r++ {
				rows.add([]any{valueAt(arr, r, dt)})
			}
			cols := newStatsCollector([]paimontype.DataType{dt})
			cols.addColumn(0, arr)
			// a second column folded into the same statistics widens them alike
			arr2 := randomColumn(t, mem, dt, rng.IntN(20), nullP, spread, rng)
			for r := 0; r < arr2.Len(); r++ {
				rows.add([]any{valueAt(arr2, r, dt)})
			}
			cols.addColumn(0, arr2)
			// and so does a slice (offset into its buffers) of a third
			arr3 := randomColumn(t, mem, dt, 2+rng.IntN(20), nullP, spread, rng)
			sl := array.NewSlice(arr3, 1, int64(arr3.Len()-1))
			for r := 0; r < sl.Len(); r++ {
				rows.add([]any{valueAt(sl, r, dt)})
			}
			cols.addColumn(0, sl)
			sl.Release()
			arr3.Release()

			want, got := rows.stats(), cols.stats()
			require.Equal(t, want.MinValues, got.MinValues, "%s min, round %d", ts, round)
			require.Equal(t, want.MaxValues, got.MaxValues, "%s max, round %d", ts, round)
			require.Equal(t, *want.NullCounts[0], *got.NullCounts[0], "%s nulls, round %d", ts, round)
			arr.Release()
			arr2.Release()
		}
	}
}

func randomColumn(t *testing.T, mem memory.Allocator, dt paimontype.DataType, n int, nullP float64, spread int64, rng *rand.Rand) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt.ArrowType())
	defer b.Release()
	floats := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), 1.5, -2.25}
	for r := 0; r < n; r++ {
		if rng.Float64() < nullP {
			b.AppendNull()
			continue
		}
		v := rng.Int64N(2*spread) - spread
		switch bb := b.(type) {
		case *array.BooleanBuilder:
			bb.Append(v%2 == 0)
		case *array.Int8Builder:
			bb.Append(int8(v))
		case *array.Int16Builder:
			bb.Append(int16(v))
		case *array.Int32Builder:
			bb.Append(int32(v))
		case *array.Int64Builder:
			bb.Append(v)
		case *array.Float32Builder:
			if rng.IntN(3) == 0 {
				bb.Append(float32(floats[rng.IntN(len(floats))]))
			} else {
				bb.Append(float32(v) / 7)
			}
		case *array.Float64Builder:
			if rng.IntN(3) == 0 {
				bb.Append(floats[rng.IntN(len(floats))])
			} else {
				bb.Append(float64(v) / 7)
			}
		case *array.Decimal128Builder:
			bb.Append(decimal128.FromI64(v % 1e9))
		case *array.StringBuilder:
			bb.Append(string(randomBytes(v, rng)))
		case *array.BinaryBuilder:
			bb.Append(randomBytes(v, rng))
		case *array.Date32Builder:
			bb.Append(arrow.Date32(v % 1e6))
		case *array.Time32Builder:
			bb.Append(arrow.Time32(v % 86_400_000))
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(v))
		default:
			t.Fatalf("no random values for %s", dt)
		}
	}
	return b.NewArray()
}

// randomBytes: short strings with shared prefixes and bytes above 0x7f, so
// that ordering by unsigned bytes matters.
func randomBytes(v int64, rng *rand.Rand) []byte {
	var buf bytes.Buffer
	buf.WriteString([]string{"", "a", "ab", "\xff", "é"}[rng.IntN(5)])
	for i := 0; i < int(uint64(v)%4); i++ {
		buf.WriteByte(byte(rng.IntN(256)))
	}
	return buf.Bytes()
}

// TestRowCompareMatchesBoxedCompare: the typed row order equals
// compareRows over boxed values for keys of one to three columns of every
// atomic type (DECIMAL takes the boxed path), with nulls and ties, on every
// pair of rows.
func TestRowCompareMatchesBoxedCompare(t *testing.T) {
	types := []string{"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
		"STRING", "BYTES", "DATE", "TIME", "TIMESTAMP(3)", "TIMESTAMP(6)"}
	rng := rand.New(rand.NewPCG(3, 5))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(30)
		k := 1 + rng.IntN(3)
		var fields []arrow.Field
		var cols []arrow.Array
		var dts []paimontype.DataType
		var idx []int
		for c := 0; c < k; c++ {
			dt := mustType(t, types[rng.IntN(len(types))])
			whole := randomColumn(t, mem, dt, n+1, []float64{0, 0.2}[rng.IntN(2)], []int64{2, 1000}[rng.IntN(2)], rng)
			col := array.NewSlice(whole, 1, int64(n+1)) // offset into its buffers
			whole.Release()
			defer col.Release()
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", c), Type: col.DataType(), Nullable: true})
			cols = append(cols, col)
			dts = append(dts, dt)
			idx = append(idx, k-1-c) // not in column order
		}
		slices.Reverse(dts)
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
		f := rowCompare(rec, idx, dts)
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				ka, kb := make([]any, k), make([]any, k)
				for i, c := range idx {
					ka[i], kb[i] = valueAt(rec.Column(c), a, dts[i]), valueAt(rec.Column(c), b, dts[i])
				}
				require.Equal(t, compareRows(ka, kb), f(a, b), "round %d rows %d, %d: %v vs %v", round, a, b, ka, kb)
			}
		}
		rec.Release()
	}
}

// TestOrderByKeySeqPos: the integer fast path and the general path give
// the same order (key, then sequence number, then position) on keys with
// many repeats and sequence numbers with ties.
func TestOrderByKeySeqPos(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for round := 0; round < 50; round++ {
		n := rng.IntN(200)
		b64 := array.NewInt64Builder(memory.DefaultAllocator)
		b32 := array.NewInt32Builder(memory.DefaultAllocator)
		seqs := make([]int64, n)
		for i := 0; i < n; i++ {
			k := rng.Int64N(20) - 10
			b64.Append(k * 1e10)
			b32.Append(int32(k))
			seqs[i] = rng.Int64N(5)
		}
		for _, col := range []arrow.Array{b64.NewArray(), b32.NewArray()} {
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: col.DataType()}}, nil), []arrow.Array{col}, int64(n))
			_, fast := intKeys(col)
			require.True(t, fast)
			got := orderByKeySeqPos(rec, []int{0}, rowCompare(rec, []int{0}, nil), nil, seqs)
			// the general path: a comparison that intKeys does not know
			slow := orderByKeySeqPos(rec, []int{0, 0}, rowCompare(rec, []int{0}, nil), nil, seqs)
			require.Equal(t, slow, got, "round %d, %s", round, col.DataType())
			require.True(t, slices.IsSortedFunc(got, func(a, b int) int {
				return cmp.Or(rowCompare(rec, []int{0}, nil)(a, b), cmp.Compare(seqs[a], seqs[b]), cmp.Compare(a, b))
			}))
			rec.Release()
			col.Release()
		}
		b64.Release()
		b32.Release()
	}
}
