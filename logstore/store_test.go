package logstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func newTestStore(t testing.TB, dir string, mod ...func(*Options)) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	opts := DefaultOptions()
	opts.MemTableSize = 16 << 20 // smaller arenas keep tests light
	for _, m := range mod {
		m(&opts)
	}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

type readEntry struct {
	base, rows int64
	payload    string
}

func readAll(t testing.TB, s *Store, b Bucket, from, to int64) []readEntry {
	t.Helper()
	var out []readEntry
	require.NoError(t, s.Read(context.Background(), b, from, to, func(base, rows int64, p []byte) error {
		out = append(out, readEntry{base, rows, string(p)})
		return nil
	}))
	return out
}

func TestAppendReadSlicing(t *testing.T) {
	s := newTestStore(t, "")
	ctx := context.Background()
	b := Bucket{"t1", 0}
	// Entries: [0,3) a, [3,4) b, [4,10) c.
	for _, e := range []struct {
		rows int64
		p    string
		base int64
	}{{3, "a", 0}, {1, "b", 3}, {6, "c", 4}} {
		bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: e.rows, Payload: []byte(e.p)}})
		require.NoError(t, err)
		require.Equal(t, []int64{e.base}, bases)
	}
	require.Equal(t, int64(10), s.HighWatermark(b))
	a, bb, c := readEntry{0, 3, "a"}, readEntry{3, 1, "b"}, readEntry{4, 6, "c"}
	for _, tc := range []struct {
		name     string
		from, to int64
		want     []readEntry
	}{
		{name: "all", from: 0, to: 10, want: []readEntry{a, bb, c}},
		{name: "to past hw is clamped", from: 0, to: 100, want: []readEntry{a, bb, c}},
		{name: "inside first", from: 1, to: 2, want: []readEntry{a}},
		{name: "straddles", from: 2, to: 5, want: []readEntry{a, bb, c}},
		{name: "exact entry", from: 3, to: 4, want: []readEntry{bb}},
		{name: "starts at entry end", from: 3, to: 10, want: []readEntry{bb, c}},
		{name: "last offset", from: 9, to: 10, want: []readEntry{c}},
		{name: "empty range", from: 5, to: 5, want: nil},
		{name: "at hw", from: 10, to: 20, want: nil},
		{name: "negative from", from: -5, to: 1, want: []readEntry{a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, readAll(t, s, b, tc.from, tc.to))
		})
	}
	// Unknown bucket.
	require.Equal(t, int64(0), s.HighWatermark(Bucket{"t1", 7}))
	require.Nil(t, readAll(t, s, Bucket{"nope", 0}, 0, 100))
	// fn error stops the read.
	stop := fmt.Errorf("stop")
	n := 0
	err := s.Read(ctx, b, 0, 10, func(int64, int64, []byte) error { n++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
	// Invalid entries.
	_, err = s.Append(ctx, []Entry{{Bucket: b, Rows: 0}})
	require.ErrorIs(t, err, ErrInvalidEntry)
	require.Equal(t, int64(10), s.HighWatermark(b))
}

func TestReopenRecoversHW(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	acked := map[Bucket]int64{}
	func() {
		s, err := Open(dir, DefaultOptions())
		require.NoError(t, err)
		defer func() { require.NoError(t, s.Close()) }()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 100 {
			b := Bucket{fmt.Sprintf("tbl-%d", i%3), int32(i % 4)}
			rows := 1 + rng.Int64N(50)
			bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: rows, Payload: []byte{byte(i)}}})
			require.NoError(t, err)
			require.Equal(t, acked[b], bases[0])
			acked[b] = bases[0] + rows
		}
	}()
	s := newTestStore(t, dir)
	for b, hw := range acked {
		require.Equal(t, hw, s.HighWatermark(b), "bucket %v", b)
	}
	require.Equal(t, []int32{0, 1, 2, 3}, s.Buckets("tbl-0"))
	// Appends continue at the recovered HW.
	b := Bucket{"tbl-1", 1}
	bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 1, Payload: []byte("x")}})
	require.NoError(t, err)
	require.Equal(t, acked[b], bases[0])
}

