package kafkalog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/logstore/kafkalog"
	"github.com/flightd/flightd/logstore/logtest"
)

// prefixes gives each directory the suite names its own topic prefix (and
// so transactional id) on the shared broker.
type prefixes struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *prefixes) of(dir string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]string{}
	}
	if _, ok := p.m[dir]; !ok {
		p.m[dir] = fmt.Sprintf("t%d.", len(p.m))
	}
	return p.m[dir]
}

// TestConformance runs the log conformance suite against a real broker.
func TestConformance(t *testing.T) {
	br := testkafka.Start(t)
	var ps prefixes
	logtest.Run(t, logtest.Harness{
		Open: func(t *testing.T, dir string) logstore.Log {
			l, err := kafkalog.Open(context.Background(), kafkalog.Options{
				Brokers: []string{br.Addr()}, TopicPrefix: ps.of(dir), MaxRecordBytes: 256 << 10,
			})
			require.NoError(t, err)
			return l
		},
		LargeEntry: 1<<20 + 12345, // five records of 256 KiB
	})
}

// TestNewBucketAfterTheOtherWriterGrewTheTopic: a write to a bucket past
// the topic's partitions grows the topic; the writer that did not grow it
// (the committer takes turns with two) must learn the new partitions before
// it writes there ("invalid record partitioning choice" before).
func TestNewBucketAfterTheOtherWriterGrewTheTopic(t *testing.T) {
	br := testkafka.Start(t)
	ctx := context.Background()
	l, err := kafkalog.Open(ctx, kafkalog.Options{Brokers: []string{br.Addr()}})
	require.NoError(t, err)
	defer l.Close()
	for bk := int32(0); bk < 6; bk++ {
		for i := 0; i < 3; i++ { // every bucket from both writers
			b := logstore.Bucket{Table: "grow", Bucket: bk}
			bases, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1, Payload: []byte{byte(i)}}})
			require.NoError(t, err, "bucket %d write %d", bk, i)
			require.Equal(t, []int64{int64(i)}, bases)
		}
	}
}

// TestOpenWithTheBrokersDown: with RecoverInBackground, Open returns while
// the brokers are down; the log says it is not ready (reads and writes fail
// with ErrUnavailable, not an empty log) until they return, then recovers
// what they hold.
func TestOpenWithTheBrokersDown(t *testing.T) {
	br := testkafka.Start(t)
	ctx := context.Background()
	opts := kafkalog.Options{Brokers: []string{br.Addr()}, Timeout: 6 * time.Second, RecoverInBackground: true}
	l, err := kafkalog.Open(ctx, opts)
	require.NoError(t, err)
	b := logstore.Bucket{Table: "down", Bucket: 0}
	_, err = l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 3, Payload: []byte("abc")}})
	require.NoError(t, err)
	require.NoError(t, l.Close())

	br.Stop()
	l, err = kafkalog.Open(ctx, opts)
	require.NoError(t, err, "the brokers are down: Open returns a recovering log")
	defer l.Close()
	require.ErrorIs(t, l.Ready(), logstore.ErrUnavailable)
	_, err = l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1, Payload: []byte("d")}})
	require.ErrorIs(t, err, logstore.ErrUnavailable)
	require.ErrorIs(t, l.Read(ctx, b, 0, 3, func(int64, int64, []byte) error { return nil }), logstore.ErrUnavailable)

	adv := l.Advanced()
	br.Restart(t)
	bound := time.After(2 * time.Minute)
	for l.Ready() != nil { // recovery closes Advanced once ready (and may before)
		select {
		case <-adv:
			adv = l.Advanced()
		case <-bound:
			t.Fatalf("the log did not recover within 2 minutes of the brokers' return: %v", l.Ready())
		}
	}
	require.EqualValues(t, 3, l.HighWatermark(b))
	bases, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1, Payload: []byte("d")}})
	require.NoError(t, err)
	require.Equal(t, []int64{3}, bases)
}

