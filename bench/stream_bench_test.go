package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/internal/testserver"
)

// BenchmarkStreamLatency measures how long a change takes from its write's
// acknowledgement until a streaming read of t$rt delivers it (stream-p50-ms,
// stream-p99-ms): one single-row write into a primary-key table per
// iteration, paced at FLIGHTD_STREAM_RATE writes/s (default 100), while a
// streaming session reads the table. FLIGHTD_STREAM_LOAD=<rows/s> (default
// 500000; 0 for none) adds a paced ingest of 10k-row batches into another
// table, from another process (loadgen_test.go), with the server's default
// 30 s tiering interval; run at least -benchtime 3000x so that tiering
// rounds of the loaded table fall inside the measurement.
func BenchmarkStreamLatency(b *testing.B) {
	srv := testserver.Start(b, b.TempDir(), "--log-level", "warn")
	c := open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4')"))
	load := 500000
	if v := os.Getenv("FLIGHTD_STREAM_LOAD"); v != "" {
		load, _ = strconv.Atoi(v)
	}
	if load > 0 {
		c.exec(b, "CREATE TABLE bench.load "+fmt.Sprintf(eightColsDDL, "", ""))
		g := startLoad(b, srv.URI(), "load", load)
		defer func() { b.ReportMetric(g.stop(b), "load-rows/s") }()
		time.Sleep(2 * time.Second) // let the load settle
	}

	// The streaming session: its cookie comes back on GetFlightInfo, a
	// unary call, which the cookie middleware always sees.
	cl, err := flightsql.NewClient(srv.Addr, nil, []flight.ClientMiddleware{flight.NewClientCookieMiddleware()}, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cl.Execute(ctx, "SET streaming = true"); err != nil {
		b.Fatal(err)
	}
	info, err := cl.Execute(ctx, `SELECT id FROM bench."t$rt"`)
	if err != nil {
		b.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		b.Fatal(err)
	}
	defer rdr.Release()

	var mu sync.Mutex
	seen := map[int64]time.Time{}
	arrived := make(chan struct{}, 1)
	go func() {
		for rdr.Next() {
			rec := rdr.RecordBatch()
			now := time.Now()
			ids := rec.Column(1).(*array.Int64)
			mu.Lock()
			for i := 0; i < ids.Len(); i++ {
				seen[ids.Value(i)] = now
			}
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
	}()
	period := time.Second / time.Duration(envInt("FLIGHTD_STREAM_RATE", 100))
	var lat []time.Duration
	acks := map[int64]time.Time{}
	cpu0, t0 := srv.CPUSeconds(), time.Now()
	next := t0
	id := int64(0)
	for b.Loop() {
		next = pace(next, period)
		id++
		rec := makeBatch(id, 1, 3)
		c.ingest(b, "t", rec)
		acks[id] = time.Now()
		rec.Release()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if int64(n) >= id {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d changes arrived within 30 s of the last write", n, id)
		}
		select {
		case <-arrived:
		case <-time.After(time.Second):
		}
	}
	b.ReportMetric((srv.CPUSeconds()-cpu0)/time.Since(t0).Seconds(), "server-cores")
	mu.Lock()
	for i, at := range acks {
		lat = append(lat, max(seen[i].Sub(at), 0))
	}
	mu.Unlock()
	report(b, "stream", lat)
}
