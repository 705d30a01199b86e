package lakestream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lakestream"
)

// consumer applies a stream's rows to a map, checking that each row is a
// valid transition of the state it has (no gap, no duplicate), and keeps
// the resume position: the last _log_offset of each bucket.
type consumer struct {
	tb      testing.TB
	state   map[int64]string
	bucket  map[int64]int32
	pos     map[int32]int64
	last    map[int32]int64 // the last change offset of each bucket
	pending *int64          // the key of a -U waiting for its +U
	marked  bool            // the empty batch after the current rows arrived
	changes int
	current int
}

func newConsumer(tb testing.TB) *consumer {
	return &consumer{tb: tb, state: map[int64]string{}, bucket: map[int64]int32{}, pos: map[int32]int64{}, last: map[int32]int64{}}
}

func (c *consumer) apply(rec arrow.RecordBatch, msg string) {
	tb := c.tb
	tb.Helper()
	if rec.NumRows() == 0 {
		c.marked = true
		return
	}
	kinds := rec.Column(0).(*array.String)
	offs := rec.Column(1).(*array.Int64)
	bks := rec.Column(2).(*array.Int32)
	ts := rec.Column(3).(*array.Timestamp)
	ids := rec.Column(4).(*array.Int64)
	vs := rec.Column(5).(*array.String)
	for i := 0; i < int(rec.NumRows()); i++ {
		k, off, b, id, v := kinds.Value(i), offs.Value(i), bks.Value(i), ids.Value(i), vs.Value(i)
		cur, had := c.state[id]
		if c.marked {
			require.True(tb, ts.IsValid(i), "%s: a change carries its write time", msg)
			require.GreaterOrEqual(tb, off, c.last[b], "%s: bucket %d goes back from %d to %d", msg, b, c.last[b], off)
			c.last[b] = off
			c.changes++
		} else {
			require.False(tb, ts.IsValid(i), "%s: a current row has no write time", msg)
			require.Equal(tb, "+I", k, msg)
			c.last[b] = off
			c.current++
		}
		if c.pending != nil {
			require.Equal(tb, "+U", k, "%s: -U of %d not followed by its +U", msg, *c.pending)
			require.Equal(tb, *c.pending, id, msg)
			c.pending = nil
		}
		switch k {
		case "+I":
			require.False(tb, had, "%s: +I of key %d that is present (%q) at bucket %d offset %d", msg, id, cur, b, off)
			c.state[id], c.bucket[id] = v, b
		case "-U", "-D":
			require.True(tb, had, "%s: %s of absent key %d at bucket %d offset %d", msg, k, id, b, off)
			require.Equal(tb, cur, v, "%s: %s of key %d shows another image", msg, k, id)
			delete(c.state, id)
			if k == "-U" {
				idc := id
				c.pending = &idc
			}
		case "+U":
			require.False(tb, had, "%s: +U without -U of key %d", msg, id)
			c.state[id], c.bucket[id] = v, b
		default:
			tb.Fatalf("%s: change type %q", msg, k)
		}
		c.pos[b] = off
		if debugStream {
			tb.Logf("%s: got %s %d b%d id %d %s", msg, k, off, b, id, v)
		}
	}
}

var debugStream = false

// forget drops what the consumer knows (a stream starting over).
func (c *consumer) forget() {
	c.state, c.bucket, c.pos, c.last = map[int64]string{}, map[int64]int32{}, map[int32]int64{}, map[int32]int64{}
	c.pending, c.marked = nil, false
}

// resume is the position to continue from, or nil when the consumer
// must start over (the current rows were not all read).
func (c *consumer) resume() map[int32]int64 {
	if !c.marked || c.pending != nil {
		return nil
	}
	out := map[int32]int64{}
	for b, p := range c.pos {
		out[b] = p
	}
	return out
}

