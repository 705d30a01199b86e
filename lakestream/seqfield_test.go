package lakestream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

// seqVer is one version of a key in the sequence-field model.
type seqVer struct {
	v    string
	ts   *int64
	kind string
}

// TestSequenceFieldRealtimeModel writes a table with 'sequence.field' = 'ts'
// (ascending or descending) through the log with versions that arrive out of
// sequence order (nulls, ties, deletes and CDC rows among them), tiers in
// capped rounds and restarts, and checks after every step that t$rt, a
// projection of t$rt without the sequence field, the changelog (replayed
// onto a replica) and, once everything is tiered, the lake table all equal
// the model: per key the version with the largest ts wins (null smallest,
// equal values to the later arrival) and a winning retraction, a tombstone
// in the lake included, hides the key. A stream read alongside, in rounds of
// a few rows and resumed across restarts, ends each step in the same state.
func TestSequenceFieldRealtimeModel(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		desc := seed%2 == 0
		t.Run(fmt.Sprintf("seed=%d/desc=%v", seed, desc), func(t *testing.T) {
			dir := t.TempDir()
			maxRows := int64(5 + rng.IntN(30))
			var log *logstore.Store
			var ls *lakestream.Service
			var tr *tiering.Service
			open := func() {
				cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
				require.NoError(t, err)
				log, err = logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
				require.NoError(t, err)
				ls = lakestream.New(cat, log, lakestream.Options{})
				// No compaction: lake tombstones stay, as the model keeps them.
				tr = tiering.New(ls, tiering.Options{MaxRowsPerRound: maxRows, CompactMinFiles: 1 << 20})
			}
			open()
			t.Cleanup(func() { log.Close() })
			defer lakestream.SetStreamRoundRows(int64(1 + rng.IntN(8)))()
			c := newConsumer(t)
			var r array.RecordReader
			closeStream := func() {
				if r != nil {
					r.Release()
					r = nil
				}
			}
			defer closeStream()
			require.NoError(t, ls.CreateDatabase(ctx, "db", true))
			bigint, _ := paimontype.ParseType("BIGINT")
			str, _ := paimontype.ParseType("STRING")
			opts := map[string]string{"bucket": fmt.Sprint(1 + rng.IntN(3)), "sequence.field": "ts"}
			if desc {
				opts["sequence.field.sort-order"] = "descending"
			}
			require.NoError(t, ls.CreateTable(ctx, "db", "sq", paimontype.Schema{
				Columns:     []paimontype.Column{{Name: "id", Type: bigint}, {Name: "v", Type: str}, {Name: "ts", Type: bigint}},
				PrimaryKeys: []string{"id"}, Options: opts}, false))

			won := map[int64]seqVer{}
			newer := func(a, b seqVer) bool { // a arrived after b
				switch {
				case a.ts == nil:
					return b.ts == nil
				case b.ts == nil:
					return true
				case desc:
					return *a.ts <= *b.ts
				}
				return *a.ts >= *b.ts
			}
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64},
				{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "ts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: lakestream.ChangeKindColumn, Type: arrow.BinaryTypes.String},
			}, nil)
			for step := 0; step < 30; step++ {
				msg := fmt.Sprintf("step %d", step)
				switch op := rng.IntN(10); {
				case op < 6:
					b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
					for i := 0; i < 1+rng.IntN(20); i++ {
						ver := seqVer{v: fmt.Sprintf("s%d-%d", step, i), kind: []string{"+I", "+U", "+I", "-D", "-U"}[rng.IntN(5)]}
						if rng.IntN(5) > 0 {
							x := rng.Int64N(6)
							ver.ts = &x
						}
						id := rng.Int64N(12)
						b.Field(0).(*array.Int64Builder).Append(id)
						b.Field(1).(*array.StringBuilder).Append(ver.v)
						if ver.ts == nil {
							b.Field(2).AppendNull()
						} else {
							b.Field(2).(*array.Int64Builder).Append(*ver.ts)
						}
						b.Field(3).(*array.StringBuilder).Append(ver.kind)
						if old, ok := won[id]; !ok || newer(ver, old) {
							won[id] = ver
						}
					}
					rec := b.NewRecordBatch()
					b.Release()
					_, err := ls.Write(ctx, "db", "sq", rec)
					rec.Release()
					require.NoError(t, err, msg)
				case op < 9:
					_, err := tr.TierTable(ctx, "db", "sq")
					require.NoError(t, err, msg)
				default:
					closeStream()
					require.NoError(t, log.Close())
					open()
				}
				want := map[int64]string{}
				for id, w := range won {
					if w.kind == "+I" || w.kind == "+U" {
						want[id] = w.v
					}
				}
				require.Equal(t, want, scanSeqRows(t, ls, lakestream.ScanOptions{Realtime: true}), "%s: t$rt", msg)
				ids := scanSeqRows(t, ls, lakestream.ScanOptions{Realtime: true, Columns: []string{"id"}})
				require.Len(t, ids, len(want), "%s: t$rt of the key alone", msg)
				for id := range want {
					require.Contains(t, ids, id, msg)
				}
				require.Equal(t, want, replayChangelog(t, ls), "%s: changelog", msg)
				for _, id := range []int64{rng.Int64N(12), rng.Int64N(12)} { // point reads prune by the key
					got := scanSeqRows(t, ls, lakestream.ScanOptions{Realtime: true, Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{id}}}})
					w, ok := want[id]
					if !ok {
						require.Empty(t, got, "%s: point read of %d", msg, id)
					} else {
						require.Equal(t, map[int64]string{id: w}, got, "%s: point read of %d", msg, id)
					}
				}
				if r == nil {
					opts := lakestream.StreamOptions{After: c.resume()}
					if opts.After == nil {
						c.forget()
					}
					c.marked = false
					var err error
					r, err = ls.Stream(ctx, "db", "sq", opts)
					require.NoError(t, err, msg)
				}
				tbl, err := ls.Table(ctx, "db", "sq")
				require.NoError(t, err)
				hws := log.HighWatermarks(lakestream.TableID(tbl))
				for !lakestream.StreamCaughtUp(r, hws) {
					require.True(t, r.Next(), "%s: the stream ended: %v", msg, r.Err())
					c.apply(r.RecordBatch(), msg)
				}
				require.Equal(t, want, c.state, "%s: the stream's state", msg)
			}
			// Everything tiered: the lake alone holds the model.
			for {
				res, err := tr.TierTable(ctx, "db", "sq")
				require.NoError(t, err)
				if res.Rows == 0 && !res.More {
					break
				}
			}
			want := map[int64]string{}
			for id, w := range won {
				if w.kind == "+I" || w.kind == "+U" {
					want[id] = w.v
				}
			}
			require.Equal(t, want, scanSeqRows(t, ls, lakestream.ScanOptions{}), "the lake after tiering")
		})
	}
}

