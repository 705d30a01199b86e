package union

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

type change struct {
	kind   string
	offset int64
	bucket int32
	at     int64 // -1: null
	row    row
}

func drainChangelog(t *testing.T, r array.RecordReader) []change {
	t.Helper()
	defer r.Release()
	var out []change
	for r.Next() {
		rec := r.RecordBatch()
		require.True(t, rec.Schema().Equal(ChangelogSchema(testSchema)), "schema %s", rec.Schema())
		kinds := rec.Column(0).(*array.String)
		offs := rec.Column(1).(*array.Int64)
		bks := rec.Column(2).(*array.Int32)
		ts := rec.Column(3).(*array.Timestamp)
		ids := rec.Column(4).(*array.Int64)
		k2 := rec.Column(5).(*array.String)
		vs := rec.Column(6).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			at := int64(-1)
			if ts.IsValid(i) {
				at = int64(ts.Value(i))
			}
			out = append(out, change{kinds.Value(i), offs.Value(i), bks.Value(i), at, row{ids.Value(i), k2.Value(i), vs.Value(i)}})
		}
	}
	require.NoError(t, r.Err())
	return out
}

// modelChangelog applies ops (one bucket's, from offset base) to state and
// returns the changes they make.
func modelChangelog(state map[key]row, ops []op, bucket int32, base int64, at func(off int64) int64) []change {
	var out []change
	for i, o := range ops {
		k := key{o.row.id, o.row.k2}
		off := base + int64(i)
		old, had := state[k]
		switch upsert := o.kind == KindInsert || o.kind == KindUpdateAfter; {
		case upsert && !had:
			out = append(out, change{"+I", off, bucket, at(off), o.row})
		case upsert:
			out = append(out, change{"-U", off, bucket, at(off), old}, change{"+U", off, bucket, at(off), o.row})
		case had:
			out = append(out, change{"-D", off, bucket, at(off), old})
		}
		if o.kind == KindInsert || o.kind == KindUpdateAfter {
			state[k] = o.row
		} else {
			delete(state, k)
		}
	}
	return out
}

// TestChangelogModel splits random writes of two buckets at a random cut
// per bucket: before it, the lake state (offered as before-images, with
// rows of keys the range does not touch); after it, log entries of random
// sizes. The changelog must equal the model's.
func TestChangelogModel(t *testing.T) {
	t.Run("key=id,k2", func(t *testing.T) { testChangelogModel(t, []int{0, 1}) })
	t.Run("key=id", func(t *testing.T) { testChangelogModel(t, []int{0}) })
}

func testChangelogModel(t *testing.T, pk []int) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	ctx := context.Background()
	for iter := 0; iter < 200; iter++ {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		nkeys := 1 + rng.IntN(30)
		var entries []ChangelogEntry
		var want []change
		lakeState := map[key]row{}
		for bucket := int32(0); bucket < 2; bucket++ {
			var ops []op
			for range rng.IntN(80) {
				r := row{2*int64(rng.IntN(nkeys)) + int64(bucket), []string{"a", "b", ""}[rng.IntN(3)], rng.Int64N(1000)}
				if len(pk) == 1 {
					r.k2 = "a"
				}
				kind := []byte{KindInsert, KindUpdateAfter, KindDelete, KindUpdateBefore, KindInsert}[rng.IntN(5)]
				ops = append(ops, op{r, kind})
			}
			cut := rng.IntN(len(ops) + 1)
			state := map[key]row{}
			modelChangelog(state, ops[:cut], bucket, 0, func(int64) int64 { return 0 })
			for k, r := range state {
				lakeState[k] = r
			}
			at := func(off int64) int64 { return 1000 + off/3 }
			if bucket == 1 {
				at = func(int64) int64 { return -1 } // unknown write times
			}
			want = append(want, modelChangelog(state, ops[cut:], bucket, int64(cut), at)...)
			rest, off := ops[cut:], int64(cut)
			for len(rest) > 0 {
				n := 1 + rng.IntN(len(rest))
				rows := make([]row, n)
				var kinds []byte
				for i, o := range rest[:n] {
					rows[i] = o.row
					if o.kind != KindInsert {
						kinds = make([]byte, n)
					}
				}
				if kinds != nil {
					for i, o := range rest[:n] {
						kinds[i] = o.kind
					}
				}
				var wt time.Time
				if a := at(off); a >= 0 {
					wt = time.UnixMilli(a)
				}
				entries = append(entries, ChangelogEntry{LogBatch: LogBatch{Rec: build(mem, rows), Kinds: kinds}, Bucket: bucket, Offset: off, Time: wt})
				// an entry's rows share its time: fix the model up
				for i := range want {
					if want[i].bucket == bucket && want[i].offset >= off && want[i].offset < off+int64(n) {
						want[i].at = at(off)
					}
				}
				rest, off = rest[n:], off+int64(n)
			}
		}
		cl, err := NewChangelog(mem, testSchema, pk, entries)
		require.NoError(t, err)
		lakeRows := rowsOf(lakeState)
		lakeRows = append(lakeRows, row{-1, "untouched", 7}, row{-3, "untouched", 8})
		rng.Shuffle(len(lakeRows), func(i, j int) { lakeRows[i], lakeRows[j] = lakeRows[j], lakeRows[i] })
		for len(lakeRows) > 0 {
			n := 1 + rng.IntN(len(lakeRows))
			rec := build(mem, lakeRows[:n])
			require.NoError(t, cl.AddBefore(ctx, rec))
			rec.Release()
			lakeRows = lakeRows[n:]
		}
		r, err := cl.Reader(ctx)
		require.NoError(t, err)
		got := drainChangelog(t, r)
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, got, "seed %d iteration %d", seed, iter)
		mem.AssertSize(t, 0)
	}
}

