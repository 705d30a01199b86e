package lakestream_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
	"github.com/flightd/flightd/tiering"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized changelog test (0 = time based)")

type env struct {
	dir string
	cat *lake.Catalog
	log *logstore.Store
	ls  *lakestream.Service
	tr  *tiering.Service
}

func openEnv(tb testing.TB, dir string, maxRows int64) *env {
	tb.Helper()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(tb, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(tb, err)
	ls := lakestream.New(cat, log, lakestream.Options{})
	e := &env{dir: dir, cat: cat, log: log, ls: ls, tr: tiering.New(ls, tiering.Options{
		MaxRowsPerRound: maxRows,
		CompactMinFiles: 3,
		Expire:          lake.ExpireOptions{RetainMin: 1, RetainMax: 3, OlderThan: time.Millisecond},
	})}
	tb.Cleanup(func() { log.Close() })
	return e
}

func (e *env) reopen(tb testing.TB, maxRows int64) *env {
	require.NoError(tb, e.log.Close())
	return openEnv(tb, e.dir, maxRows)
}

// createTable creates db.<name> (id BIGINT, v STRING): a primary-key table
// on id with that many buckets, or an append table when buckets is 0.
func createTable(tb testing.TB, e *env, name string, buckets int) {
	tb.Helper()
	require.NoError(tb, e.ls.CreateDatabase(tb.Context(), "db", true))
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(tb, err)
	str, err := paimontype.ParseType("STRING")
	require.NoError(tb, err)
	sc := paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}, {Name: "v", Type: str}}}
	if buckets > 0 {
		sc.PrimaryKeys = []string{"id"}
		sc.Options = map[string]string{"bucket": fmt.Sprint(buckets)}
	}
	require.NoError(tb, e.ls.CreateTable(context.Background(), "db", name, sc, false))
}

var dataSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func dataBatch(ids []int64, vals []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, dataSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

// withKinds adds the _rowkind column to a data batch.
func withKinds(rec arrow.RecordBatch, kinds []string) arrow.RecordBatch {
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	sb.AppendValues(kinds, nil)
	k := sb.NewArray()
	defer k.Release()
	fields := append(rec.Schema().Fields(), arrow.Field{Name: lakestream.ChangeKindColumn, Type: arrow.BinaryTypes.String})
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), append(rec.Columns(), k), rec.NumRows())
}

// change is one changelog row; at is the commit time (ms), checked against
// [lo, hi] when the model knows them.
type change struct {
	kind   string
	offset int64
	bucket int32
	id     int64
	v      string
}

type timedChange struct {
	change
	lo, hi int64 // bounds of the write's acknowledgement time (ms)
}

func readChangelog(tb testing.TB, e *env, table string) ([]change, []int64) {
	tb.Helper()
	r, err := e.ls.Changelog(context.Background(), "db", table)
	require.NoError(tb, err)
	defer r.Release()
	want, err := e.ls.ChangelogSchema(tb.Context(), "db", table)
	require.NoError(tb, err)
	require.True(tb, r.Schema().Equal(want))
	var out []change
	var ats []int64
	for r.Next() {
		rec := r.RecordBatch()
		require.True(tb, rec.Schema().Equal(want))
		kinds := rec.Column(0).(*array.String)
		offs := rec.Column(1).(*array.Int64)
		bks := rec.Column(2).(*array.Int32)
		ts := rec.Column(3).(*array.Timestamp)
		ids := rec.Column(4).(*array.Int64)
		vs := rec.Column(5).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			require.True(tb, ts.IsValid(i), "every log entry carries its write time")
			out = append(out, change{kinds.Value(i), offs.Value(i), bks.Value(i), ids.Value(i), vs.Value(i)})
			ats = append(ats, int64(ts.Value(i)))
		}
	}
	require.NoError(tb, r.Err())
	return out, ats
}

// model applies writes to a map and records the changelog they make, per
// bucket of the current log, from offset 0.
type model struct {
	state  map[int64]string
	next   map[int32]int64
	events map[int32][]timedChange
}

