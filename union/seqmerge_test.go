package union

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// byV orders versions by the column "v", nulls smallest, as a table with
// 'sequence.field' = 'v' does.
type byV struct{}

func (byV) Across(x, y arrow.RecordBatch) (func(a, b int) int, error) {
	xv := x.Column(x.Schema().FieldIndices("v")[0]).(*array.Int64)
	yv := y.Column(y.Schema().FieldIndices("v")[0]).(*array.Int64)
	return func(a, b int) int {
		switch na, nb := xv.IsNull(a), yv.IsNull(b); {
		case na && nb:
			return 0
		case na:
			return -1
		case nb:
			return 1
		}
		return cmp.Compare(xv.Value(a), yv.Value(b))
	}, nil
}

var seqSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "label", Type: arrow.BinaryTypes.String},
}, nil)

// seqLakeSchema is seqSchema with the lake's row kinds last.
var seqLakeSchema = arrow.NewSchema(append(seqSchema.Fields(), arrow.Field{Name: "_VALUE_KIND", Type: arrow.PrimitiveTypes.Int8}), nil)

// seqValue is a random sequence value below n, or null one time in five.
func seqValue(rng *rand.Rand, n int64) *int64 {
	if rng.IntN(5) == 0 {
		return nil
	}
	x := rng.Int64N(n)
	return &x
}

// seqNewer reports whether version a, arriving after b, wins over it.
func seqNewer(a, b seqRow) bool {
	switch {
	case a.v == nil && b.v == nil:
		return true
	case a.v == nil:
		return false
	case b.v == nil:
		return true
	}
	return *a.v >= *b.v
}

type seqRow struct {
	id    int64
	v     *int64
	kind  byte
	label string // which write, to tell versions with equal v apart
}

func seqBatch(mem memory.Allocator, sc *arrow.Schema, rows []seqRow, kinds bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.v == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(*r.v)
		}
		b.Field(2).(*array.StringBuilder).Append(r.label)
		if kinds {
			b.Field(3).(*array.Int8Builder).Append(int8(r.kind))
		}
	}
	return b.NewRecordBatch()
}

// TestSequenceFieldUnionModel merges random lake rows (tombstones
// included) with random log versions whose sequence values arrive out of
// order, through LakeFilter on the scan's side and through the reader, and
// checks each key against the model: the version with the largest v wins
// (nulls smallest), equal values go to the later arrival (the log after
// the lake), a winning retraction hides the key.
func TestSequenceFieldUnionModel(t *testing.T) {
	sc := seqSchema
	lakeSc := seqLakeSchema
	for seed := uint64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		keys := 1 + rng.IntN(30)
		value := func() *int64 { return seqValue(rng, 6) }
		won := map[int64]seqRow{}
		var lake []seqRow
		for id := int64(0); id < int64(keys); id++ {
			if rng.IntN(3) == 0 {
				continue
			}
			r := seqRow{id: id, v: value(), kind: []byte{KindInsert, KindUpdateAfter, KindDelete}[rng.IntN(3)], label: "lake"}
			lake = append(lake, r)
			won[id] = r
		}
		var log []LogBatch
		for b := 0; b < 1+rng.IntN(4); b++ {
			var rows []seqRow
			kinds := make([]byte, 0)
			for i := 0; i < rng.IntN(12); i++ {
				r := seqRow{id: rng.Int64N(int64(keys)), v: value(), kind: []byte{KindInsert, KindUpdateAfter, KindDelete, KindUpdateBefore}[rng.IntN(4)], label: fmt.Sprintf("log%d.%d", b, i)}
				rows = append(rows, r)
				kinds = append(kinds, r.kind)
				if old, ok := won[r.id]; !ok || seqNewer(r, old) {
					won[r.id] = r
				}
			}
			log = append(log, LogBatch{Rec: seqBatch(mem, sc, rows, false), Kinds: kinds})
		}
		var want []string
		for id := int64(0); id < int64(keys); id++ {
			if r, ok := won[id]; ok && !isRetractKind(r.kind) {
				want = append(want, fmt.Sprintf("%d:%s", id, r.label))
			}
		}
		for _, workers := range []bool{true, false} {
			batches := make([]LogBatch, len(log))
			for i, b := range log {
				b.Rec.Retain()
				batches[i] = b
			}
			m, err := MergeLogVersions(context.Background(), mem, sc, []int{0}, batches, &Versions{Order: byV{}, LakeKinds: true})
			require.NoError(t, err)
			// The lake in two batches, each in key order.
			half := len(lake) / 2
			var recs []arrow.RecordBatch
			for _, part := range [][]seqRow{lake[:half], lake[half:]} {
				rec := seqBatch(mem, lakeSc, part, true)
				if workers { // LakeFilter runs on the scan's side
					f, err := m.LakeFilter()(rec)
					require.NoError(t, err)
					rec.Release()
					if f == nil {
						continue
					}
					rec = f
				}
				recs = append(recs, rec)
			}
			rsc := lakeSc
			if workers {
				rsc = sc
			}
			lr, err := array.NewRecordReader(rsc, recs)
			require.NoError(t, err)
			for _, r := range recs {
				r.Release()
			}
			var r array.RecordReader
			if workers {
				r = m.Reader(lr)
			} else {
				rr := m.reader(lr)
				rr.filter = m.filter
				r = rr
			}
			var got []string
			for r.Next() {
				rec := r.RecordBatch()
				require.Equal(t, 3, int(rec.NumCols()))
				ids := rec.Column(0).(*array.Int64)
				labels := rec.Column(2).(*array.String)
				for i := 0; i < int(rec.NumRows()); i++ {
					got = append(got, fmt.Sprintf("%d:%s", ids.Value(i), labels.Value(i)))
				}
			}
			require.NoError(t, r.Err())
			r.Release()
			require.ElementsMatch(t, want, got, "seed %d, filter on workers %v", seed, workers)
		}
		for _, b := range log {
			b.Rec.Release()
		}
		mem.AssertSize(t, 0)
	}
}

