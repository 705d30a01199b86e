package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

func scanPart(t *testing.T, tb *Table, snap *Snapshot, s Split) []string {
	t.Helper()
	rr, err := tb.ScanWith(context.Background(), snap, ScanOptions{Split: s}, ScanTuning{})
	require.NoError(t, err)
	return readLines(t, rr)
}

// TestSplitPartsMakeTheWholeScan: for any part count, the parts of a
// snapshot are disjoint and together are the scan, for primary-key tables
// (merged per bucket, partitioned or not) and append tables of one bucket
// and of several files; a key is always in one part.
func TestSplitPartsMakeTheWholeScan(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		s    paimontype.Schema
	}{
		{"pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "5"}}},
		{"pk_part", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, Options: map[string]string{"bucket": "3"}}},
		{"append", paimontype.Schema{Columns: testCols}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := c.CreateTable(ctx, "db", tc.name, tc.s, false)
			require.NoError(t, err)
			var snap *Snapshot
			seq := int64(0)
			for round := 0; round < 4; round++ {
				var rows []row
				var kinds []RowKind
				var seqs []int64
				for i := 0; i < 60; i++ {
					seq++
					rows = append(rows, row{rng.Int64N(80), sp(fmt.Sprint("v", seq)), fmt.Sprint("d", rng.IntN(3))})
					kinds = append(kinds, Insert)
					seqs = append(seqs, seq)
				}
				if !(len(tc.s.PrimaryKeys) > 0) {
					seqs = nil
				}
				w := tb.NewWrite(ctx)
				writeRows(t, w, tb, rows, kinds, seqs)
				prev := int64(0)
				if snap != nil {
					prev = snap.ID
				}
				snap, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(round + 1), ExpectedLatest: prev})
				require.NoError(t, err)
				tb, err = c.GetTable(ctx, "db", tc.name)
				require.NoError(t, err)
			}
			whole := scanPart(t, tb, snap, Split{})
			sort.Strings(whole)
			require.NotEmpty(t, whole)
			for n := 1; n <= 4; n++ {
				var all []string
				keys := map[string]int{}
				for i := 0; i < n; i++ {
					part := scanPart(t, tb, snap, Split{Index: i, Count: n})
					all = append(all, part...)
					for _, r := range part {
						f := strings.Split(r, ",")
						k := f[0] + "," + f[2]
						if prev, ok := keys[k]; ok && prev != i && (len(tc.s.PrimaryKeys) > 0) {
							t.Fatalf("key %s in parts %d and %d of %d", k, prev, i, n)
						}
						keys[k] = i
					}
				}
				sort.Strings(all)
				require.Equal(t, whole, all, "%d parts", n)
			}
		})
	}
}
