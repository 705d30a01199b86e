package lake

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// seqModel is the reference for a table with a sequence field: per key the
// winning version so far (a retraction included, as a tombstone), where a
// version wins over an older arrival unless its sequence value is smaller.
type seqModel struct {
	field      string // "v" (BIGINT, never null) or "s" (STRING, nullable)
	descending bool
	won        map[int]seqVersion
}

type seqVersion struct {
	row  mergeModelRow
	kind RowKind
}

// compare orders two sequence values as Paimon does: nulls smallest in
// either order, values negated when descending.
func (m *seqModel) compare(a, b mergeModelRow) int {
	if m.field == "v" {
		c := cmp.Compare(a.v, b.v)
		if m.descending {
			c = -c
		}
		return c
	}
	switch {
	case a.s == nil && b.s == nil:
		return 0
	case a.s == nil:
		return -1
	case b.s == nil:
		return 1
	}
	c := bytes.Compare([]byte(*a.s), []byte(*b.s))
	if m.descending {
		c = -c
	}
	return c
}

// apply records a version that arrives after every other.
func (m *seqModel) apply(k int, row mergeModelRow, kind RowKind) {
	if old, ok := m.won[k]; ok && m.compare(row, old.row) < 0 {
		return
	}
	m.won[k] = seqVersion{row, kind}
}

// TestSequenceFieldMergeModel writes tables with 'sequence.field' (a BIGINT
// that is never null, or a nullable STRING; ascending or descending) through
// commits whose versions of a key, in one commit and across commits, arrive
// out of sequence order, with deletes, files moved up levels and full
// compactions, and checks every scan against the model: per key the version
// with the largest sequence value wins, equal values go to the later
// arrival, a winning retraction hides the key until a compaction to the top
// level drops it.
func TestSequenceFieldMergeModel(t *testing.T) {
	t.Parallel()
	seeds, steps := 8, 14
	if testing.Short() {
		seeds, steps = 4, 8
	}
	ctx := context.Background()
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 77))
		sm := &seqModel{field: []string{"v", "s"}[seed%2], descending: seed%4 >= 2, won: map[int]seqVersion{}}
		kind := seed % len(mergeKeyKinds)
		t.Run(fmt.Sprintf("seed=%d/key=%s/seq=%s/desc=%v", seed, mergeKeyKinds[kind].name, sm.field, sm.descending), func(t *testing.T) {
			c := newTestCatalog(t)
			opts := map[string]string{OptionSequenceField: sm.field}
			if sm.descending {
				opts[OptionSequenceSortOrder] = "descending"
			}
			m := newMergeModelTableWith(t, c, "t", kind, 1+rng.IntN(3), opts)
			keySpace := 10 + rng.IntN(60)
			var snap *Snapshot
			var arrival int64
			for step := 0; step < steps; step++ {
				switch op := rng.IntN(10); {
				case op < 6 || snap == nil:
					// Keys drawn with repeats: versions of a key in one commit too.
					n := 1 + rng.IntN(keySpace)
					ks := make([]int, n)
					rows := make([]mergeModelRow, n)
					kinds := make([]RowKind, n)
					for i := range ks {
						ks[i] = rng.IntN(keySpace)
						rows[i] = mergeModelRow{v: rng.Int64N(8)} // few values: ties
						if rng.IntN(4) > 0 {
							s := fmt.Sprintf("s%d", rng.IntN(8))
							rows[i].s = &s
						}
						kinds[i] = []RowKind{Insert, UpdateAfter, Insert, Delete}[rng.IntN(4)]
						sm.apply(ks[i], rows[i], kinds[i])
					}
					first := arrival
					snap = m.commit(t, ks, rows, kinds, func(i int64) int64 { return first + i }, int64(step+1))
					arrival += int64(n)
				case op < 8:
					snap = m.relevel(t, rng)
				default:
					s, err := m.tb.Compact(ctx, CompactOptions{CommitUser: "model", ExpectedLatest: snap.ID, MinFiles: 1})
					require.NoError(t, err)
					if s != nil {
						snap = s
						// Every bucket is one top-level file now: its tombstones are gone.
						for k, v := range sm.won {
							if v.kind.isRetract() {
								delete(sm.won, k)
							}
						}
					}
				}
				m.model = map[int]mergeModelRow{}
				for k, v := range sm.won {
					if !v.kind.isRetract() {
						m.model[k] = v.row
					}
				}
				var cols []string
				for _, f := range m.tb.Schema().ArrowSchema().Fields() {
					cols = append(cols, f.Name)
				}
				want := m.expected(t, cols)
				ref := wholeBucketScan(t, m.tb, snap, cols)
				refSorted := slices.Clone(ref)
				sort.Strings(refSorted)
				require.Equal(t, want, refSorted, "step %d: the whole-bucket merge differs from the model", step)
				for _, workers := range []int{1, 3} {
					require.Equal(t, ref, scanTunedRows(t, m.tb, snap, cols, ScanTuning{Workers: workers}), "step %d, %d workers", step, workers)
				}
				// A projection without the sequence field still merges by it.
				got := scanTunedRows(t, m.tb, snap, cols[:m.nkeys], ScanTuning{Workers: 2, Unordered: true})
				sort.Strings(got)
				require.Equal(t, m.expected(t, cols[:m.nkeys]), got, "step %d: keys only", step)
			}
		})
	}
}

