package tiering

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tiering test (0 = time based)")

type env struct {
	dir string
	cat *lake.Catalog
	log *logstore.Store
	ls  *lakestream.Service
	tr  *Service
}

func open(t *testing.T, dir string) *env {
	t.Helper()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	ls := lakestream.New(cat, log, lakestream.Options{})
	e := &env{dir: dir, cat: cat, log: log, ls: ls, tr: New(ls, Options{
		MaxRowsPerRound: 50,
		CompactMinFiles: 3, // compact often
		Expire:          lake.ExpireOptions{RetainMin: 1, RetainMax: 3, OlderThan: time.Millisecond},
	})}
	t.Cleanup(func() { log.Close() })
	return e
}

func (e *env) reopen(t *testing.T) *env {
	require.NoError(t, e.log.Close())
	return open(t, e.dir)
}

func mustType(t *testing.T, s string) paimontype.DataType {
	dt, err := paimontype.ParseType(s)
	require.NoError(t, err)
	return dt
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var kindSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: lakestream.ChangeKindColumn, Type: arrow.BinaryTypes.String},
}, nil)

// kindBatch carries a change kind per row.
func kindBatch(ids []int64, vals, kinds []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, kindSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(vals, nil)
	b.Field(2).(*array.StringBuilder).AppendValues(kinds, nil)
	return b.NewRecordBatch()
}

func batch(ids []int64, vals []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

func scan(t *testing.T, e *env, table string, realtime bool) []string {
	t.Helper()
	r, err := e.ls.Scan(context.Background(), "db", table, realtime)
	require.NoError(t, err)
	defer r.Release()
	var out []string
	for r.Next() {
		rec := r.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		vs := rec.Column(1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, fmt.Sprintf("%d=%s", ids.Value(i), vs.Value(i)))
		}
	}
	require.NoError(t, r.Err())
	sort.Strings(out)
	return out
}

// seeded returns a random source for a randomized test from -seed (else
// the time), and the seed, which it logs.
func seeded(t *testing.T, stream uint64) (*rand.Rand, uint64) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, stream)), seed
}

func modelRows(m map[int64]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%d=%s", k, v))
	}
	sort.Strings(out)
	return out
}

// TestTieringModel writes random upserts and deletes (batches with change
// kinds, or without: all upserts; small, so that reads join their cached
// entries),
// compacts (every 3 files), applies log retention and snapshot expiration
// at random, tiers at random points (with a
// small per-round cap, so rounds commit prefixes), restarts at random points,
// and checks after every step that t$rt equals the model, that t never holds
// more than was written, and that after a drain t equals t$rt.
func TestTieringModel(t *testing.T) {
	rng, seed := seeded(t, 1)
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "pk", 1+rng.IntN(4))
	model := map[int64]string{}
	for step := 0; step < 150; step++ {
		switch op := rng.IntN(10); {
		case op < 6:
			n := 1 + rng.IntN(40)
			ids := make([]int64, n)
			vals := make([]string, n)
			kinds := make([]string, n)
			for i := range ids {
				ids[i] = rng.Int64N(100)
				vals[i] = fmt.Sprintf("s%d-%d", step, i)
				kinds[i] = []string{"+I", "+U", "-D", "-U", "+I"}[rng.IntN(5)]
				if kinds[i] == "-D" || kinds[i] == "-U" {
					delete(model, ids[i])
				} else {
					model[ids[i]] = vals[i]
				}
			}
			rec := kindBatch(ids, vals, kinds)
			if rng.IntN(3) == 0 { // no change kinds: every row an upsert
				for i := range ids {
					model[ids[i]] = vals[i]
				}
				rec.Release()
				rec = batch(ids, vals)
			}
			_, err := e.ls.Write(ctx, "db", "pk", rec)
			rec.Release()
			require.NoError(t, err)
		case op < 9:
			_, err := e.tr.TierTable(ctx, "db", "pk")
			require.NoError(t, err)
			if rng.IntN(3) == 0 { // retention that makes every snapshot old
				later := time.Now().Add(48 * time.Hour)
				_, err := e.tr.CollectTable(ctx, "db", "pk", later)
				require.NoError(t, err)
				_, err = e.tr.ExpireTable(ctx, "db", "pk", later)
				require.NoError(t, err)
			}
		default:
			e = e.reopen(t)
		}
		require.Equal(t, modelRows(model), scan(t, e, "pk", true), "step %d seed %d", step, seed)
	}
	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	require.Equal(t, modelRows(model), scan(t, e, "pk", false), "seed %d", seed)
	require.Equal(t, modelRows(model), scan(t, e, "pk", true), "seed %d", seed)
	res, err := e.tr.TierTable(ctx, "db", "pk")
	require.NoError(t, err)
	require.Zero(t, res.Snapshot, "a round with nothing new commits nothing")
}

