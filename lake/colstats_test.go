package lake

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
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

			rows := newStatsCollector([]DataType{dt})
			for r := 0; r < n; r++ {
				rows.add([]any{valueAt(arr, r, dt)})
			}
			cols := newStatsCollector([]DataType{dt})
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

func randomColumn(t *testing.T, mem memory.Allocator, dt DataType, n int, nullP float64, spread int64, rng *rand.Rand) arrow.Array {
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