func TestSequenceFieldOptionsAreChecked(t *testing.T) {
	c := newTestCatalog(t)
	bigint, _ := paimontype.ParseType("BIGINT")
	arr, _ := paimontype.ParseType("ARRAY<INT>")
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{OptionSequenceField: "nope"}, `names no column "nope"`},
		{map[string]string{OptionSequenceField: "a"}, `column "a" is ARRAY<INT>; a sequence field must be of a scalar type`},
		{map[string]string{OptionSequenceField: "v", OptionSequenceSortOrder: "sideways"}, `expected ascending or descending`},
	} {
		sc := paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}, {Name: "v", Type: bigint}, {Name: "a", Type: arr}},
			PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}
		for k, v := range tc.opts {
			sc.Options[k] = v
		}
		require.ErrorContains(t, CheckSequenceField(sc), tc.want)
		tb, err := c.CreateTable(t.Context(), "db", "t", sc, false)
		require.NoError(t, err)
		_, err = tb.Scan(context.Background(), nil, ScanOptions{})
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, "db.t")
		require.NoError(t, c.DropTable(t.Context(), "db", "t", false))
	}
}

// TestSequenceFieldFloatsCompareAsJava: a DOUBLE sequence field compares as
// Paimon's generated comparator does: NaN and -0 equal the other value (so
// the later arrival wins), nulls smallest, in both orders.
func TestSequenceFieldFloatsCompareAsJava(t *testing.T) {
	dbl, _ := paimontype.ParseType("DOUBLE")
	for _, desc := range []bool{false, true} {
		o := &SeqOrder{Fields: []string{"f"}, Descending: desc, types: []paimontype.DataType{dbl}}
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		b.AppendValues([]float64{math.NaN(), 1, math.Copysign(0, -1), 0, 2}, nil)
		b.AppendNull()
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil), []arrow.Array{col}, int64(col.Len()))
		col.Release()
		cmp, err := o.Rows(rec)
		require.NoError(t, err)
		sign := 1
		if desc {
			sign = -1
		}
		require.Zero(t, cmp(0, 1), "NaN ties with 1")
		require.Zero(t, cmp(1, 0))
		require.Zero(t, cmp(2, 3), "-0 ties with 0")
		require.Equal(t, sign, cmp(4, 1), "2 against 1")
		require.Equal(t, -1, cmp(5, 1), "null loses, descending too")
		require.Equal(t, 1, cmp(0, 5), "NaN beats null")
		rec.Release()
	}
}
