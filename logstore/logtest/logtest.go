// Package logtest is the conformance suite of logstore.Log: the behaviour
// flightd relies on, run against every log (the Badger store in package
// logstore, the Kafka log in package kafkalog) with the same tests and a
// randomized test against a simple model.
package logtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/logstore"
)

// Harness opens logs for the suite.
type Harness struct {
	// Open opens the log kept in the place named by dir, creating it when
	// new. Opening the same dir again (after Close) must find what was
	// written there.
	Open func(t *testing.T, dir string) logstore.Log
	// LargeEntry is a payload size that the log must split or store
	// specially (e.g. larger than one Kafka record).
	LargeEntry int
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("AppendRead", func(t *testing.T) { testAppendRead(t, h) })
	t.Run("AtomicMultiBucketCut", func(t *testing.T) { testAtomicCut(t, h) })
	t.Run("ConcurrentAppendsDense", func(t *testing.T) { testConcurrent(t, h) })
	t.Run("TruncateKeepsHighWatermark", func(t *testing.T) { testTruncate(t, h) })
	t.Run("ReopenRecovers", func(t *testing.T) { testReopen(t, h) })
	t.Run("DropTable", func(t *testing.T) { testDrop(t, h) })
	t.Run("LargeEntry", func(t *testing.T) { testLarge(t, h) })
	t.Run("InvalidEntry", func(t *testing.T) { testInvalid(t, h) })
	t.Run("RandomAgainstModel", func(t *testing.T) { testModel(t, h) })
}

func payload(b logstore.Bucket, base, rows int64) []byte {
	return fmt.Appendf(nil, "%s/%d@%d+%d", b.Table, b.Bucket, base, rows)
}

type got struct {
	base, rows int64
	payload    string
}

func readAll(t *testing.T, l logstore.Log, b logstore.Bucket, from, to int64) []got {
	t.Helper()
	var out []got
	require.NoError(t, l.Read(context.Background(), b, from, to, func(base, rows int64, p []byte) error {
		out = append(out, got{base, rows, string(p)})
		return nil
	}))
	return out
}

func testAppendRead(t *testing.T, h Harness) {
	ctx := context.Background()
	l := h.Open(t, t.TempDir())
	defer l.Close()
	b := logstore.Bucket{Table: "t1", Bucket: 0}
	adv := l.Advanced()
	var want []got
	for i, rows := range []int64{3, 1, 5} {
		base := int64(0)
		if i > 0 {
			base = want[i-1].base + want[i-1].rows
		}
		bases, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: rows, Payload: payload(b, base, rows)}})
		require.NoError(t, err)
		require.Equal(t, []int64{base}, bases)
		want = append(want, got{base, rows, string(payload(b, base, rows))})
	}
	select {
	case <-adv:
	default:
		t.Fatal("Advanced was not closed by an append")
	}
	require.EqualValues(t, 9, l.HighWatermark(b))
	require.Equal(t, map[int32]int64{0: 9}, l.HighWatermarks("t1"))
	require.Equal(t, []int32{0}, l.Buckets("t1"))
	require.Empty(t, l.HighWatermarks("other"))
	require.Equal(t, want, readAll(t, l, b, 0, 100), "to is clamped to the high watermark")
	require.Equal(t, want[1:2], readAll(t, l, b, 3, 4))
	require.Equal(t, want[0:2], readAll(t, l, b, 2, 4), "entries overlapping the range, whole")
	require.Equal(t, want[2:], readAll(t, l, b, 8, 9))
	require.Empty(t, readAll(t, l, b, 9, 20))
	stop := errors.New("stop")
	n := 0
	err := l.Read(ctx, b, 0, 9, func(int64, int64, []byte) error { n++; return stop })
	require.ErrorIs(t, err, stop, "fn's error is returned as is")
	require.Equal(t, 1, n)
}