// scanSeqRows reads db.sq as id -> v (v empty when not read).
func scanSeqRows(t *testing.T, ls *lakestream.Service, opts lakestream.ScanOptions) map[int64]string {
	t.Helper()
	r, err := ls.ScanWith(context.Background(), "db", "sq", opts)
	require.NoError(t, err)
	defer r.Release()
	out := map[int64]string{}
	for r.Next() {
		rec := r.RecordBatch()
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		var vs *array.String
		if i := rec.Schema().FieldIndices("v"); len(i) == 1 {
			vs = rec.Column(i[0]).(*array.String)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			_, dup := out[ids.Value(i)]
			require.False(t, dup, "key %d twice", ids.Value(i))
			if vs != nil {
				out[ids.Value(i)] = vs.Value(i)
			} else {
				out[ids.Value(i)] = ""
			}
		}
	}
	require.NoError(t, r.Err())
	return out
}

// replayChangelog applies db.sq's changelog to an empty replica, checking
// that every change is a valid transition.
func replayChangelog(t *testing.T, ls *lakestream.Service) map[int64]string {
	t.Helper()
	r, err := ls.Changelog(context.Background(), "db", "sq")
	require.NoError(t, err)
	defer r.Release()
	replica := map[int64]string{}
	for r.Next() {
		rec := r.RecordBatch()
		kinds := rec.Column(0).(*array.String)
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		vs := rec.Column(rec.Schema().FieldIndices("v")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			id, v := ids.Value(i), vs.Value(i)
			cur, present := replica[id]
			switch k := kinds.Value(i); {
			case k == "+I":
				require.False(t, present, "+I of present key %d", id)
				replica[id] = v
			case k == "+U":
				replica[id] = v
			case strings.HasPrefix(k, "-"):
				require.True(t, present, "%s of absent key %d", k, id)
				require.Equal(t, cur, v, "%s of key %d shows another row", k, id)
				delete(replica, id)
			}
		}
	}
	require.NoError(t, r.Err())
	return replica
}
