package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// dropped finds exactly the rows of a range whose key is in the set, for
// sorted and unsorted files, against a linear scan.
func TestKeyIndexDroppedMatchesLinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for round := 0; round < 2000; round++ {
		n := rng.IntN(200)
		keys := make([]int64, n)
		next := rng.Int64N(100) - 50
		for i := range keys {
			next += 1 + rng.Int64N(3)
			keys[i] = next
		}
		sorted := rng.IntN(4) > 0
		if !sorted {
			rng.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		idx := &keyIndex{keys: keys, sorted: sorted && n > 1}
		var set []int64
		for k := int64(-60); k < next+10; k++ {
			if rng.IntN(5) == 0 {
				set = append(set, k)
			}
		}
		start := int64(rng.IntN(n + 1))
		end := start + int64(rng.IntN(n-int(start)+1))
		var want []int64
		for i := start; i < end; i++ {
			if slices.Contains(set, keys[i]) {
				want = append(want, i-start)
			}
		}
		got := idx.dropped(start, end, set, nil)
		require.Equal(t, want, got, "round %d: keys %v, set %v, rows [%d, %d)", round, keys, set, start, end)
	}
}

// A scan excluding keys drops them across row groups, combined with a
// deletion vector, with and without the key among the columns, from the
// cache or not; a table without an integer key refuses it.
func TestExcludeKeysAcrossRowGroupsWithDeletionVector(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	n := maxRowGroupRows + 1000       // two row groups
	for half := 0; half < 2; half++ { // two files, compacted into one above level 0
		var rows []row
		var kinds []RowKind
		var seqs []int64
		for i := half; i < n; i += 2 {
			rows = append(rows, row{id: int64(i), name: sp(fmt.Sprint("n", i)), dt: "x"})
			kinds = append(kinds, Insert)
			seqs = append(seqs, int64(i))
		}
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, rows, kinds, seqs)
		_, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(half + 1), ExpectedLatest: int64(half)})
		require.NoError(t, err)
	}
	s, err := tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: 2, MinFiles: 2})
	require.NoError(t, err)
	entries, _, err := tb.dataFiles(ctx, s)
	require.NoError(t, err)
	tb = enableDeletionVectors(t, c, "pk")
	dels := map[string][]uint32{}
	deleted := map[int64]bool{}
	for _, e := range entries {
		require.Positive(t, e.File.Level)
		lo := e.File.RowCount
		for _, p := range []uint32{0, maxRowGroupRows - 1, maxRowGroupRows, uint32(lo - 1)} {
			if int64(p) < lo {
				dels[e.File.FileName] = append(dels[e.File.FileName], p)
			}
		}
	}
	snap := addDeletionVectors(t, tb, dels, nil)
	// Which keys the vectors delete: read the ids with the vectors applied.
	all := map[int64]bool{}
	for _, line := range scanAll(t, tb, snap, []string{"id"}) {
		var id int64
		fmt.Sscan(line, &id)
		all[id] = true
	}
	for i := int64(0); i < int64(n); i++ {
		if !all[i] {
			deleted[i] = true
		}
	}
	require.NotEmpty(t, deleted)

	rng := rand.New(rand.NewPCG(5, 5))
	var exclude []int64
	for i := int64(0); i < int64(n)+10; i++ {
		if rng.IntN(50) == 0 || i == maxRowGroupRows || i == maxRowGroupRows-1 || deleted[i] && rng.IntN(2) == 0 {
			exclude = append(exclude, i)
		}
	}
	for _, cache := range []bool{false, true, true} { // the second read with the cache takes the cached keys
		if !cache {
			old := KeyIndexCacheBytes
			KeyIndexCacheBytes = 0
			t.Cleanup(func() { KeyIndexCacheBytes = old })
		} else {
			KeyIndexCacheBytes = 256 << 20
		}
		for i, cols := range [][]string{{"name"}, {"name", "id"}} {
			set := &KeySet{All: exclude}
			if i == 1 {
				set = &KeySet{ByBucket: map[int32][]int64{0: exclude, 1: {5}}} // the table's one bucket is 0
			}
			rr, err := tb.ScanWith(ctx, snap, ScanOptions{Columns: cols}, ScanTuning{Exclude: set})
			require.NoError(t, err)
			got := readLines(t, rr)
			var want []string
			for i := int64(0); i < int64(n); i++ {
				if _, ex := slices.BinarySearch(exclude, i); ex || deleted[i] {
					continue
				}
				if len(cols) == 1 {
					want = append(want, fmt.Sprint("n", i))
				} else {
					want = append(want, fmt.Sprintf("n%d,%d", i, i))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			require.Equal(t, want, got, "columns %v, cache %v", cols, cache)
		}
	}

	// Keys outside every row group's statistics: nothing decoded, nothing dropped.
	fileKeyIndexes = newLRUCache[*keyIndex](&KeyIndexCacheBytes)
	rr, err := tb.ScanWith(ctx, snap, ScanOptions{Columns: []string{"name"}}, ScanTuning{Exclude: &KeySet{ByBucket: map[int32][]int64{0: {-7, int64(n) + 3}}}})
	require.NoError(t, err)
	require.Len(t, readLines(t, rr), n-len(deleted))
	require.Zero(t, fileKeyIndexes.size, "no key index built")
	// Keys of another bucket: nothing dropped.
	rr, err = tb.ScanWith(ctx, snap, ScanOptions{Columns: []string{"name"}}, ScanTuning{Exclude: &KeySet{ByBucket: map[int32][]int64{1: exclude}}})
	require.NoError(t, err)
	require.Len(t, readLines(t, rr), n-len(deleted))

	ap, err := c.CreateTable(ctx, "db", "strkey", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"name"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	_, err = ap.ScanWith(ctx, nil, ScanOptions{}, ScanTuning{Exclude: &KeySet{All: []int64{1}}})
	require.ErrorContains(t, err, "one integer column")
}

// gallop finds the first key at least the one sought, wherever it lies.
func TestGallopFindsFirstAtLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for round := 0; round < 3000; round++ {
		keys := make([]int64, rng.IntN(300))
		next := int64(0)
		for i := range keys {
			next += 1 + rng.Int64N(4)
			keys[i] = next
		}
		key := rng.Int64N(next+3) - 1
		want, _ := slices.BinarySearch(keys, key)
		require.Equal(t, want, gallop(keys, key), "round %d: %d in %v", round, key, keys)
	}
}

// BenchmarkKeyIndexDropped: finding the rows of 1% of the keys in the key
// index of a 2.5M-row file (a 10M-row table's bucket), row group by row
// group, as a t$rt scan does. Galloping from the last key found took 1.6
// ms a file; walking the keys instead, 2.6-4.6 ms.
func BenchmarkKeyIndexDropped(b *testing.B) {
	const rows, rg = 2_500_000, 128 * 1024
	keys := make([]int64, rows)
	for i := range keys {
		keys[i] = int64(i) * 4
	}
	var set []int64
	for i := int64(0); i < rows*4; i += 400 {
		set = append(set, i+int64(uint64(i)*2654435761%100)*4)
	}
	idx := &keyIndex{keys: keys, sorted: true}
	var out []int64
	for b.Loop() {
		n := 0
		for start := int64(0); start < rows; start += rg {
			out = idx.dropped(start, min(start+rg, rows), set, out[:0])
			n += len(out)
		}
		if n != len(set) {
			b.Fatalf("%d rows found, want %d", n, len(set))
		}
	}
}

// The positions a range remembers are reused only while the keys searched
// for in it are the same: reads whose log keys grow, shrink, move or stay
// as they were each find what a linear scan finds.
func TestKeyIndexRememberedPositionsFollowTheLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	const rows, groups = 4000, 4
	keys := make([]int64, rows)
	next := int64(0)
	for i := range keys {
		next += 1 + rng.Int64N(3)
		keys[i] = next
	}
	idx := &keyIndex{keys: keys, sorted: true}
	logKeys := map[int64]bool{}
	for round := 0; round < 300; round++ {
		switch rng.IntN(4) { // 1 in 4 reads sees the log as the last did
		case 0:
		case 1: // a new key, often one no row has
			logKeys[rng.Int64N(next+20)] = true
		case 2: // a key tiered away
			for k := range logKeys {
				delete(logKeys, k)
				break
			}
		case 3: // a few keys replaced
			for k := range logKeys {
				if rng.IntN(10) == 0 {
					delete(logKeys, k)
					logKeys[rng.Int64N(next+20)] = true
				}
			}
		}
		set := make([]int64, 0, len(logKeys))
		for k := range logKeys {
			set = append(set, k)
		}
		slices.Sort(set)
		for g := int64(0); g < groups; g++ {
			start, end := g*rows/groups, (g+1)*rows/groups
			var want []int64
			for i := start; i < end; i++ {
				if _, ok := slices.BinarySearch(set, keys[i]); ok {
					want = append(want, i-start)
				}
			}
			got := idx.dropped(start, end, set, []int64{-1})
			require.Equal(t, append([]int64{-1}, want...), got, "round %d, rows [%d, %d)", round, start, end)
		}
		if round == 150 {
			require.NotEmpty(t, idx.found, "no range remembered its positions")
		}
	}
}