// TestChangelogKinds checks each case on one key, with the before-image of
// key 1 in the lake.
func TestChangelogKinds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	at := time.UnixMilli(5000)
	entries := []ChangelogEntry{
		{LogBatch: LogBatch{Rec: build(mem, []row{{2, "a", 1}, {2, "a", 2}, {3, "x", 9}}), Kinds: []byte{KindInsert, KindUpdateAfter, KindDelete}}, Offset: 10, Time: at},
		{LogBatch: LogBatch{Rec: build(mem, []row{{1, "ignored", 0}, {1, "a", 3}, {2, "ignored", 0}})}, Offset: 13, Time: at},
		{LogBatch: LogBatch{Rec: build(mem, []row{{1, "ignored", 0}, {2, "b", 4}}), Kinds: []byte{KindUpdateBefore, KindInsert}}, Offset: 16, Time: at},
	}
	entries[1].Kinds = []byte{KindDelete, KindInsert, KindDelete}
	cl, err := NewChangelog(mem, testSchema, []int{0}, entries)
	require.NoError(t, err)
	require.Equal(t, 3, cl.Keys())
	lake := build(mem, []row{{1, "lake", 100}, {4, "other", 0}})
	require.NoError(t, cl.AddBefore(ctx, lake))
	lake.Release()
	r, err := cl.Reader(ctx)
	require.NoError(t, err)
	want := []change{
		{"+I", 10, 0, 5000, row{2, "a", 1}},
		{"-U", 11, 0, 5000, row{2, "a", 1}},
		{"+U", 11, 0, 5000, row{2, "a", 2}},
		// 12: delete of absent key 3: nothing
		{"-D", 13, 0, 5000, row{1, "lake", 100}}, // the stored row, from the lake
		{"+I", 14, 0, 5000, row{1, "a", 3}},
		{"-D", 15, 0, 5000, row{2, "a", 2}},
		{"-D", 16, 0, 5000, row{1, "a", 3}}, // -U deletes too
		{"+I", 17, 0, 5000, row{2, "b", 4}},
	}
	require.Equal(t, want, drainChangelog(t, r))
}

// TestChangelogLarge crosses output batch boundaries: every update's -U and
// +U are adjacent and share an offset.
func TestChangelogLarge(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const n = 100_000
	var entries []ChangelogEntry
	for start := 0; start < 3*n; start += 10_000 {
		rows := make([]row, 10_000)
		for i := range rows {
			rows[i] = row{int64((start + i) % n), "k", int64(start + i)}
		}
		entries = append(entries, ChangelogEntry{LogBatch: LogBatch{Rec: build(mem, rows)}, Offset: int64(start)})
	}
	cl, err := NewChangelog(mem, testSchema, []int{0}, entries)
	require.NoError(t, err)
	r, err := cl.Reader(ctx)
	require.NoError(t, err)
	got := drainChangelog(t, r)
	require.Len(t, got, n+2*2*n)
	for i := 0; i < n; i++ {
		require.Equal(t, change{"+I", int64(i), 0, -1, row{int64(i), "k", int64(i)}}, got[i])
	}
	for i := n; i < len(got); i += 2 {
		u, v := got[i], got[i+1]
		require.Equal(t, "-U", u.kind)
		require.Equal(t, "+U", v.kind)
		require.Equal(t, u.offset, v.offset)
		require.Equal(t, u.row.id, v.row.id)
		require.Equal(t, v.row.v-int64(n), u.row.v)
	}
}

func TestChangelogAppend(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	entries := []ChangelogEntry{
		{LogBatch: LogBatch{Rec: build(mem, []row{{1, "a", 1}, {1, "a", 1}})}, Bucket: 0, Offset: 4},
		{LogBatch: LogBatch{Rec: build(mem, []row{{1, "a", 1}})}, Bucket: 1, Offset: 0, Time: time.UnixMilli(7)},
	}
	cl, err := NewChangelog(mem, testSchema, nil, entries)
	require.NoError(t, err)
	require.Zero(t, cl.Keys())
	r, err := cl.Reader(ctx)
	require.NoError(t, err)
	require.Equal(t, []change{
		{"+I", 4, 0, -1, row{1, "a", 1}},
		{"+I", 5, 0, -1, row{1, "a", 1}},
		{"+I", 0, 1, 7, row{1, "a", 1}},
	}, drainChangelog(t, r))
}

func TestChangelogRejectsDisorder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	entries := []ChangelogEntry{
		{LogBatch: LogBatch{Rec: build(mem, []row{{1, "a", 1}, {2, "a", 1}})}, Bucket: 0, Offset: 4},
		{LogBatch: LogBatch{Rec: build(mem, []row{{1, "a", 1}})}, Bucket: 0, Offset: 5},
	}
	_, err := NewChangelog(mem, testSchema, []int{0}, entries)
	require.ErrorContains(t, err, "out of order")
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(mem, bad)
	b.Field(0).(*array.Int32Builder).Append(1)
	rec := b.NewRecordBatch()
	b.Release()
	_, err = NewChangelog(mem, testSchema, []int{0}, []ChangelogEntry{{LogBatch: LogBatch{Rec: rec}}})
	require.ErrorContains(t, err, "columns")
}