// TestStreamModel drives a real service with random upserts, deletes and
// CDC batches, tiering rounds (capped, with compaction), log retention with
// snapshot expiry, restarts, and a stream reader that reads what is there,
// stops mid-way, and resumes from its position (or starts over when log
// retention passed it). The consumer checks every row against the state it
// built from the rows before, and after each step the state against a model
// that applies the same writes to a map.
func TestStreamModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	ctx := context.Background()
	// Rounds of a few rows: batches of a write are cut between rounds.
	defer lakestream.SetStreamRoundRows(int64(1 + rng.IntN(16)))()
	maxRows := int64(10 + rng.IntN(60))
	e := openEnv(t, t.TempDir(), maxRows)
	buckets := 1 + rng.IntN(4)
	createTable(t, e, "pk", buckets)
	m := newModel()
	c := newConsumer(t)
	var r array.RecordReader
	open := func(msg string) {
		opts := lakestream.StreamOptions{After: c.resume()}
		if opts.After == nil {
			c.forget()
		}
		c.marked = false // buckets not named start with their current rows
		var err error
		r, err = e.ls.Stream(ctx, "db", "pk", opts)
		require.NoError(t, err, msg)
	}
	closeReader := func() {
		if r != nil {
			r.Release()
			r = nil
		}
	}
	defer closeReader()
	var resumes, restarts, behind int
	for step := 0; step < 100; step++ {
		msg := fmt.Sprintf("step %d seed %d", step, seed)
		switch op := rng.IntN(20); {
		case op < 11:
			ids, vals, kinds, _ := randomWrite(rng, step)
			data := dataBatch(ids, vals)
			tbl, err := e.ls.Table(ctx, "db", "pk")
			require.NoError(t, err)
			bks, err := tbl.Buckets(data)
			require.NoError(t, err)
			rec := withKinds(data, kinds)
			data.Release()
			_, err = e.ls.Write(ctx, "db", "pk", rec)
			rec.Release()
			require.NoError(t, err, msg)
			m.apply(ids, vals, kinds, bks, 0, 0)
			t.Logf("%s: write %v %v %v", msg, ids, kinds, bks)
		case op < 15:
			_, err := e.tr.TierTable(ctx, "db", "pk")
			require.NoError(t, err, msg)
		case op < 16 && r != nil:
			// Retention only while the reader is connected and caught up:
			// a disconnected one would rightly fall behind.
			later := time.Now().Add(48 * time.Hour)
			_, err := e.tr.CollectTable(ctx, "db", "pk", later)
			require.NoError(t, err, msg)
			_, err = e.tr.ExpireTable(ctx, "db", "pk", later)
			require.NoError(t, err, msg)
		case op < 17:
			closeReader()
			e = e.reopen(t, maxRows)
		default:
			closeReader() // the reader goes away; it comes back below
		}
		if r == nil {
			if c.resume() != nil {
				resumes++
			} else {
				restarts++
			}
			open(msg)
		}
		tbl, err := e.ls.Table(ctx, "db", "pk")
		require.NoError(t, err)
		hws := e.log.HighWatermarks(lakestream.TableID(tbl))
		t.Logf("%s: hws %v caught up %v", msg, hws, lakestream.StreamCaughtUp(r, hws))
		stopAfter := -1
		if rng.IntN(4) == 0 {
			stopAfter = rng.IntN(3) // disconnect after a few batches
		}
		for n := 0; !lakestream.StreamCaughtUp(r, hws); n++ {
			if n == stopAfter {
				closeReader()
				if c.resume() != nil {
					resumes++
				} else {
					restarts++
				}
				open(msg)
				n = -1
				stopAfter = -1
				continue
			}
			if debugStream {
				t.Logf("%s: next at %v of %v", msg, lakestream.StreamPos(r), hws)
			}
			if !r.Next() {
				err := r.Err()
				if errors.Is(err, lakestream.ErrStreamBehind) {
					behind++
					closeReader()
					c.marked = false // start over
					open(msg)
					continue
				}
				require.NoError(t, err, msg)
				t.Fatalf("%s: the stream ended", msg)
			}
			c.apply(r.RecordBatch(), msg)
		}
		require.Equal(t, m.state, c.state, msg)
	}
	t.Logf("%d changes, %d current rows, %d resumes, %d restarts, %d fell behind", c.changes, c.current, resumes, restarts, behind)
	require.Positive(t, resumes)
}

// TestStreamWakesOnWrite: a reader waiting for changes gets a write's
// rows as soon as the write is acknowledged, and ends when its context
// does.
func TestStreamWakesOnWrite(t *testing.T) {
	e := openEnv(t, t.TempDir(), 1000)
	createTable(t, e, "pk", 2)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := e.ls.Stream(ctx, "db", "pk", lakestream.StreamOptions{})
	require.NoError(t, err)
	defer r.Release()
	require.True(t, r.Next())
	require.Zero(t, r.RecordBatch().NumRows(), "the empty table's current rows end at once")
	got := make(chan string, 1)
	go func() {
		var out string
		for r.Next() {
			rec := r.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				out += fmt.Sprintf("%s %d %s;", rec.Column(0).(*array.String).Value(i), rec.Column(4).(*array.Int64).Value(i), rec.Column(5).(*array.String).Value(i))
			}
			if len(out) > 0 {
				got <- out
				out = ""
			}
		}
		close(got)
	}()
	rec := dataBatch([]int64{7}, []string{"a"})
	_, err = e.ls.Write(ctx, "db", "pk", rec)
	rec.Release()
	require.NoError(t, err)
	require.Equal(t, "+I 7 a;", <-got)
	rec = dataBatch([]int64{7}, []string{"b"})
	_, err = e.ls.Write(ctx, "db", "pk", rec)
	rec.Release()
	require.NoError(t, err)
	require.Equal(t, "-U 7 a;+U 7 b;", <-got)
	cancel()
	_, open := <-got
	require.False(t, open)
	require.ErrorIs(t, r.Err(), context.Canceled)
}

