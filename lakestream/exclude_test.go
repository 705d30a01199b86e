package lakestream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
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

// TestRealtimeProjectionsWithoutKeyModel checks the union read that drops
// the lake rows the log replaces by position (the files' cached keys)
// instead of by decoding the key: t$rt of an integer-keyed table, read with
// every projection an aggregate uses (no column, columns without the key,
// the key among others, every column) after random upserts and deletes,
// capped tiering rounds that leave keys in several files and levels (and
// compactions that merge them), with the key cache on or off, always
// equals the model: the newest version of each key.
func TestRealtimeProjectionsWithoutKeyModel(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		keyType := []string{"BIGINT", "INT", "DATE"}[seed%3]
		cache := seed%4 < 2
		t.Run(fmt.Sprintf("seed=%d/key=%s/cache=%v", seed, keyType, cache), func(t *testing.T) {
			if !cache {
				old := lake.KeyIndexCacheBytes
				lake.KeyIndexCacheBytes = 0
				t.Cleanup(func() { lake.KeyIndexCacheBytes = old })
			}
			dir := t.TempDir()
			cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
			require.NoError(t, err)
			log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
			require.NoError(t, err)
			t.Cleanup(func() { log.Close() })
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			t.Cleanup(func() { mem.AssertSize(t, 0) })
			ls := lakestream.New(cat, log, lakestream.Options{Allocator: mem})
			tr := tiering.New(ls, tiering.Options{MaxRowsPerRound: int64(5 + rng.IntN(40)), CompactMinFiles: []int{3, 1 << 20}[seed%2]})
			require.NoError(t, ls.CreateDatabase(ctx, "db", true))
			key, _ := paimontype.ParseType(keyType)
			str, _ := paimontype.ParseType("STRING")
			bigint, _ := paimontype.ParseType("BIGINT")
			require.NoError(t, ls.CreateTable(ctx, "db", "t", paimontype.Schema{
				Columns:     []paimontype.Column{{Name: "n", Type: bigint}, {Name: "id", Type: key}, {Name: "v", Type: str}},
				PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": fmt.Sprint(1 + rng.IntN(3))}}, false))
			sc, err := ls.ArrowSchema(ctx, "db", "t")
			require.NoError(t, err)
			fields := append(slices.Clone(sc.Fields()), arrow.Field{Name: lakestream.ChangeKindColumn, Type: arrow.BinaryTypes.String})
			in := arrow.NewSchema(fields, nil)

			type row struct {
				n int64
				v string
			}
			model := map[int64]row{}
			for step := 0; step < 40; step++ {
				msg := fmt.Sprintf("step %d", step)
				if rng.IntN(3) > 0 {
					b := array.NewRecordBuilder(memory.DefaultAllocator, in)
					for i := 0; i < 1+rng.IntN(30); i++ {
						id := rng.Int64N(60) - 10
						r := row{n: rng.Int64N(1000), v: fmt.Sprintf("s%d-%d", step, i)}
						kind := []string{"+I", "+U", "+I", "+I", "-D", "-U"}[rng.IntN(6)]
						b.Field(0).(*array.Int64Builder).Append(r.n)
						switch kb := b.Field(1).(type) {
						case *array.Int64Builder:
							kb.Append(id)
						case *array.Int32Builder:
							kb.Append(int32(id))
						case *array.Date32Builder:
							kb.Append(arrow.Date32(id))
						}
						b.Field(2).(*array.StringBuilder).Append(r.v)
						b.Field(3).(*array.StringBuilder).Append(kind)
						if kind == "-D" || kind == "-U" {
							delete(model, id)
						} else {
							model[id] = r
						}
					}
					rec := b.NewRecordBatch()
					b.Release()
					_, err := ls.Write(ctx, "db", "t", rec)
					rec.Release()
					require.NoError(t, err, msg)
				} else {
					_, err := tr.TierTable(ctx, "db", "t")
					require.NoError(t, err, msg)
				}
				want := map[string][]string{}
				for id, r := range model {
					want["n,v"] = append(want["n,v"], fmt.Sprintf("%d|%s", r.n, r.v))
					want["v"] = append(want["v"], r.v)
					want["v,id"] = append(want["v,id"], fmt.Sprintf("%s|%d", r.v, id))
					want["*"] = append(want["*"], fmt.Sprintf("%d|%d|%s", r.n, id, r.v))
				}
				for name, cols := range map[string][]string{"n,v": {"n", "v"}, "v": {"v"}, "v,id": {"v", "id"}, "*": nil} {
					got := scanRendered(t, ls, cols)
					slices.Sort(got)
					slices.Sort(want[name])
					require.Equal(t, want[name], got, "%s: t$rt of columns %s", msg, name)
				}
				require.Len(t, scanRendered(t, ls, []string{}), len(model), "%s: t$rt of no column", msg)
				// A filtered read takes the other path (the key column, filtered).
				id := rng.Int64N(60) - 10
				lit := any(id)
				if keyType == "INT" {
					lit = int32(id)
				}
				if keyType == "DATE" {
					lit = arrow.Date32(id)
				}
				// The filter prunes; the rows of other keys it leaves are the
				// caller's to drop.
				var got []string
				for _, r := range scanRenderedWith(t, ls, lakestream.ScanOptions{Realtime: true, Columns: []string{"v", "id"},
					Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{lit}}}}) {
					if v, k, _ := strings.Cut(r, "|"); k == fmt.Sprint(id) {
						got = append(got, v)
					}
				}
				if r, ok := model[id]; ok {
					require.Equal(t, []string{r.v}, got, "%s: point read of %d", msg, id)
				} else {
					require.Empty(t, got, "%s: point read of %d", msg, id)
				}
			}
			// Everything tiered: the lake alone holds the model, and the log
			// cache holds nothing (the allocator's check).
			for {
				res, err := tr.TierTable(ctx, "db", "t")
				require.NoError(t, err)
				if res.Rows == 0 && !res.More {
					break
				}
			}
			got := scanRenderedWith(t, ls, lakestream.ScanOptions{Columns: []string{"n", "v"}})
			want := []string{}
			for _, r := range model {
				want = append(want, fmt.Sprintf("%d|%s", r.n, r.v))
			}
			slices.Sort(got)
			slices.Sort(want)
			require.Equal(t, want, got, "the lake after tiering")
		})
	}
}

func scanRendered(t *testing.T, ls *lakestream.Service, cols []string) []string {
	return scanRenderedWith(t, ls, lakestream.ScanOptions{Realtime: true, Columns: cols})
}

// scanRenderedWith reads db.t and renders each row as its values joined by |.
func scanRenderedWith(t *testing.T, ls *lakestream.Service, opts lakestream.ScanOptions) []string {
	t.Helper()
	r, err := ls.ScanWith(context.Background(), "db", "t", opts)
	require.NoError(t, err)
	defer r.Release()
	if len(opts.Columns) > 0 { // no column: the scan returns the key, for the row count
		require.Equal(t, len(opts.Columns), r.Schema().NumFields())
	}
	var out []string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				switch col := rec.Column(c).(type) {
				case *array.Date32:
					parts = append(parts, fmt.Sprint(int64(col.Value(i))))
				default:
					parts = append(parts, col.ValueStr(i))
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	require.NoError(t, r.Err())
	return out
}