func testAtomicCut(t *testing.T, h Harness) {
	ctx := context.Background()
	l := h.Open(t, t.TempDir())
	defer l.Close()
	const writers, per = 4, 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	var bad error
	var once sync.Once
	go func() { // readers: every cut holds each append in all its buckets or none
		for {
			select {
			case <-done:
				return
			default:
			}
			hw := l.HighWatermarks("cut")
			if hw[0] != hw[1] || hw[1] != hw[2] {
				once.Do(func() { bad = fmt.Errorf("cut %v splits an append", hw) })
			}
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < per; i++ {
				var es []logstore.Entry
				for bk := int32(0); bk < 3; bk++ {
					b := logstore.Bucket{Table: "cut", Bucket: bk}
					es = append(es, logstore.Entry{Bucket: b, Rows: 2, Payload: []byte{byte(w), byte(i)}})
				}
				if _, err := l.Append(ctx, es); err != nil {
					once.Do(func() { bad = err })
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	require.NoError(t, bad)
	require.Equal(t, map[int32]int64{0: 2 * writers * per, 1: 2 * writers * per, 2: 2 * writers * per}, l.HighWatermarks("cut"))
	// The same append's entries sit at the same offsets in each bucket.
	var first []got
	for bk := int32(0); bk < 3; bk++ {
		g := readAll(t, l, logstore.Bucket{Table: "cut", Bucket: bk}, 0, 1<<40)
		require.Len(t, g, writers*per)
		if bk == 0 {
			first = g
		} else {
			require.Equal(t, first, g)
		}
	}
}

func testConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	l := h.Open(t, t.TempDir())
	defer l.Close()
	b := logstore.Bucket{Table: "conc", Bucket: 1}
	const writers, per = 8, 25
	type res struct {
		base, rows int64
		p          string
	}
	out := make(chan res, writers*per)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < per; i++ {
				rows := int64(1 + (w+i)%4)
				p := fmt.Sprintf("w%d-%d", w, i)
				wait, err := l.AppendAsync(ctx, []logstore.Entry{{Bucket: b, Rows: rows, Payload: []byte(p)}})
				require.NoError(t, err)
				bases, err := wait()
				require.NoError(t, err)
				out <- res{bases[0], rows, p}
			}
		})
	}
	wg.Wait()
	close(out)
	byBase := map[int64]res{}
	var total int64
	for r := range out {
		byBase[r.base] = r
		total += r.rows
	}
	require.Equal(t, total, l.HighWatermark(b))
	g := readAll(t, l, b, 0, total)
	require.Len(t, g, writers*per)
	next := int64(0)
	for _, e := range g {
		require.Equal(t, next, e.base, "entries are dense")
		r := byBase[e.base]
		require.Equal(t, r.p, e.payload)
		require.Equal(t, r.rows, e.rows)
		next += e.rows
	}
}

func testTruncate(t *testing.T, h Harness) {
	ctx := context.Background()
	l := h.Open(t, t.TempDir())
	defer l.Close()
	b := logstore.Bucket{Table: "tr", Bucket: 0}
	for i := 0; i < 10; i++ { // entries of 10 rows: [0,10), [10,20), ...
		_, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 10, Payload: payload(b, int64(10*i), 10)}})
		require.NoError(t, err)
	}
	require.NoError(t, l.Truncate(ctx, b, 35))
	require.EqualValues(t, 30, l.Start(b), "the entry holding 35 stays")
	g := readAll(t, l, b, 30, 100)
	require.Len(t, g, 7)
	require.EqualValues(t, 30, g[0].base)
	err := l.Read(ctx, b, 29, 100, func(int64, int64, []byte) error { return nil })
	require.ErrorIs(t, err, logstore.ErrTruncated)
	require.NoError(t, l.Truncate(ctx, b, 20), "below the start: nothing")
	require.EqualValues(t, 30, l.Start(b))
	require.NoError(t, l.Truncate(ctx, b, 1000))
	require.EqualValues(t, 100, l.HighWatermark(b), "the high watermark survives truncation")
	require.LessOrEqual(t, l.Start(b), int64(100))
	require.GreaterOrEqual(t, l.Start(b), int64(90))
	bases, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1, Payload: payload(b, 100, 1)}})
	require.NoError(t, err)
	require.Equal(t, []int64{100}, bases, "appends go on from the high watermark")
}

