package union

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// notIn walks sorted lake keys beside the sorted log keys and searches keys
// that come out of order; either way it must answer what a set would.
func TestNotInMatchesASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 500; round++ {
		space := 1 + rng.IntN(200)
		setMap := map[int64]bool{}
		for range rng.IntN(50) {
			setMap[rng.Int64N(int64(space))] = true
		}
		var set []int64
		for k := range setMap {
			set = append(set, k)
		}
		slices.Sort(set)
		keys := make([]int64, rng.IntN(100))
		for i := range keys {
			keys[i] = rng.Int64N(int64(space))
		}
		if rng.IntN(2) == 0 {
			slices.Sort(keys) // a bucket's batch: in key order
			keys = slices.Compact(keys)
		}
		got := notIn(keys, set)
		strs := make([]string, len(keys))
		strSet := make([]string, len(set))
		for i, k := range keys {
			strs[i] = fmt.Sprintf("k%05d", k)
		}
		for i, k := range set {
			strSet[i] = fmt.Sprintf("k%05d", k)
		}
		gotStr := notIn(strs, strSet)
		for i, k := range keys {
			require.Equal(t, !setMap[k], got[i], "round %d key %d", round, k)
			require.Equal(t, !setMap[k], gotStr[i], "round %d key %d (string)", round, k)
		}
	}
}