func newModel() *model {
	return &model{state: map[int64]string{}, next: map[int32]int64{}, events: map[int32][]timedChange{}}
}

// newLog starts a new log (the table's log was switched off and on): the
// state stays, offsets start at 0.
func (m *model) newLog() {
	m.next = map[int32]int64{}
	m.events = map[int32][]timedChange{}
}

func (m *model) apply(ids []int64, vals, kinds []string, buckets []int32, lo, hi int64) {
	for i, id := range ids {
		b := buckets[i]
		off := m.next[b]
		m.next[b]++
		old, had := m.state[id]
		add := func(kind string, v string) {
			m.events[b] = append(m.events[b], timedChange{change{kind, off, b, id, v}, lo, hi})
		}
		if kinds[i] == "+I" || kinds[i] == "+U" {
			if had {
				add("-U", old)
				add("+U", vals[i])
			} else {
				add("+I", vals[i])
			}
			m.state[id] = vals[i]
		} else {
			if had {
				add("-D", old)
			}
			delete(m.state, id)
		}
	}
}

// expect returns the model's changelog from each bucket's log start.
func (m *model) expect(e *env, tableID string, buckets int) []timedChange {
	var out []timedChange
	for b := int32(0); b < int32(buckets); b++ {
		start := e.log.Start(logstore.Bucket{Table: tableID, Bucket: b})
		for _, c := range m.events[b] {
			if c.offset >= start {
				out = append(out, c)
			}
		}
	}
	return out
}

func check(tb testing.TB, e *env, m *model, buckets int, msg string) {
	tb.Helper()
	tbl, err := e.ls.Table(tb.Context(), "db", "pk")
	require.NoError(tb, err)
	want := m.expect(e, lakestream.TableID(tbl), buckets)
	got, ats := readChangelog(tb, e, "pk")
	plain := make([]change, len(want))
	for i, w := range want {
		plain[i] = w.change
	}
	if len(plain) == 0 {
		plain = nil
	}
	require.Equal(tb, plain, got, msg)
	for i, w := range want {
		require.True(tb, ats[i] >= w.lo && ats[i] <= w.hi, "%s: row %d commit time %d not in [%d, %d]", msg, i, ats[i], w.lo, w.hi)
	}
	require.Zero(tb, e.ls.OldestPinned(lakestream.TableID(tbl)), "%s: the read unpinned its snapshot", msg)
}

// randomWrite is a batch of 1-30 rows over 24 keys: upserts, CDC rows of
// every kind, or deletes (mode 0, 1, 2); values name the step and row.
func randomWrite(rng *rand.Rand, step int) (ids []int64, vals, kinds []string, mode int) {
	n := 1 + rng.IntN(30)
	ids, vals, kinds = make([]int64, n), make([]string, n), make([]string, n)
	mode = rng.IntN(3)
	for i := range ids {
		ids[i] = rng.Int64N(24)
		vals[i] = fmt.Sprintf("s%d-%d", step, i)
		switch mode {
		case 0:
			kinds[i] = "+I"
		case 1:
			kinds[i] = []string{"+I", "+U", "-U", "-D"}[rng.IntN(4)]
		default:
			kinds[i] = "-D"
		}
	}
	return ids, vals, kinds, mode
}