func TestAtomicMultiBucketAppend(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newTestStore(t, dir, func(o *Options) { o.MemTableSize = 4 << 20 })
	entries := []Entry{
		{Bucket: Bucket{"t", 0}, Rows: 2, Payload: []byte("a")},
		{Bucket: Bucket{"t", 1}, Rows: 3, Payload: []byte("b")},
		{Bucket: Bucket{"t", 0}, Rows: 4, Payload: []byte("c")},
		{Bucket: Bucket{"u", 0}, Rows: 1, Payload: []byte("d")},
	}
	bases, err := s.Append(ctx, entries)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 0, 2, 0}, bases)
	require.Equal(t, map[int32]int64{0: 6, 1: 3}, s.HighWatermarks("t"))
	require.Equal(t, map[int32]int64{0: 1}, s.HighWatermarks("u"))

	// An Append too large for one transaction is refused as a whole: nothing is written.
	var big []Entry
	for i := range 5000 { // 5000 small values in the LSM tree: > 15% of 4 MiB
		big = append(big, Entry{Bucket: Bucket{"t", int32(i % 2)}, Rows: 1, Payload: make([]byte, 200)})
	}
	_, err = s.Append(ctx, big)
	require.ErrorIs(t, err, ErrAppendTooLarge)
	require.Equal(t, map[int32]int64{0: 6, 1: 3}, s.HighWatermarks("t"))
	require.Equal(t, []readEntry{{0, 2, "a"}, {2, 4, "c"}}, readAll(t, s, Bucket{"t", 0}, 0, 100))
	require.Equal(t, []int32{0, 1}, s.Buckets("t"))
}

// TestConcurrentAppenders checks that concurrent writers get consecutive,
// non-overlapping offsets, that readers never see a gap below the HW, and that group
// commit shares commits.
func TestConcurrentAppenders(t *testing.T) {
	const writers, perWriter, nb = 8, 200, 3
	s := newTestStore(t, "")
	ctx := context.Background()
	type rec struct{ base, rows int64 }
	var mu sync.Mutex
	got := map[int32][]rec{}

	stop := make(chan struct{})
	var readerErr atomic.Value
	var rwg sync.WaitGroup
	for r := range nb {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			b := Bucket{"t", int32(r)}
			for {
				select {
				case <-stop:
					return
				default:
				}
				hw := s.HighWatermark(b)
				next := int64(0)
				err := s.Read(ctx, b, 0, hw, func(base, rows int64, p []byte) error {
					if base != next {
						return fmt.Errorf("gap: base %d want %d", base, next)
					}
					if want := fmt.Sprintf("rows=%d", rows); !bytes.HasPrefix(p, []byte(want)) {
						return fmt.Errorf("payload %q for %d rows", p, rows)
					}
					next = base + rows
					return nil
				})
				if err == nil && next != hw {
					err = fmt.Errorf("read ended at %d, hw %d", next, hw)
				}
				if err != nil {
					readerErr.Store(err)
					return
				}
			}
		}()
	}

	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range perWriter {
				b := Bucket{"t", int32(rng.IntN(nb))}
				rows := 1 + rng.Int64N(100)
				p := fmt.Appendf(nil, "rows=%d w=%d i=%d", rows, w, i)
				bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: rows, Payload: p}})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[b.Bucket] = append(got[b.Bucket], rec{bases[0], rows})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	if err := readerErr.Load(); err != nil {
		require.NoError(t, err.(error))
	}
	total := 0
	for bk, recs := range got {
		slices.SortFunc(recs, func(a, b rec) int { return int(a.base - b.base) })
		next := int64(0)
		for _, r := range recs {
			require.Equal(t, next, r.base, "bucket %d", bk)
			next += r.rows
		}
		require.Equal(t, next, s.HighWatermark(Bucket{"t", bk}))
		total += len(recs)
	}
	require.Equal(t, writers*perWriter, total)
	s.mu.RLock()
	commits, reqs := s.stats.commits, s.stats.requests
	s.mu.RUnlock()
	t.Logf("%d appends in %d group commits", reqs, commits)
	require.Equal(t, int64(writers*perWriter), reqs)
	require.Less(t, commits, reqs, "group commit never grouped")
}

func TestHighWatermarksConsistentCut(t *testing.T) {
	s := newTestStore(t, "")
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				rows := int64(1 + (w+i)%7)
				// Every append adds the same rows to buckets 0 and 1, and twice that to 2.
				_, err := s.Append(ctx, []Entry{
					{Bucket: Bucket{"t", 0}, Rows: rows, Payload: []byte("x")},
					{Bucket: Bucket{"t", 1}, Rows: rows, Payload: []byte("y")},
					{Bucket: Bucket{"t", 2}, Rows: rows, Payload: []byte("z")},
					{Bucket: Bucket{"t", 2}, Rows: rows, Payload: []byte("z")},
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	cuts := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
		}
		hws := s.HighWatermarks("t")
		require.Equal(t, hws[0], hws[1], "cut %v", hws)
		require.Equal(t, 2*hws[0], hws[2], "cut %v", hws)
		cuts++
	}
	close(stop)
	t.Logf("%d cuts checked, final %v", cuts, s.HighWatermarks("t"))
}

