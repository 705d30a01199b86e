package union

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// changeRows renders a changelog reader's rows as "kind id label".
func changeRows(t *testing.T, r array.RecordReader) []string {
	t.Helper()
	var out []string
	for r.Next() {
		rec := r.RecordBatch()
		kinds := rec.Column(0).(*array.String)
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		labels := rec.Column(rec.Schema().FieldIndices("label")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, fmt.Sprintf("%s %d %s", kinds.Value(i), ids.Value(i), labels.Value(i)))
		}
	}
	require.NoError(t, r.Err())
	return out
}

// TestChangelogRoundsWithKeyStatesMatchOneRange cuts a random range of log
// entries into rounds, as a stream does, and checks that the rounds, each
// starting from the KeyStates the earlier ones left (For, AddState,
// FinalState, Update), produce exactly the changes of the whole range read
// at once: with and without sequence fields, before-images with lake
// tombstones, keys that end absent, and enough rounds to compact the
// states.
func TestChangelogRoundsWithKeyStatesMatchOneRange(t *testing.T) {
	ctx := context.Background()
	defer func(n int64) { keyStatesCompactRows = n }(keyStatesCompactRows)
	keyStatesCompactRows = 64
	compactions := 0
	for seed := uint64(0); seed < 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		seq := seed%2 == 1
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		keys := 1 + rng.IntN(40)
		var before []seqRow
		for id := int64(0); id < int64(keys); id++ {
			if rng.IntN(2) == 0 {
				kind := KindInsert
				if seq && rng.IntN(4) == 0 {
					kind = KindDelete // a lake tombstone
				}
				before = append(before, seqRow{id: id, v: seqValue(rng, 5), kind: kind, label: "lake"})
			}
		}
		lakeSc := seqSchema
		if seq {
			lakeSc = seqLakeSchema
		}
		var entries []ChangelogEntry
		var off int64
		for b := 0; b < 40+rng.IntN(200); b++ {
			var rows []seqRow
			var kinds []byte
			for i := 0; i < 1+rng.IntN(40); i++ {
				r := seqRow{id: rng.Int64N(int64(keys)), v: seqValue(rng, 5), kind: []byte{KindInsert, KindUpdateAfter, KindDelete, KindUpdateBefore}[rng.IntN(4)], label: fmt.Sprintf("log%d.%d", b, i)}
				rows = append(rows, r)
				kinds = append(kinds, r.kind)
			}
			entries = append(entries, ChangelogEntry{LogBatch: LogBatch{Rec: seqBatch(mem, seqSchema, rows, false), Kinds: kinds}, Offset: off})
			off += int64(len(rows))
		}
		run := func(part []ChangelogEntry, states *KeyStates) []string {
			part = slices.Clone(part) // the changelog takes its entries over
			for _, e := range part {
				e.Rec.Retain()
			}
			cl, err := NewChangelog(mem, seqSchema, []int{0}, part)
			require.NoError(t, err)
			if seq {
				cl.OrderVersions(byV{})
			}
			lake := seqBatch(mem, lakeSc, before, seq)
			require.NoError(t, cl.AddBefore(ctx, lake))
			lake.Release()
			if states != nil {
				st, err := states.For(ctx, part)
				require.NoError(t, err)
				if st.Rec != nil {
					require.NoError(t, cl.AddState(ctx, st))
					st.Rec.Release()
				}
			}
			r, err := cl.Reader(ctx)
			require.NoError(t, err)
			out := changeRows(t, r)
			if states != nil {
				st, err := FinalState(ctx, r)
				require.NoError(t, err)
				parts := len(states.parts)
				require.NoError(t, states.Update(ctx, st))
				if st.Rec != nil && len(states.parts) <= parts {
					compactions++
				}
			}
			r.Release()
			return out
		}
		want := run(entries, nil)
		states := NewKeyStates(mem, seqSchema, []int{0})
		var got []string
		for i := 0; i < len(entries); {
			j := min(len(entries), i+1+rng.IntN(3))
			got = append(got, run(entries[i:j], states)...)
			i = j
		}
		require.Equal(t, want, got, "seed %d (sequence fields %v)", seed, seq)
		require.LessOrEqual(t, states.Keys(), keys)
		states.Release()
		for _, e := range entries {
			e.Rec.Release()
		}
		mem.AssertSize(t, 0)
	}
	require.Positive(t, compactions, "no round compacted the states")
}