func testReopen(t *testing.T, h Harness) {
	ctx := context.Background()
	dir := t.TempDir()
	l := h.Open(t, dir)
	var want []got
	b0, b1 := logstore.Bucket{Table: "re", Bucket: 0}, logstore.Bucket{Table: "re", Bucket: 1}
	for i := int64(0); i < 20; i++ {
		bases, err := l.Append(ctx, []logstore.Entry{
			{Bucket: b0, Rows: 3, Payload: payload(b0, 3*i, 3)},
			{Bucket: b1, Rows: 1, Payload: payload(b1, i, 1)},
		})
		require.NoError(t, err)
		require.Equal(t, []int64{3 * i, i}, bases)
		want = append(want, got{3 * i, 3, string(payload(b0, 3*i, 3))})
	}
	require.NoError(t, l.Truncate(ctx, b0, 12))
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Read(ctx, b0, 0, 10, func(int64, int64, []byte) error { return nil }), logstore.ErrClosed)

	l = h.Open(t, dir)
	defer l.Close()
	require.Equal(t, map[int32]int64{0: 60, 1: 20}, l.HighWatermarks("re"))
	require.EqualValues(t, 12, l.Start(b0))
	require.Equal(t, want[4:], readAll(t, l, b0, 12, 60))
	require.Equal(t, want[10:11], readAll(t, l, b0, 31, 32), "a read in the middle after reopening")
	bases, err := l.Append(ctx, []logstore.Entry{{Bucket: b0, Rows: 2, Payload: payload(b0, 60, 2)}})
	require.NoError(t, err)
	require.Equal(t, []int64{60}, bases)
}

func testDrop(t *testing.T, h Harness) {
	ctx := context.Background()
	dir := t.TempDir()
	l := h.Open(t, dir)
	b := logstore.Bucket{Table: "dropme", Bucket: 0}
	keep := logstore.Bucket{Table: "keep", Bucket: 0}
	_, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 5, Payload: []byte("x")}, {Bucket: keep, Rows: 1, Payload: []byte("k")}})
	require.NoError(t, err)
	adv := l.Advanced()
	require.NoError(t, l.DropTable(ctx, "dropme"))
	select {
	case <-adv:
	default:
		t.Fatal("Advanced was not closed by DropTable")
	}
	require.Empty(t, l.HighWatermarks("dropme"))
	require.Empty(t, l.Buckets("dropme"))
	require.NoError(t, l.DropTable(ctx, "never-was"))
	require.NoError(t, l.Close())
	l = h.Open(t, dir)
	defer l.Close()
	require.Empty(t, l.HighWatermarks("dropme"), "a dropped table stays dropped")
	require.EqualValues(t, 1, l.HighWatermark(keep))
}

func testLarge(t *testing.T, h Harness) {
	ctx := context.Background()
	dir := t.TempDir()
	l := h.Open(t, dir)
	b := logstore.Bucket{Table: "big", Bucket: 2}
	p := make([]byte, h.LargeEntry)
	for i := range p {
		p[i] = byte(i * 7)
	}
	_, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1000, Payload: p}, {Bucket: b, Rows: 1, Payload: []byte("small")}})
	require.NoError(t, err)
	check := func(l logstore.Log) {
		var ps [][]byte
		require.NoError(t, l.Read(ctx, b, 0, 2000, func(_, _ int64, q []byte) error {
			ps = append(ps, bytes.Clone(q))
			return nil
		}))
		require.Len(t, ps, 2)
		require.True(t, bytes.Equal(p, ps[0]), "the large payload reads back whole")
		require.Equal(t, "small", string(ps[1]))
	}
	check(l)
	require.NoError(t, l.Close())
	l = h.Open(t, dir)
	defer l.Close()
	check(l)
}

