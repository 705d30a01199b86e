package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPartitionedRead compares reading a large table whole through one
// endpoint with reading it through several, in one run (ratios of the same
// round; the machine is shared). The table is ReadPath's: FLIGHTD_READ_ROWS rows
// (default 1M) of eight columns in a 4-bucket primary-key table, tiered in
// three parts, nothing in the log.
//
//   - endpoints=1: the server restarted with --max-endpoints 1; ADBC's
//     ExecuteQuery reads the one stream.
//   - endpoints=N/query: restarted with --max-endpoints N; ADBC's
//     ExecuteQuery, which opens every endpoint at once and returns their
//     batches endpoint by endpoint (a few batches of read-ahead each).
//   - endpoints=N/partitions: ADBC's ExecutePartitions, then each
//     partition read by its own goroutine with ReadPartition, as a
//     parallel or distributed client does.
//
// Run: FLIGHTD_READ_ROWS=10000000 go test -run '^$' -bench PartitionedRead -benchtime 1x -v ./bench/
// (FLIGHTD_READ_ROUNDS rounds, default 3; FLIGHTD_READ_ENDPOINTS, default 4).
func BenchmarkPartitionedRead(b *testing.B) {
	n := int64(envInt("FLIGHTD_READ_ROWS", 1_000_000))
	parts := envInt("FLIGHTD_READ_ENDPOINTS", 4)
	srv, _, _, _ := loadReadTable(b, n)
	var c *conn
	const q = `SELECT * FROM bench.t`
	rowsName := fmt.Sprintf("rows=%.0e", float64(n))
	// Rounds alternate the server's settings (a restart each), so that the
	// machine's drift reaches all three alike; each ratio is of one round.
	rounds := envInt("FLIGHTD_READ_ROUNDS", 3)
	var one, query, part []float64
	var oneRSS, queryRSS int64
	for r := 0; r < rounds; r++ {
		srv.RestartWith(syscall.SIGTERM, "--max-endpoints", "1")
		c = open(b, srv.URI())
		var m readMeasure
		m.add(b, srv, c, q, n)
		one = append(one, float64(n)/m.wall.Seconds())
		oneRSS = max(oneRSS, m.grow)

		srv.RestartWith(syscall.SIGTERM, "--max-endpoints", fmt.Sprint(parts), "--min-endpoint-rows", "1")
		c = open(b, srv.URI())
		m = readMeasure{}
		m.add(b, srv, c, q, n)
		query = append(query, float64(n)/m.wall.Seconds())
		queryRSS = max(queryRSS, m.grow)

		start := time.Now()
		rows, got := c.readPartitions(b, q)
		if rows != n || got < 2 {
			b.Fatalf("%s: %d rows in %d partitions, want %d rows in several", q, rows, got, n)
		}
		part = append(part, float64(n)/time.Since(start).Seconds())
		b.Logf("round %d: one endpoint %.2f, %d endpoints by ExecuteQuery %.2f, %d partitions in parallel %.2f M rows/s",
			r, one[r]/1e6, parts, query[r]/1e6, got, part[r]/1e6)
	}
	ratios := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i := range xs {
			out[i] = xs[i] / one[i]
		}
		sort.Float64s(out)
		return out
	}
	qr, pr := ratios(query), ratios(part)
	b.ReportMetric(qr[len(qr)/2], "query-x-one")
	b.ReportMetric(pr[len(pr)/2], "partitions-x-one")
	b.ReportMetric(float64(oneRSS)/(1<<20), "one-rss-growth-MiB")
	b.ReportMetric(float64(queryRSS)/(1<<20), "query-rss-growth-MiB")
	b.Logf("%s, %d endpoints: ExecuteQuery %v x one endpoint (RSS growth %d vs %d MiB); partitions read in parallel %v x one endpoint",
		rowsName, parts, qr, queryRSS>>20, oneRSS>>20, pr)
	for b.Loop() { // the rounds above are the measure
	}
}

// readPartitions plans sql with ExecutePartitions and reads every partition
// on its own goroutine; it returns the rows and the partitions.
func (c *conn) readPartitions(b testing.TB, sql string) (int64, int) {
	ctx := context.Background()
	st, _ := c.conn.NewStatement()
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		b.Fatal(err)
	}
	_, parts, _, err := st.ExecutePartitions(ctx)
	if err != nil {
		b.Fatal(sql, err)
	}
	var mu sync.Mutex
	var rows int64
	var wg sync.WaitGroup
	errs := make(chan error, len(parts.PartitionIDs))
	for _, id := range parts.PartitionIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.conn.ReadPartition(ctx, id)
			if err != nil {
				errs <- err
				return
			}
			defer r.Release()
			var k int64
			for r.Next() {
				k += r.RecordBatch().NumRows()
			}
			if err := r.Err(); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			rows += k
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(sql, err)
	}
	return rows, len(parts.PartitionIDs)
}
