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