// TestStreamUnderConcurrentWritersAndTiering: two writers and a tiering
// loop (rounds capped, compaction) run while a stream reads; the reader's
// state, built only from the stream's rows, ends equal to the table, every
// row a valid transition. A final sentinel write per bucket tells the
// reader it has seen each bucket to its end.
func TestStreamUnderConcurrentWritersAndTiering(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 40)
	const buckets = 3
	createTable(t, e, "pk", buckets)
	tbl, err := e.ls.Table(ctx, "db", "pk")
	require.NoError(t, err)
	// Some rows before the stream starts, partly tiered.
	pre := dataBatch([]int64{1, 2, 3, 4, 5}, []string{"p1", "p2", "p3", "p4", "p5"})
	_, err = e.ls.Write(ctx, "db", "pk", pre)
	pre.Release()
	require.NoError(t, err)
	_, err = e.tr.TierTable(ctx, "db", "pk")
	require.NoError(t, err)

	r, err := e.ls.Stream(ctx, "db", "pk", lakestream.StreamOptions{})
	require.NoError(t, err)
	defer r.Release()

	// Sentinels: one key per bucket, above the writers' keys.
	sentinel := map[int64]bool{}
	seen := map[int32]bool{}
	for id := int64(1000); len(seen) < buckets; id++ {
		rec := dataBatch([]int64{id}, []string{"x"})
		bks, err := tbl.Buckets(rec)
		rec.Release()
		require.NoError(t, err)
		if !seen[bks[0]] {
			seen[bks[0]] = true
			sentinel[id] = true
		}
	}

	var writers, tiers sync.WaitGroup
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for step := range 60 {
				n := 1 + rng.IntN(20)
				ids := make([]int64, n)
				vals := make([]string, n)
				kinds := make([]string, n)
				for i := range ids {
					ids[i] = int64(w*100) + rng.Int64N(20) // each writer its own keys
					vals[i] = fmt.Sprintf("w%d-%d-%d", w, step, i)
					kinds[i] = []string{"+I", "+I", "-D"}[rng.IntN(3)]
				}
				rec := withKinds(dataBatch(ids, vals), kinds)
				_, err := e.ls.Write(ctx, "db", "pk", rec)
				rec.Release()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	tiers.Add(1)
	go func() {
		defer tiers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.tr.TierTable(ctx, "db", "pk"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	done := make(chan error, 1)
	c := newConsumer(t)
	go func() {
		got := 0
		for r.Next() {
			rec := r.RecordBatch()
			c.apply(rec, "concurrent")
			ids := rec.Column(4).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				if sentinel[ids.Value(i)] {
					got++
				}
			}
			if got == len(sentinel) {
				done <- nil
				return
			}
		}
		done <- r.Err()
	}()
	writers.Wait()
	var ids []int64
	var vals []string
	for id := range sentinel {
		ids, vals = append(ids, id), append(vals, "end")
	}
	rec := dataBatch(ids, vals)
	_, err = e.ls.Write(ctx, "db", "pk", rec)
	rec.Release()
	require.NoError(t, err)
	require.NoError(t, <-done)
	close(stop)
	tiers.Wait()

	want := map[int64]string{}
	sr, err := e.ls.Scan(ctx, "db", "pk", true)
	require.NoError(t, err)
	defer sr.Release()
	for sr.Next() {
		rec := sr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			want[rec.Column(0).(*array.Int64).Value(i)] = rec.Column(1).(*array.String).Value(i)
		}
	}
	require.NoError(t, sr.Err())
	require.Equal(t, want, c.state)
	t.Logf("%d changes, %d current rows", c.changes, c.current)
}

// TestStreamModelWithoutRoomForACarry: a stream whose carried key states
// outgrow their bound drops them and replays the un-tiered rows in its
// next round; with no room at all every round replays, and the model
// holds.
func TestStreamModelWithoutRoomForACarry(t *testing.T) {
	defer lakestream.SetStreamCarryMaxBytes(1)()
	TestStreamModel(t)
}
