package lakestream

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// splitByBucket against a simple model: every row lands in its bucket's part, in
// its original order, with its change kind; buckets in order of first appearance.
// Bucket spans are narrow (a slice indexes them) and wide (a map does).
func TestSplitByBucketMatchesModel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		name   string
		bucket func() int32
	}{
		{"one", func() int32 { return 3 }},
		{"four", func() int32 { return rng.Int32N(4) }},
		{"negative", func() int32 { return rng.Int32N(3) - 1 }},
		{"wide", func() int32 { return []int32{0, 1 << 30, -5}[rng.IntN(3)] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 1 + rng.IntN(500)
			rec := int64Batch(mem, n)
			defer rec.Release()
			buckets := make([]int32, n)
			kinds := make([]byte, n)
			var order []int32
			want := map[int32][]int64{}
			wantKinds := map[int32][]byte{}
			for i := range buckets {
				b := tc.bucket()
				buckets[i], kinds[i] = b, byte(rng.IntN(4))
				if _, ok := want[b]; !ok {
					order = append(order, b)
				}
				want[b] = append(want[b], int64(i))
				wantKinds[b] = append(wantKinds[b], kinds[i])
			}
			parts, err := splitByBucket(context.Background(), mem, rec, buckets, kinds)
			require.NoError(t, err)
			require.Len(t, parts, len(order))
			for i, p := range parts {
				require.Equal(t, order[i], p.bucket)
				require.Equal(t, int64(len(want[p.bucket])), p.rows)
				require.Equal(t, want[p.bucket], p.rec.Column(0).(*array.Int64).Int64Values())
				require.Equal(t, wantKinds[p.bucket], p.kinds)
				p.rec.Release()
			}
		})
	}
}
