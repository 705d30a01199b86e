package kafkalog_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/logstore/kafkalog"
)

// BenchmarkAppend: one writer keeping window appends of one entry of size
// bytes in flight (as an ingest stream does), to the Kafka log on a real
// broker; MB/s and the latency of one append.
func BenchmarkAppend(b *testing.B) {
	br := testkafka.Start(b)
	for _, size := range []int{64 << 10, 768 << 10} {
		for _, window := range []int{1, 8} {
			b.Run(fmt.Sprintf("size=%dKiB/window=%d", size>>10, window), func(b *testing.B) {
				l, err := kafkalog.Open(context.Background(), kafkalog.Options{Brokers: []string{br.Addr()}, TopicPrefix: fmt.Sprintf("b%d-%d.", size, window)})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				p := make([]byte, size)
				es := []logstore.Entry{{Bucket: logstore.Bucket{Table: "t", Bucket: 0}, Rows: 10000, Payload: p}}
				waits := make(chan func() ([]int64, error), window)
				var lat time.Duration
				done := make(chan struct{})
				go func() {
					for w := range waits {
						if _, err := w(); err != nil {
							b.Error(err)
						}
					}
					close(done)
				}()
				start := time.Now()
				for b.Loop() {
					t0 := time.Now()
					w, err := l.AppendAsync(context.Background(), es)
					if err != nil {
						b.Fatal(err)
					}
					waits <- func() ([]int64, error) { r, err := w(); lat += time.Since(t0); return r, err }
				}
				close(waits)
				<-done
				el := time.Since(start)
				b.ReportMetric(float64(size)*float64(b.N)/el.Seconds()/1e6, "MB/s")
				b.ReportMetric(float64(lat.Microseconds())/float64(b.N)/1000, "ms/append")
			})
		}
	}
}

// BenchmarkAckToOtherNode: node a appends one small entry (shared log,
// several writers); node b Syncs and finds it in its high watermark: the
// time from a's acknowledgement until b's high watermark holds the entry
// (p50/p99), and a's append latency.
func BenchmarkAckToOtherNode(b *testing.B) {
	br := testkafka.Start(b)
	ctx := context.Background()
	open := func(node string) *kafkalog.Log {
		l, err := kafkalog.Open(ctx, kafkalog.Options{Brokers: []string{br.Addr()}, TopicPrefix: "ack.", NodeID: node, Shared: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	a, o := open("a"), open("b")
	bk := logstore.Bucket{Table: "t", Bucket: 0}
	es := []logstore.Entry{{Bucket: bk, Rows: 1, Payload: []byte("x")}}
	var appendLat time.Duration
	var visible []time.Duration
	for b.Loop() {
		t0 := time.Now()
		bases, err := a.Append(ctx, es)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := o.Sync(ctx, "t"); err != nil {
			b.Fatal(err)
		}
		if hw := o.HighWatermark(bk); hw < bases[0]+1 {
			b.Fatalf("after Sync the other node's high watermark is %d, below %d", hw, bases[0]+1)
		}
		appendLat += t1.Sub(t0)
		visible = append(visible, time.Since(t1))
	}
	slices.Sort(visible)
	b.ReportMetric(float64(appendLat.Microseconds())/float64(b.N)/1000, "append-ms")
	b.ReportMetric(float64(visible[len(visible)/2].Microseconds())/1000, "visible-p50-ms")
	b.ReportMetric(float64(visible[len(visible)*99/100].Microseconds())/1000, "visible-p99-ms")
}