func TestTruncate(t *testing.T) {
	ctx := context.Background()
	// Entries: [0,3) [3,4) [4,10) [10,12)
	setup := func(t *testing.T, dir string) (*Store, Bucket) {
		s := newTestStore(t, dir)
		b := Bucket{"t", 3}
		for _, rows := range []int64{3, 1, 6, 2} {
			_, err := s.Append(ctx, []Entry{{Bucket: b, Rows: rows, Payload: []byte{byte(rows)}}})
			require.NoError(t, err)
		}
		return s, b
	}
	for _, tc := range []struct {
		name      string
		below     int64
		wantBases []int64 // remaining entries
		readFrom  int64   // first offset Read accepts
	}{
		{name: "zero", below: 0, wantBases: []int64{0, 3, 4, 10}, readFrom: 0},
		{name: "inside first", below: 2, wantBases: []int64{0, 3, 4, 10}, readFrom: 0},
		{name: "first end", below: 3, wantBases: []int64{3, 4, 10}, readFrom: 3},
		{name: "inside third", below: 5, wantBases: []int64{4, 10}, readFrom: 4},
		{name: "at last base", below: 10, wantBases: []int64{10}, readFrom: 10},
		{name: "at hw", below: 12, wantBases: nil, readFrom: 12},
		{name: "past hw is clamped", below: 1000, wantBases: nil, readFrom: 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, b := setup(t, dir)
			require.NoError(t, s.Truncate(ctx, b, tc.below))
			check := func(s *Store) {
				require.Equal(t, int64(12), s.HighWatermark(b))
				var bases []int64
				for _, e := range readAll(t, s, b, tc.readFrom, 100) {
					bases = append(bases, e.base)
				}
				require.Equal(t, tc.wantBases, bases)
				if tc.readFrom > 0 {
					err := s.Read(ctx, b, tc.readFrom-1, 100, func(int64, int64, []byte) error { return nil })
					require.ErrorIs(t, err, ErrTruncated)
				}
				require.Equal(t, []int32{3}, s.Buckets("t"))
			}
			check(s)
			require.NoError(t, s.Close())
			s2 := newTestStore(t, dir)
			check(s2) // the log start and HW survive a reopen, even with no entry left
			bases, err := s2.Append(ctx, []Entry{{Bucket: b, Rows: 1, Payload: []byte("n")}})
			require.NoError(t, err)
			require.Equal(t, []int64{12}, bases)
		})
	}
}

func TestCancelledContext(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := Bucket{"t", 0}
	_, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 5, Payload: []byte("x")}})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(0), s.HighWatermark(b))
	require.ErrorIs(t, s.Read(ctx, b, 0, 10, nil), context.Canceled)
	require.ErrorIs(t, s.Truncate(ctx, b, 1), context.Canceled)
	require.ErrorIs(t, s.DropTable(ctx, "t"), context.Canceled)
	// The cancelled append took no offsets.
	bases, err := s.Append(context.Background(), []Entry{{Bucket: b, Rows: 1, Payload: []byte("y")}})
	require.NoError(t, err)
	require.Equal(t, []int64{0}, bases)
	require.NoError(t, s.Close())
	s2 := newTestStore(t, dir)
	require.Equal(t, int64(1), s2.HighWatermark(b))
}

func TestCloseTwice(t *testing.T) {
	s, err := Open(t.TempDir(), DefaultOptions())
	require.NoError(t, err)
	ctx := context.Background()
	b := Bucket{"t", 0}
	_, err = s.Append(ctx, []Entry{{Bucket: b, Rows: 1, Payload: []byte("x")}})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = s.Append(ctx, []Entry{{Bucket: b, Rows: 1, Payload: []byte("x")}})
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Read(ctx, b, 0, 1, nil), ErrClosed)
	require.ErrorIs(t, s.Truncate(ctx, b, 1), ErrClosed)
	require.ErrorIs(t, s.DropTable(ctx, "t"), ErrClosed)
	require.Equal(t, int64(1), s.HighWatermark(b))
}

func TestCloseWaitsForQueuedAppends(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, DefaultOptions())
	require.NoError(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	var acked atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, err := s.Append(ctx, []Entry{{Bucket: Bucket{"t", int32(w)}, Rows: 1, Payload: []byte("x")}})
				if err != nil {
					require.ErrorIs(t, err, ErrClosed)
					return
				}
				acked.Add(1)
			}
		}()
	}
	for acked.Load() < 100 {
		_, err := s.Append(ctx, []Entry{{Bucket: Bucket{"main", 0}, Rows: 1, Payload: []byte("x")}})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	wg.Wait()
	s2 := newTestStore(t, dir)
	var total int64
	for w := range 8 {
		total += s2.HighWatermark(Bucket{"t", int32(w)})
	}
	require.Equal(t, acked.Load(), total)
}

