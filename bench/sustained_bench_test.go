package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/testserver"
)

// BenchmarkSustained ingests at a target rate for a while (4 ADBC clients,
// 10k-row batches) with the default 30 s tiering interval, and reports the
// rate reached, the largest tiering lag (sys.tiering) and the server's
// anonymous memory at the start, its peak in each half of the run (flat
// memory: the second half's peak is not above the first's) and at the end,
// how long tiering took to catch up after the load, and the server's CPU
// per million rows up to then. Run it with `make bench-sustained`;
// FLIGHTD_SUSTAIN_SECONDS (default 60) and FLIGHTD_SUSTAIN_RATE (rows/s,
// default 1000000) set the load, FLIGHTD_SUSTAIN_TABLE=pk a primary-key
// table with 4 buckets instead of an append table, and FLIGHTD_BENCH_LOGS=kafka
// the Kafka log (the first of benchLogs).
func BenchmarkSustained(b *testing.B) {
	secs := envInt("FLIGHTD_SUSTAIN_SECONDS", 60)
	rate := envInt("FLIGHTD_SUSTAIN_RATE", 1_000_000)
	opts, with := "", ""
	if os.Getenv("FLIGHTD_SUSTAIN_TABLE") == "pk" {
		opts, with = ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4')"
	}
	srv := testserver.Start(b, b.TempDir(), append([]string{"--tiering-interval", "30s", "--log-level", "warn"}, logArgs(b, benchLogs()[0])...)...)
	c := open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, opts, with))
	batches := make([]arrow.RecordBatch, 64)
	for i := range batches {
		batches[i] = makeBatch(int64(i*batchRows), batchRows, 5)
	}
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	rssStart := srv.RSS()
	cpuStart := srv.CPUSeconds()
	var written atomic.Int64
	maxLag := 0.0
	var rssFirst, rssSecond int64 // the largest anonymous RSS in each half of the run
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
		start := time.Now()
		var wg sync.WaitGroup
		const clients = 4
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				cn := open(b, srv.URI())
				for i := w; ctx.Err() == nil; i += clients {
					// pace: batch i is due at i*batchRows/rate seconds
					due := start.Add(time.Duration(float64(i*batchRows) / float64(rate) * float64(time.Second)))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
					cn.ingest(b, "t", batches[i%len(batches)])
					written.Add(batchRows)
				}
			}(w)
		}
		tick := time.NewTicker(time.Second)
		for n := 0; ctx.Err() == nil; n++ {
			<-tick.C
			if n%5 == 0 {
				rss := srv.RSS()
				if time.Since(start) < time.Duration(secs)*time.Second/2 {
					rssFirst = max(rssFirst, rss)
				} else {
					rssSecond = max(rssSecond, rss)
				}
			}
			if v, err := c.scalar(`SELECT coalesce(max(lag_seconds), 0) FROM sys.tiering`); err == nil {
				maxLag = max(maxLag, v)
			}
		}
		tick.Stop()
		cancel()
		wg.Wait()
		b.ReportMetric(float64(written.Load())/time.Since(start).Seconds(), "rows/s")
		// What the server spent, ingest and tiering together, per million
		// rows, once tiering has caught up: a run that ends with a backlog
		// has not yet paid for it.
		ended := time.Now()
		for lagRows(b, c) > 0 {
			time.Sleep(time.Second)
		}
		b.ReportMetric(time.Since(ended).Seconds(), "drain-s")
		b.ReportMetric((srv.CPUSeconds()-cpuStart)/(float64(written.Load())/1e6), "server-cpu-s/Mrows")
	}
	b.ReportMetric(maxLag, "max-lag-s")
	b.ReportMetric(float64(rssStart)/(1<<20), "rss-start-MiB")
	b.ReportMetric(float64(rssFirst)/(1<<20), "rss-max-1st-half-MiB")
	b.ReportMetric(float64(rssSecond)/(1<<20), "rss-max-2nd-half-MiB")
	b.ReportMetric(float64(srv.RSS())/(1<<20), "rss-end-MiB")
}

// lagRows is how many rows the log holds that are not in the lake yet.
func lagRows(b *testing.B, c *conn) float64 {
	n, err := c.scalar(`SELECT coalesce(sum(lag_rows), 0) FROM sys.tiering`)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// scalar runs sql and returns the number in the first column of its last row.
func (c *conn) scalar(sql string) (float64, error) {
	st, err := c.conn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		return 0, err
	}
	r, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var v float64
	for r.Next() {
		if v, err = strconv.ParseFloat(r.RecordBatch().Column(0).ValueStr(0), 64); err != nil {
			return 0, err
		}
	}
	return v, r.Err()
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
