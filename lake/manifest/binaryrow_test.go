package manifest

import (
	"encoding/hex"
	"strings"
	"testing"

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
			row := EncodeBinaryRow(types, c.vals)
			require.Equal(t, strings.ReplaceAll(c.hex, " ", ""), hex.EncodeToString(row))
			h := HashBinaryRow(row)
			require.Equal(t, c.hash, h)
			require.Equal(t, c.bucket, BucketOf(h, 4))
			back, err := DecodeBinaryRow(types, row)
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
		require.Equal(t, c.want, BucketOf(HashBinaryRow(EncodeBinaryRow(types, vals)), 100), "keys=%d", c.n)
	}
}

func TestSerializedRowFixture(t *testing.T) {
	// Stats row (STRING "1", INT 1) as in the paimon-rust Java-written fixture.
	types := []paimontype.DataType{mustType(t, "STRING"), mustType(t, "INT")}
	got := SerializeBinaryRow(2, EncodeBinaryRow(types, []any{"1", int32(1)}))
	require.Equal(t, "00000002"+"0000000000000000"+"3100000000000081"+"0100000000000000", hex.EncodeToString(got))
	require.Equal(t, "000000000000000000000000", hex.EncodeToString(SerializeBinaryRow(0, EncodeBinaryRow(nil, nil))))
	require.Equal(t, emptyRowBytes, SerializeBinaryRow(0, EncodeBinaryRow(nil, nil)))
}