func TestDropTable(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newTestStore(t, dir)
	for i := range 20 {
		_, err := s.Append(ctx, []Entry{
			{Bucket: Bucket{"drop", int32(i % 3)}, Rows: 2, Payload: []byte("d")},
			{Bucket: Bucket{"keep", int32(i % 2)}, Rows: 1, Payload: []byte("k")},
		})
		require.NoError(t, err)
	}
	require.NoError(t, s.Truncate(ctx, Bucket{"drop", 0}, 4))
	require.Equal(t, []int32{0, 1, 2}, s.Buckets("drop"))
	require.NoError(t, s.DropTable(ctx, "drop"))
	require.Empty(t, s.Buckets("drop"))
	require.Empty(t, s.HighWatermarks("drop"))
	require.Equal(t, int64(0), s.HighWatermark(Bucket{"drop", 1}))
	require.Equal(t, map[int32]int64{0: 10, 1: 10}, s.HighWatermarks("keep"))
	// The same table id starts a new log at 0.
	bases, err := s.Append(ctx, []Entry{{Bucket: Bucket{"drop", 1}, Rows: 5, Payload: []byte("new")}})
	require.NoError(t, err)
	require.Equal(t, []int64{0}, bases)
	require.NoError(t, s.Close())

	s2 := newTestStore(t, dir)
	require.Equal(t, []int32{1}, s2.Buckets("drop"))
	require.Equal(t, []readEntry{{0, 5, "new"}}, readAll(t, s2, Bucket{"drop", 1}, 0, 100))
	require.Equal(t, map[int32]int64{0: 10, 1: 10}, s2.HighWatermarks("keep"))
	require.Len(t, readAll(t, s2, Bucket{"keep", 0}, 0, 100), 10)
}

func TestLargePayloads(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newTestStore(t, dir)
	b := Bucket{"big", 0}
	var want []readEntry
	for i, size := range []int{1 << 20, 4 << 20, 100, 64 << 10, 64<<10 - 1, 1<<20 + 3} {
		p := bytes.Repeat([]byte{byte(i + 1)}, size)
		bases, err := s.Append(ctx, []Entry{{Bucket: b, Rows: 10000, Payload: p}})
		require.NoError(t, err)
		want = append(want, readEntry{bases[0], 10000, string(p)})
	}
	require.Equal(t, want, readAll(t, s, b, 0, 1<<40))
	require.NoError(t, s.Close())
	s2 := newTestStore(t, dir)
	require.Equal(t, want, readAll(t, s2, b, 0, 1<<40))
}

func TestDiskBudgetRejectsAppendsPastIt(t *testing.T) {
	opts := DefaultOptions()
	opts.ValueLogFileSize = 8 << 20
	opts.DiskBudget = 64 << 20
	dir := t.TempDir()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	b := Bucket{Table: "t", Bucket: 0}
	payload := make([]byte, 1<<20)
	var accepted int
	var budgetErr error
	for i := 0; i < 200; i++ {
		_, err := s.Append(context.Background(), []Entry{{Bucket: b, Rows: 1, Payload: payload}})
		if err != nil {
			budgetErr = err
			break
		}
		accepted++
	}
	require.ErrorIs(t, budgetErr, ErrDiskBudget)
	require.ErrorContains(t, budgetErr, "budget")
	require.Greater(t, accepted, 10)
	require.Less(t, accepted, 64)
	require.EqualValues(t, accepted, s.HighWatermark(b), "a rejected append writes nothing")
}

// TestAppendAsyncKeepsQueueOrder: offsets follow the order of AppendAsync
// calls, whatever order the waits happen in, and the payload buffer may be
// reused as soon as AppendAsync returns.
func TestAppendAsyncKeepsQueueOrder(t *testing.T) {
	s := newTestStore(t, "")
	ctx := context.Background()
	b := Bucket{"t1", 0}
	buf := make([]byte, 1)
	var waits []func() ([]int64, error)
	for i := 0; i < 20; i++ {
		buf[0] = byte('a' + i)
		w, err := s.AppendAsync(ctx, []Entry{{Bucket: b, Rows: 2, Payload: buf}})
		require.NoError(t, err)
		waits = append(waits, w)
	}
	buf[0] = '!'
	for i := len(waits) - 1; i >= 0; i-- {
		bases, err := waits[i]()
		require.NoError(t, err)
		require.Equal(t, []int64{int64(2 * i)}, bases)
	}
	require.Equal(t, int64(40), s.HighWatermark(b))
	got := readAll(t, s, b, 0, 40)
	require.Len(t, got, 20)
	for i, e := range got {
		require.Equal(t, readEntry{int64(2 * i), 2, string(rune('a' + i))}, e)
	}
	_, err := s.AppendAsync(ctx, []Entry{{Bucket: b, Rows: 0, Payload: buf}})
	require.ErrorIs(t, err, ErrInvalidEntry, "nothing queued")
}