func TestAppendTableKeepsEveryRow(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	for i := 0; i < 3; i++ {
		rec := batch([]int64{1, 1}, []string{"a", "a"})
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
		if i == 1 {
			require.NoError(t, e.tr.Drain(ctx, "db", "ap"))
		}
	}
	require.Len(t, scan(t, e, "ap", true), 6)
	require.Len(t, scan(t, e, "ap", false), 4)
	require.NoError(t, e.tr.Drain(ctx, "db", "ap"))
	require.Len(t, scan(t, e, "ap", false), 6)
	require.Len(t, scan(t, e, "ap", true), 6)
}

func TestWriteRejectsBadBatches(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "pk", lakestream.DefaultPrimaryKeyBuckets)
	extra := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "zzz", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, extra)
	b.Field(0).(*array.Int32Builder).Append(1)
	b.Field(1).(*array.StringBuilder).Append("x")
	rec := b.NewRecordBatch()
	b.Release()
	_, err := e.ls.Write(ctx, "db", "pk", rec)
	rec.Release()
	require.ErrorIs(t, err, lakestream.ErrInvalidBatch)
	require.ErrorContains(t, err, `"zzz"`)

	nb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	nb.Field(0).AppendNull()
	nb.Field(1).(*array.StringBuilder).Append("x")
	nrec := nb.NewRecordBatch()
	nb.Release()
	_, err = e.ls.Write(ctx, "db", "pk", nrec)
	nrec.Release()
	require.ErrorIs(t, err, lakestream.ErrInvalidBatch)
	require.ErrorContains(t, err, `"id"`)

	// An int32 id is cast to the column's BIGINT.
	ib := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int32}}, nil))
	ib.Field(0).(*array.Int32Builder).Append(5)
	irec := ib.NewRecordBatch()
	ib.Release()
	_, err = e.ls.Write(ctx, "db", "pk", irec)
	irec.Release()
	require.NoError(t, err)
	require.Equal(t, []string{"5="}, scan(t, e, "pk", true))
	_, err = e.ls.Scan(ctx, "db", "nope", true)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
}

func TestChangeKinds(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	rec := kindBatch([]int64{1}, []string{"x"}, []string{"-D"})
	_, err := e.ls.Write(ctx, "db", "ap", rec)
	rec.Release()
	require.ErrorContains(t, err, "accepts inserts only")
	rec = kindBatch([]int64{1}, []string{"x"}, []string{"+I"})
	_, err = e.ls.Write(ctx, "db", "ap", rec)
	rec.Release()
	require.NoError(t, err, "an all-insert kind column is fine for append tables")
	rec = kindBatch([]int64{1}, []string{"x"}, []string{"delete"})
	_, err = e.ls.Write(ctx, "db", "ap", rec)
	rec.Release()
	require.ErrorContains(t, err, `"delete"`)
	require.Equal(t, []string{"1=x"}, scan(t, e, "ap", true))
}