func testInvalid(t *testing.T, h Harness) {
	l := h.Open(t, t.TempDir())
	defer l.Close()
	_, err := l.Append(context.Background(), []logstore.Entry{{Bucket: logstore.Bucket{Table: "inv"}, Rows: 0, Payload: []byte("x")}})
	require.ErrorIs(t, err, logstore.ErrInvalidEntry)
	require.Zero(t, l.HighWatermark(logstore.Bucket{Table: "inv"}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.Append(ctx, []logstore.Entry{{Bucket: logstore.Bucket{Table: "inv"}, Rows: 1, Payload: []byte("x")}})
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, l.HighWatermark(logstore.Bucket{Table: "inv"}), "a cancelled append writes nothing")
}

// testModel runs random appends (one or several buckets), reads, truncations
// and reopens against a model: per bucket, the list of entries appended.
func testModel(t *testing.T, h Harness) {
	ctx := context.Background()
	seed := rand.Uint64()
	if v, err := strconv.ParseUint(os.Getenv("FLIGHTD_LOGTEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (replay with FLIGHTD_LOGTEST_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	l := h.Open(t, dir)
	defer func() { l.Close() }()
	type entry struct {
		base, rows int64
		p          string
	}
	model := map[logstore.Bucket][]entry{}
	start := map[logstore.Bucket]int64{}
	hw := func(b logstore.Bucket) int64 {
		es := model[b]
		if len(es) == 0 {
			return 0
		}
		return es[len(es)-1].base + es[len(es)-1].rows
	}
	bk := func() logstore.Bucket {
		return logstore.Bucket{Table: []string{"ma", "mb"}[rng.IntN(2)], Bucket: int32(rng.IntN(3))}
	}
	for step := 0; step < 120; step++ {
		switch op := rng.IntN(10); {
		case op < 5: // append to 1..3 buckets
			n := 1 + rng.IntN(3)
			var es []logstore.Entry
			next := map[logstore.Bucket]int64{}
			var want []int64
			for i := 0; i < n; i++ {
				b := bk()
				if _, ok := next[b]; !ok {
					next[b] = hw(b)
				}
				rows := int64(1 + rng.IntN(50))
				p := fmt.Sprintf("s%d-%d", step, i)
				es = append(es, logstore.Entry{Bucket: b, Rows: rows, Payload: []byte(p)})
				want = append(want, next[b])
				model[b] = append(model[b], entry{next[b], rows, p})
				next[b] += rows
			}
			bases, err := l.Append(ctx, es)
			require.NoError(t, err, "step %d", step)
			require.Equal(t, want, bases, "step %d", step)
		case op < 8: // read a random range
			b := bk()
			h := hw(b)
			from := start[b] + rng.Int64N(max(h-start[b], 0)+1)
			to := from + rng.Int64N(100)
			var want []got
			for _, e := range model[b] {
				if from < min(to, h) && e.base+e.rows > from && e.base < min(to, h) {
					want = append(want, got{e.base, e.rows, e.p})
				}
			}
			require.Equal(t, want, readAll(t, l, b, from, to), "step %d: read %v [%d,%d)", step, b, from, to)
		case op < 9: // truncate
			b := bk()
			below := rng.Int64N(hw(b) + 1)
			require.NoError(t, l.Truncate(ctx, b, below))
			s := l.Start(b)
			require.GreaterOrEqual(t, s, start[b], "step %d: the start never moves back", step)
			require.LessOrEqual(t, s, max(below, start[b]), "step %d: nothing at or above below is deleted", step)
			start[b] = s
		default: // reopen
			require.NoError(t, l.Close())
			l = h.Open(t, dir)
		}
		for b := range model {
			require.Equal(t, hw(b), l.HighWatermark(b), "step %d: %v", step, b)
			require.Equal(t, start[b], l.Start(b), "step %d: start of %v", step, b)
		}
	}
}