// TestSequenceFieldChangelogModel runs the changelog of random log entries
// over random before-images with versions ordered by v, applies every
// change to a replica, and checks that each change is a valid transition
// (+I for an absent key, -U and -D with the replica's row, +U after -U) and
// that the replica ends as the model: per key the version with the largest
// v (nulls smallest, ties to the later arrival), absent when a retraction
// wins. A version that loses changes nothing, also to a lake retraction
// among the before-images.
func TestSequenceFieldChangelogModel(t *testing.T) {
	sc := seqSchema
	for seed := uint64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 10))
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		keys := 1 + rng.IntN(20)
		value := func() *int64 { return seqValue(rng, 5) }
		won := map[int64]seqRow{}
		replica := map[int64]string{}
		var before []seqRow
		for id := int64(0); id < int64(keys); id++ {
			if rng.IntN(2) == 0 {
				r := seqRow{id: id, v: value(), kind: []byte{KindInsert, KindUpdateAfter, KindDelete}[rng.IntN(3)], label: "lake"}
				before = append(before, r)
				won[id] = r
				if !isRetractKind(r.kind) {
					replica[id] = r.label
				}
			}
		}
		var entries []ChangelogEntry
		var off int64
		for b := 0; b < 1+rng.IntN(4); b++ {
			var rows []seqRow
			var kinds []byte
			for i := 0; i < 1+rng.IntN(10); i++ {
				r := seqRow{id: rng.Int64N(int64(keys)), v: value(), kind: []byte{KindInsert, KindUpdateAfter, KindDelete}[rng.IntN(3)], label: fmt.Sprintf("log%d.%d", b, i)}
				rows = append(rows, r)
				kinds = append(kinds, r.kind)
				if old, ok := won[r.id]; !ok || seqNewer(r, old) {
					won[r.id] = r
				}
			}
			entries = append(entries, ChangelogEntry{LogBatch: LogBatch{Rec: seqBatch(mem, sc, rows, false), Kinds: kinds}, Offset: off})
			off += int64(len(rows))
		}
		cl, err := NewChangelog(mem, sc, []int{0}, entries)
		require.NoError(t, err)
		cl.OrderVersions(byV{})
		lake := seqBatch(mem, seqLakeSchema, before, true) // tombstones with their kinds
		require.NoError(t, cl.AddBefore(context.Background(), lake))
		lake.Release()
		r, err := cl.Reader(context.Background())
		require.NoError(t, err)
		var pendingU *int64
		for r.Next() {
			rec := r.RecordBatch()
			kinds := rec.Column(0).(*array.String)
			ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
			labels := rec.Column(rec.Schema().FieldIndices("label")[0]).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				id, label := ids.Value(i), labels.Value(i)
				cur, present := replica[id]
				switch k := kinds.Value(i); k {
				case "+I":
					require.False(t, present, "seed %d: +I of present key %d", seed, id)
					replica[id] = label
				case "-U", "-D":
					require.True(t, present, "seed %d: %s of absent key %d", seed, k, id)
					require.Equal(t, cur, label, "seed %d: %s of key %d shows another row", seed, k, id)
					delete(replica, id)
					if k == "-U" {
						pendingU = &id
					}
				case "+U":
					require.NotNil(t, pendingU, "seed %d: +U without -U", seed)
					require.Equal(t, *pendingU, id)
					pendingU = nil
					replica[id] = label
				default:
					t.Fatalf("kind %q", k)
				}
			}
		}
		require.NoError(t, r.Err())
		r.Release()
		want := map[int64]string{}
		for id, w := range won {
			if !isRetractKind(w.kind) {
				want[id] = w.label
			}
		}
		require.Equal(t, want, replica, "seed %d", seed)
		mem.AssertSize(t, 0)
	}
}