// TestRetentionTruncatesOnlyWhatTheLakeHolds writes three rounds, applies a
// retention that makes every snapshot old, and checks that the log now
// starts at the newest snapshot's offsets, that t$rt is unchanged, and that
// nothing at or above those offsets was removed, also after a restart.
func TestRetentionTruncatesOnlyWhatTheLakeHolds(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "pk", 2)
	write := func(ids ...int64) {
		vals := make([]string, len(ids))
		for i, id := range ids {
			vals[i] = fmt.Sprint("v", id)
		}
		rec := batch(ids, vals)
		_, err := e.ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
	}
	write(1, 2, 3, 4)
	_, err := e.tr.TierTable(ctx, "db", "pk")
	require.NoError(t, err)
	write(5, 6)
	_, err = e.tr.TierTable(ctx, "db", "pk")
	require.NoError(t, err)
	write(7, 8) // not tiered: must survive retention
	want := []string{"1=v1", "2=v2", "3=v3", "4=v4", "5=v5", "6=v6", "7=v7", "8=v8"}

	// With the default 24h retention nothing is old enough.
	n, err := e.tr.CollectTable(ctx, "db", "pk", time.Now())
	require.NoError(t, err)
	require.Zero(t, n)

	n, err = e.tr.CollectTable(ctx, "db", "pk", time.Now().Add(48*time.Hour))
	require.NoError(t, err)
	require.Positive(t, n)
	tbl, err := e.ls.Table(ctx, "db", "pk")
	require.NoError(t, err)
	snap, err := tbl.LatestSnapshot(ctx)
	require.NoError(t, err)
	offs, err := lakestream.LakeOffsets(ctx, tbl, snap)
	require.NoError(t, err)
	for b := int32(0); b < 2; b++ {
		bk := logstore.Bucket{Table: lakestream.TableID(tbl), Bucket: b}
		require.Equal(t, offs.Of(b), e.log.Start(bk), "bucket %d starts at the lake offset", b)
		require.Greater(t, e.log.HighWatermark(bk), int64(0))
	}
	require.NoError(t, e.log.CollectGarbage())
	require.Equal(t, want, scan(t, e, "pk", true))
	e = e.reopen(t)
	require.Equal(t, want, scan(t, e, "pk", true))
	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	require.Equal(t, want, scan(t, e, "pk", false))
}

// TestSwitchLogOffAndOn: turning the log off drains it into the lake, writes
// then commit to the lake directly (newer versions win), and turning it back
// on starts a fresh log on top of the lake.
func TestSwitchLogOffAndOn(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "pk", 2)
	write := func(ids []int64, vals []string) {
		t.Helper()
		rec := batch(ids, vals)
		_, err := e.ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
	}
	write([]int64{1, 2, 3}, []string{"a", "b", "c"})
	require.Empty(t, scan(t, e, "pk", false))

	require.NoError(t, e.ls.SetRealtime(ctx, "db", "pk", false, e.tr.Drain))
	require.Equal(t, []string{"1=a", "2=b", "3=c"}, scan(t, e, "pk", false), "drained before switching off")
	_, err := e.ls.Scan(ctx, "db", "pk", true)
	require.ErrorIs(t, err, lakestream.ErrNotRealtime)
	require.Empty(t, e.log.HighWatermarks(lakestream.TableID(mustTable(t, e, "pk"))), "the old log is dropped")

	write([]int64{2, 4}, []string{"b2", "d"}) // commits to the lake directly
	require.Equal(t, []string{"1=a", "2=b2", "3=c", "4=d"}, scan(t, e, "pk", false))

	require.NoError(t, e.ls.SetRealtime(ctx, "db", "pk", true, nil))
	write([]int64{1, 5}, []string{"a2", "e"})
	want := []string{"1=a2", "2=b2", "3=c", "4=d", "5=e"}
	require.Equal(t, want, scan(t, e, "pk", true))
	require.Equal(t, []string{"1=a", "2=b2", "3=c", "4=d"}, scan(t, e, "pk", false))
	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	require.Equal(t, want, scan(t, e, "pk", false))
	e = e.reopen(t)
	require.Equal(t, want, scan(t, e, "pk", true))
}

func mustTable(t *testing.T, e *env, name string) *lake.Table {
	tbl, err := e.ls.Table(t.Context(), "db", name)
	require.NoError(t, err)
	return tbl
}

