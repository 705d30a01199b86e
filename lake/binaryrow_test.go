package lake

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

func mustType(t *testing.T, s string) paimontype.DataType {
	t.Helper()
	dt, err := paimontype.ParseType(s)
	require.NoError(t, err)
	return dt
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
			want64 := manifest.BucketOf(manifest.HashBinaryRow(manifest.EncodeBinaryRow([]paimontype.DataType{{Root: paimontype.TypeBigInt}}, []any{v})), nb)
			want32 := manifest.BucketOf(manifest.HashBinaryRow(manifest.EncodeBinaryRow([]paimontype.DataType{{Root: paimontype.TypeInt}}, []any{int32(v)})), nb)
			require.Equal(t, want64, got64[i], "BIGINT %d", v)
			require.Equal(t, want32, got32[i], "INT %d", int32(v))
		}
		require.False(t, bucketsOfIntKey(a64, paimontype.DataType{Root: paimontype.TypeInt}, nb, got64), "type mismatch")
		a64.Release()
		a32.Release()
	}
}