// TestSecondServerFencesTheFirst: a second log on the same topics (the same
// prefix, so the same transactional ids) takes the log over; the first
// then refuses every append with ErrFenced instead of fencing it back, so
// the two never write the same row offsets.
func TestSecondServerFencesTheFirst(t *testing.T) {
	br := testkafka.Start(t)
	ctx := context.Background()
	opts := kafkalog.Options{Brokers: []string{br.Addr()}, Timeout: 5 * time.Second}
	b := logstore.Bucket{Table: "fence", Bucket: 0}
	first, err := kafkalog.Open(ctx, opts)
	require.NoError(t, err)
	defer first.Close()
	_, err = first.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 2, Payload: []byte("a")}})
	require.NoError(t, err)

	second, err := kafkalog.Open(ctx, opts)
	require.NoError(t, err)
	defer second.Close()
	require.EqualValues(t, 2, second.HighWatermark(b))
	for i := 0; i < 3; i++ { // each of the first's writers finds itself fenced, and stays so
		_, err = first.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1, Payload: []byte("x")}})
		require.ErrorIs(t, err, logstore.ErrFenced)
		require.ErrorContains(t, err, "another flightd started on this log")
	}
	require.ErrorIs(t, first.Ready(), logstore.ErrFenced, "the first's view no longer follows the log")
	require.NoError(t, second.Ready())
	bases, err := second.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 1, Payload: []byte("b")}})
	require.NoError(t, err, "the second writes on")
	require.Equal(t, []int64{2}, bases)
	var got []string
	require.NoError(t, second.Read(ctx, b, 0, 10, func(base, rows int64, p []byte) error {
		got = append(got, fmt.Sprintf("%d+%d:%s", base, rows, p))
		return nil
	}))
	require.Equal(t, []string{"0+2:a", "2+1:b"}, got)
}