// TestCompactionAndExpiryKeepReadsRight: many rounds compact buckets and
// expire snapshots; a read that started before keeps its snapshot; t and
// t$rt stay right.
func TestCompactionAndExpiryKeepReadsRight(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "pk", 1)
	model := map[int64]string{}
	var compacted int
	var pinned array.RecordReader
	for round := 0; round < 12; round++ {
		ids := []int64{int64(round % 4), int64(10 + round)}
		vals := []string{fmt.Sprint("r", round), fmt.Sprint("n", round)}
		for i, id := range ids {
			model[id] = vals[i]
		}
		rec := batch(ids, vals)
		_, err := e.ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
		res, err := e.tr.TierTable(ctx, "db", "pk")
		require.NoError(t, err)
		if res.Compacted > 0 {
			compacted++
		}
		if round == 3 {
			pinned, err = e.ls.Scan(ctx, "db", "pk", false) // a read that holds snapshot 4-ish
			require.NoError(t, err)
		}
		_, err = e.tr.ExpireTable(ctx, "db", "pk", time.Now().Add(time.Hour))
		require.NoError(t, err)
	}
	require.Positive(t, compacted)
	// The pinned read still finds its files.
	var n int64
	for pinned.Next() {
		n += pinned.RecordBatch().NumRows()
	}
	require.NoError(t, pinned.Err())
	require.Positive(t, n)
	pinned.Release()
	require.Equal(t, modelRows(model), scan(t, e, "pk", false))
	require.Equal(t, modelRows(model), scan(t, e, "pk", true))
	tbl := mustTable(t, e, "pk")
	latest, err := tbl.LatestSnapshot(ctx)
	require.NoError(t, err)
	_, err = tbl.Snapshot(ctx, 1)
	require.Error(t, err, "old snapshots are expired (latest is %d)", latest.ID)
}

func TestCappedRoundsSayThereIsMore(t *testing.T) {
	e := open(t, t.TempDir()) // MaxRowsPerRound 50
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	// entries large enough that reads do not join them (small cached
	// entries are read as one batch, which may pass the cap by a little)
	const rows = 5000
	for i := 0; i < 3; i++ {
		rec := batch(make([]int64, rows), make([]string, rows))
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
	}
	for i := 0; i < 3; i++ {
		res, err := e.tr.TierTable(ctx, "db", "ap")
		require.NoError(t, err)
		require.Equal(t, i < 2, res.More, "round %d", i)
		require.EqualValues(t, rows, res.Rows, "rounds end on entry boundaries past the cap")
	}
	res, err := e.tr.TierTable(ctx, "db", "ap")
	require.NoError(t, err)
	require.Zero(t, res.Rows)
}

// createTable creates db.<name> (id BIGINT, v STRING): a primary-key table
// on id with that many buckets, or an append table when buckets is 0.
func createTable(t *testing.T, e *env, name string, buckets int) {
	t.Helper()
	require.NoError(t, e.ls.CreateDatabase(t.Context(), "db", true))
	sc := paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: mustType(t, "BIGINT")}, {Name: "v", Type: mustType(t, "STRING")}}}
	if buckets > 0 {
		sc.PrimaryKeys = []string{"id"}
		sc.Options = map[string]string{"bucket": fmt.Sprint(buckets)}
	}
	require.NoError(t, e.ls.CreateTable(context.Background(), "db", name, sc, false))
}

// TestAppendTablesAreCompacted: rounds into an append table add a file per
// bucket each; once five are small, they are rewritten into one (a COMPACT
// snapshot that keeps the offsets) and every row stays exactly once.
func TestAppendTablesAreCompacted(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	var compacted int64
	for round := 0; round < 7; round++ {
		rec := batch([]int64{int64(round), int64(round)}, []string{"a", "b"})
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
		res, err := e.tr.TierTable(ctx, "db", "ap")
		require.NoError(t, err)
		if res.Compacted > 0 {
			compacted = res.Compacted
		}
	}
	require.Positive(t, compacted)
	tbl := mustTable(t, e, "ap")
	snap, err := tbl.Snapshot(ctx, compacted)
	require.NoError(t, err)
	require.Equal(t, "COMPACT", snap.CommitKind)
	require.Len(t, scan(t, e, "ap", false), 14)
	require.Len(t, scan(t, e, "ap", true), 14)
	latest, err := tbl.LatestSnapshot(ctx)
	require.NoError(t, err)
	offs, err := lakestream.LakeOffsets(ctx, tbl, latest)
	require.NoError(t, err)
	require.Equal(t, int64(14), offs.Of(0), "the offsets survive the compaction")
}