// TestChangelogModel drives a real service with random upsert, delete and
// CDC batches over a small key space, tiering rounds (capped, so rounds
// commit prefixes; compaction every 3 files), log retention with snapshot
// expiry (so the read starts at a lake snapshot and before-images come
// from the lake), restarts (empty log cache) and switching the log off and
// on (a new log anchored on a non-empty lake), and compares the changelog
// after every step with a model that applies the same writes to a map.
func TestChangelogModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	ctx := context.Background()
	maxRows := int64(10 + rng.IntN(60))
	e := openEnv(t, t.TempDir(), maxRows)
	buckets := 1 + rng.IntN(4)
	createTable(t, e, "pk", buckets)
	m := newModel()
	fromLake := 0 // reads that started at a lake snapshot
	defer lakestream.SetChangelogHook(func(snap int64) {
		if snap > 0 {
			fromLake++
		}
	})()
	for step := 0; step < 80; step++ {
		msg := fmt.Sprintf("step %d seed %d", step, seed)
		switch op := rng.IntN(20); {
		case op < 11:
			ids, vals, kinds, mode := randomWrite(rng, step)
			data := dataBatch(ids, vals)
			tbl, err := e.ls.Table(ctx, "db", "pk")
			require.NoError(t, err)
			bks, err := tbl.Buckets(data)
			require.NoError(t, err)
			rec := data
			if mode != 0 || rng.IntN(2) == 0 {
				rec = withKinds(data, kinds)
				data.Release()
			}
			lo := time.Now().UnixMilli()
			_, err = e.ls.Write(ctx, "db", "pk", rec)
			hi := time.Now().UnixMilli()
			rec.Release()
			require.NoError(t, err, msg)
			m.apply(ids, vals, kinds, bks, lo, hi)
		case op < 16:
			_, err := e.tr.TierTable(ctx, "db", "pk")
			require.NoError(t, err, msg)
			if rng.IntN(2) == 0 { // retention that makes every snapshot old
				later := time.Now().Add(48 * time.Hour)
				_, err := e.tr.CollectTable(ctx, "db", "pk", later)
				require.NoError(t, err, msg)
				_, err = e.tr.ExpireTable(ctx, "db", "pk", later)
				require.NoError(t, err, msg)
			}
		case op < 18:
			e = e.reopen(t, maxRows)
		default:
			require.NoError(t, e.ls.SetRealtime(ctx, "db", "pk", false, e.tr.Drain), msg)
			require.NoError(t, e.ls.SetRealtime(ctx, "db", "pk", true, nil), msg)
			m.newLog()
		}
		check(t, e, m, buckets, msg)
	}
	t.Logf("%d of 80 reads started at a lake snapshot", fromLake)
	require.Positive(t, fromLake)
}

// TestChangelogBeforeImagesFromLake: once retention has moved the log
// start, the before-images of updates and deletes come from the lake
// snapshot; a delete of an absent key gives nothing; -U and +U share an
// offset and are adjacent.
func TestChangelogBeforeImagesFromLake(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	ctx := context.Background()
	createTable(t, e, "pk", 1)
	write := func(ids []int64, vals, kinds []string) {
		t.Helper()
		rec := withKinds(dataBatch(ids, vals), kinds)
		_, err := e.ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
	}
	write([]int64{1, 2, 3}, []string{"a", "b", "c"}, []string{"+I", "+I", "+I"})
	write([]int64{9}, []string{"x"}, []string{"-D"})
	got, _ := readChangelog(t, e, "pk")
	require.Equal(t, []change{{"+I", 0, 0, 1, "a"}, {"+I", 1, 0, 2, "b"}, {"+I", 2, 0, 3, "c"}}, got,
		"a delete of an absent key gives nothing")

	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	later := time.Now().Add(48 * time.Hour)
	_, err := e.tr.CollectTable(ctx, "db", "pk", later)
	require.NoError(t, err)
	_, err = e.tr.ExpireTable(ctx, "db", "pk", later)
	require.NoError(t, err)
	tbl, err := e.ls.Table(ctx, "db", "pk")
	require.NoError(t, err)
	require.EqualValues(t, 4, e.log.Start(logstore.Bucket{Table: lakestream.TableID(tbl), Bucket: 0}))
	got, _ = readChangelog(t, e, "pk")
	require.Empty(t, got, "nothing retained after the truncation")

	write([]int64{1, 2, 4, 5, 4}, []string{"a2", "payload", "d", "gone", "d2"}, []string{"+U", "-D", "+I", "-U", "+U"})
	e = e.reopen(t, 1000) // the log cache is empty now
	got, _ = readChangelog(t, e, "pk")
	require.Equal(t, []change{
		{"-U", 4, 0, 1, "a"}, {"+U", 4, 0, 1, "a2"}, // the old row from the lake
		{"-D", 5, 0, 2, "b"}, // the stored row, not the delete's payload
		{"+I", 6, 0, 4, "d"},
		// 7: -U of absent key 5: nothing
		{"-U", 8, 0, 4, "d"}, {"+U", 8, 0, 4, "d2"},
	}, got)
}