// TestNodesShareTheLog: two nodes (their own transactional ids) append to
// the same partitions at once, with entries in parts that interleave with
// the other's records. Both number every partition the same way: dense
// offsets from 0, each append at the offsets its writer was told, and an
// append acknowledged by one is seen by the other after Sync. A node that
// opens after the other truncated numbers from the truncation's anchor.
func TestNodesShareTheLog(t *testing.T) {
	br := testkafka.Start(t)
	ctx := context.Background()
	open := func(node string) *kafkalog.Log {
		l, err := kafkalog.Open(ctx, kafkalog.Options{Brokers: []string{br.Addr()}, TopicPrefix: "share.", NodeID: node, Shared: true, MaxRecordBytes: 4 << 10})
		require.NoError(t, err)
		return l
	}
	a, b := open("a"), open("b")
	defer func() { a.Close() }()
	defer func() { b.Close() }()

	type acked struct {
		b          logstore.Bucket
		base, rows int64
		payload    string
	}
	var mu sync.Mutex
	var all []acked
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		self, other := a, b
		if w%2 == 1 {
			self, other = b, a
		}
		wg.Go(func() {
			for i := range 25 {
				var entries []logstore.Entry
				for bk := range int32(1 + (w+i)%3) {
					size := 10 + (w*7+i*13)%3*5000 // some entries take two records
					p := fmt.Appendf(nil, "w%d-i%d-b%d:", w, i, bk)
					p = append(p, make([]byte, size)...)
					entries = append(entries, logstore.Entry{Bucket: logstore.Bucket{Table: "x", Bucket: bk}, Rows: int64(1 + i%4), Payload: p})
				}
				bases, err := self.Append(ctx, entries)
				if err != nil {
					errs <- err
					return
				}
				// Acknowledged by self: seen by the other after Sync.
				if err := other.Sync(ctx, "x"); err != nil {
					errs <- err
					return
				}
				for k, e := range entries {
					if hw := other.HighWatermark(e.Bucket); hw < bases[k]+e.Rows {
						errs <- fmt.Errorf("write %d/%d acknowledged at %v [%d,+%d) but the other node's high watermark is %d after Sync", w, i, e.Bucket, bases[k], e.Rows, hw)
						return
					}
				}
				mu.Lock()
				for k, e := range entries {
					all = append(all, acked{e.Bucket, bases[k], e.Rows, string(e.Payload)})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	check := func(l *kafkalog.Log, from map[int32]int64) {
		t.Helper()
		require.NoError(t, l.Sync(ctx, "x"))
		for bk := range int32(3) {
			bucket := logstore.Bucket{Table: "x", Bucket: bk}
			want := map[int64]acked{}
			var end int64
			for _, e := range all {
				if e.b == bucket {
					want[e.base] = e
					end = max(end, e.base+e.rows)
				}
			}
			require.Equal(t, end, l.HighWatermark(bucket), "bucket %d", bk)
			next := from[bk]
			require.NoError(t, l.Read(ctx, bucket, from[bk], end, func(base, rows int64, p []byte) error {
				w, ok := want[base]
				require.True(t, ok, "bucket %d: an entry at %d nobody was told of", bk, base)
				require.Equal(t, next, base, "bucket %d: offsets are dense", bk)
				require.Equal(t, w.rows, rows)
				require.Equal(t, w.payload, string(p), "bucket %d at %d", bk, base)
				next = base + rows
				return nil
			}))
			require.Equal(t, end, next, "bucket %d: read to the end", bk)
		}
	}
	check(a, map[int32]int64{})
	check(b, map[int32]int64{})

	// A truncates; a node opening afterwards numbers from the anchor.
	b0 := logstore.Bucket{Table: "x", Bucket: 0}
	require.NoError(t, a.Truncate(ctx, b0, a.HighWatermark(b0)/2))
	cut := a.Start(b0)
	require.Greater(t, cut, int64(0))
	require.NoError(t, b.Close())
	b = open("b")
	require.Equal(t, cut, b.Start(b0))
	check(b, map[int32]int64{0: cut})
	c := open("c")
	defer c.Close()
	check(c, map[int32]int64{0: cut})

	// Appends go on from the shared end, on every node.
	hw := a.HighWatermark(b0)
	bases, err := c.Append(ctx, []logstore.Entry{{Bucket: b0, Rows: 2, Payload: []byte("after")}})
	require.NoError(t, err)
	require.Equal(t, []int64{hw}, bases)
	require.NoError(t, a.Sync(ctx, "x"))
	require.Equal(t, hw+2, a.HighWatermark(b0))
}

// TestSyncFindsATableAnotherNodeMade: a node that had never seen a table
// reads another node's acknowledged write after Sync, although it listed
// the topics (and its client cached the list) before the table existed.
func TestSyncFindsATableAnotherNodeMade(t *testing.T) {
	br := testkafka.Start(t)
	ctx := context.Background()
	open := func(node string) *kafkalog.Log {
		l, err := kafkalog.Open(ctx, kafkalog.Options{Brokers: []string{br.Addr()}, TopicPrefix: "new.", NodeID: node, Shared: true,
			TableInfo: func(string) (string, string, int) { return "default", "kv", 4 }})
		require.NoError(t, err)
		return l
	}
	a, b := open("a"), open("b")
	defer a.Close()
	defer b.Close()
	require.Empty(t, b.HighWatermarks("kv-1"))
	_, err := a.Append(ctx, []logstore.Entry{
		{Bucket: logstore.Bucket{Table: "kv-1", Bucket: 1}, Rows: 1, Payload: []byte("p")},
		{Bucket: logstore.Bucket{Table: "kv-1", Bucket: 3}, Rows: 2, Payload: []byte("q")},
	})
	require.NoError(t, err)
	require.NoError(t, b.Sync(ctx, "kv-1"))
	require.Equal(t, map[int32]int64{1: 1, 3: 2}, b.HighWatermarks("kv-1"))
}

// TestReopenReadsOnlyTheEndOfALongLog: a log reopened over a partition of
// thousands of records numbers it from the checkpoint its last records
// carry, not from its start (a restart read the whole retained log, 24 h
// of it by default, before), and still reads its oldest entries (found by
// bisecting the partition on the records' checkpoints), also after a
// truncation.
func TestReopenReadsOnlyTheEndOfALongLog(t *testing.T) {
	br := testkafka.Start(t)
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%t", shared), func(t *testing.T) {
			opts := kafkalog.Options{Brokers: []string{br.Addr()}, TopicPrefix: fmt.Sprintf("long%t.", shared), NodeID: "n1", Shared: shared}
			l, err := kafkalog.Open(ctx, opts)
			require.NoError(t, err)
			b := logstore.Bucket{Table: "t", Bucket: 0}
			const n = 1500
			for i := range n {
				bases, err := l.Append(ctx, []logstore.Entry{{Bucket: b, Rows: 2, Payload: fmt.Appendf(nil, "e%d", i)}})
				require.NoError(t, err)
				require.Equal(t, []int64{2 * int64(i)}, bases)
			}
			require.NoError(t, l.Close())

			check := func(l *kafkalog.Log, from int64) {
				t.Helper()
				require.EqualValues(t, 2*n, l.HighWatermark(b))
				for _, lo := range []int64{from, from + 101, 1000, 2*n - 3} {
					var got []string
					require.NoError(t, l.Read(ctx, b, lo, lo+4, func(base, rows int64, p []byte) error {
						got = append(got, fmt.Sprintf("%d+%d=%s", base, rows, p))
						return nil
					}))
					var want []string
					for e := lo / 2; e <= (lo+3)/2 && e < n; e++ {
						want = append(want, fmt.Sprintf("%d+2=e%d", 2*e, e))
					}
					require.Equal(t, want, got, "read from %d", lo)
				}
			}
			l, err = kafkalog.Open(ctx, opts)
			require.NoError(t, err)
			require.Less(t, kafkalog.TailRecords(l), int64(100), "the recovery numbered the end only")
			check(l, 0)
			require.NoError(t, l.Truncate(ctx, b, 600))
			require.EqualValues(t, 600, l.Start(b))
			require.NoError(t, l.Close())

			l, err = kafkalog.Open(ctx, opts)
			require.NoError(t, err)
			defer l.Close()
			require.Less(t, kafkalog.TailRecords(l), int64(100), "the recovery numbered the end only")
			require.EqualValues(t, 600, l.Start(b))
			check(l, 600)
		})
	}
}
