package lake

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

func mustType(t *testing.T, s string) paimontype.DataType {
	t.Helper()
	dt, err := paimontype.ParseType(s)
	require.NoError(t, err)
	return dt
}

func TestBinaryRowGolden(t *testing.T) {
	cases := []struct {
		name   string
		types  []string
		vals   []any
		hex    string
		hash   int32
		bucket int32
	}{
		{"empty", nil, nil, "0000000000000000", -1670924195, 3},
		{"int1", []string{"INT"}, []any{int32(1)}, "0000000000000000 0100000000000000", 1465514398, 2},
		{"bigint42", []string{"BIGINT"}, []any{int64(42)}, "0000000000000000 2a00000000000000", 907821237, 1},
		{"abc", []string{"STRING"}, []any{"abc"}, "0000000000000000 6162630000000083", -101922419, 3},
		{"hello", []string{"STRING"}, []any{"hello world!"}, "0000000000000000 0c00000010000000 68656c6c6f20776f726c642100000000", 609810467, 3},
		{"intnull", []string{"INT"}, []any{nil}, "0001000000000000 0000000000000000", -1748325344, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var types []paimontype.DataType
			for _, s := range c.types {
				types = append(types, mustType(t, s))
			}
			row := encodeBinaryRow(types, c.vals)
			require.Equal(t, strings.ReplaceAll(c.hex, " ", ""), hex.EncodeToString(row))
			h := hashBinaryRow(row)
			require.Equal(t, c.hash, h)
			require.Equal(t, c.bucket, bucketOf(h, 4))
			back, err := decodeBinaryRow(types, row)
			require.NoError(t, err)
			require.Equal(t, len(c.vals), len(back))
			for i := range c.vals {
				require.Equal(t, c.vals[i], back[i])
			}
		})
	}
}

func TestBucketJavaExpectation(t *testing.T) {
	// FixedBucketRowKeyExtractorTest.testBucket: row (5,6,7), 100 buckets.
	intT := mustType(t, "INT")
	for _, c := range []struct {
		n    int
		want int32
	}{{1, 96}, {2, 27}, {3, 40}} {
		types := make([]paimontype.DataType, c.n)
		vals := make([]any, c.n)
		for i := 0; i < c.n; i++ {
			types[i] = intT
			vals[i] = int32(5 + i)
		}
		require.Equal(t, c.want, bucketOf(hashBinaryRow(encodeBinaryRow(types, vals)), 100), "keys=%d", c.n)
	}
}

func TestSerializedRowFixture(t *testing.T) {
	// Stats row (STRING "1", INT 1) as in the paimon-rust Java-written fixture.
	types := []paimontype.DataType{mustType(t, "STRING"), mustType(t, "INT")}
	got := serializeBinaryRow(2, encodeBinaryRow(types, []any{"1", int32(1)}))
	require.Equal(t, "00000002"+"0000000000000000"+"3100000000000081"+"0100000000000000", hex.EncodeToString(got))
	require.Equal(t, "000000000000000000000000", hex.EncodeToString(emptyRowBytes))
}

// TestBucketsOfIntKeyMatchesBinaryRow: the fast path for one BIGINT or INT
// key gives the bucket of the general BinaryRow encoding.
func TestBucketsOfIntKeyMatchesBinaryRow(t *testing.T) {
	mem := memory.NewGoAllocator()
	vals := []int64{0, 1, -1, 42, 1 << 40, -(1 << 62), math.MaxInt64, math.MinInt64, 123456789}
	for _, nb := range []int{1, 4, 7, 128} {
		b64 := array.NewInt64Builder(mem)
		b32 := array.NewInt32Builder(mem)
		for _, v := range vals {
			b64.Append(v)
			b32.Append(int32(v))
		}
		a64, a32 := b64.NewArray(), b32.NewArray()
		got64 := make([]int32, len(vals))
		got32 := make([]int32, len(vals))
		require.True(t, bucketsOfIntKey(a64, paimontype.DataType{Root: paimontype.TypeBigInt}, nb, got64))
		require.True(t, bucketsOfIntKey(a32, paimontype.DataType{Root: paimontype.TypeInt}, nb, got32))
		for i, v := range vals {
			want64 := bucketOf(hashBinaryRow(encodeBinaryRow([]paimontype.DataType{{Root: paimontype.TypeBigInt}}, []any{v})), nb)
			want32 := bucketOf(hashBinaryRow(encodeBinaryRow([]paimontype.DataType{{Root: paimontype.TypeInt}}, []any{int32(v)})), nb)
			require.Equal(t, want64, got64[i], "BIGINT %d", v)
			require.Equal(t, want32, got32[i], "INT %d", int32(v))
		}
		require.False(t, bucketsOfIntKey(a64, paimontype.DataType{Root: paimontype.TypeInt}, nb, got64), "type mismatch")
		a64.Release()
		a32.Release()
	}
}