func TestChangelogAppendTable(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	write := func(ids ...int64) {
		vals := make([]string, len(ids))
		for i, id := range ids {
			vals[i] = fmt.Sprint("v", id)
		}
		rec := dataBatch(ids, vals)
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
	}
	write(1, 1, 2)
	require.NoError(t, e.tr.Drain(ctx, "db", "ap"))
	write(1)
	got, _ := readChangelog(t, e, "ap")
	require.Equal(t, []change{{"+I", 0, 0, 1, "v1"}, {"+I", 1, 0, 1, "v1"}, {"+I", 2, 0, 2, "v2"}, {"+I", 3, 0, 1, "v1"}}, got)
	later := time.Now().Add(48 * time.Hour)
	_, err := e.tr.CollectTable(ctx, "db", "ap", later)
	require.NoError(t, err)
	got, _ = readChangelog(t, e, "ap")
	require.Equal(t, []change{{"+I", 3, 0, 1, "v1"}}, got, "from the log start on")
}

func TestChangelogNeedsTheLog(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	ctx := context.Background()
	createTable(t, e, "pk", 2)
	require.NoError(t, e.ls.SetRealtime(ctx, "db", "pk", false, e.tr.Drain))
	_, err := e.ls.Changelog(ctx, "db", "pk")
	require.ErrorIs(t, err, lakestream.ErrNotRealtime)
	_, err = e.ls.Changelog(ctx, "db", "nope")
	require.ErrorIs(t, err, lake.ErrTableNotFound)
}

// TestChangelogStartsOverWhenRetentionMoves truncates the log under a read
// (between choosing its start and reading the log): the read starts over
// at the new start; a read whose start keeps moving fails clearly.
func TestChangelogStartsOverWhenRetentionMoves(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	ctx := context.Background()
	createTable(t, e, "pk", 1)
	tbl, err := e.ls.Table(ctx, "db", "pk")
	require.NoError(t, err)
	id := lakestream.TableID(tbl)
	n := 0
	write := func() {
		t.Helper()
		rec := dataBatch([]int64{1}, []string{fmt.Sprint("v", n)})
		n++
		_, err := e.ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
	}
	retain := func() {
		t.Helper()
		later := time.Now().Add(48 * time.Hour)
		_, err := e.tr.CollectTable(ctx, "db", "pk", later)
		require.NoError(t, err)
		_, err = e.tr.ExpireTable(ctx, "db", "pk", later)
		require.NoError(t, err)
	}
	write()
	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	retain() // log starts at 1, snapshot of offset 1 anchors
	write()
	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	write()

	var starts []int64
	restore := lakestream.SetChangelogHook(func(snap int64) {
		starts = append(starts, snap)
		require.Equal(t, snap, e.ls.OldestPinned(id), "the start snapshot is pinned")
		if len(starts) == 1 {
			retain() // truncates the log below 2, where the read was to start
			_, err := tbl.Snapshot(ctx, snap)
			require.NoError(t, err, "the pinned snapshot survives expiry")
		}
	})
	defer restore()
	got, _ := readChangelog(t, e, "pk")
	require.Len(t, starts, 2)
	require.Less(t, starts[0], starts[1])
	require.Equal(t, []change{{"-U", 2, 0, 1, "v1"}, {"+U", 2, 0, 1, "v2"}}, got)

	// A start that moves on every attempt.
	starts = nil
	restore2 := lakestream.SetChangelogHook(func(int64) {
		starts = append(starts, 0)
		write()
		require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
		retain()
	})
	defer restore2()
	write()
	require.NoError(t, e.tr.Drain(ctx, "db", "pk"))
	write()
	_, err = e.ls.Changelog(ctx, "db", "pk")
	require.ErrorIs(t, err, logstore.ErrTruncated)
	require.ErrorContains(t, err, "moved 3 times")
	require.Len(t, starts, 3)
}
