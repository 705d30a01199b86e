package bench

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/flightd/flightd/internal/testserver"
)

// BenchmarkFreshness measures, for single-row writes into a primary-key table:
//   - write: from sending the write until its acknowledgement;
//   - ack→rt: from the write's acknowledgement until a query of t$rt
//     returns the row (the query's own latency, since an acknowledged row
//     is visible at once by construction);
//   - ack→lake: from the acknowledgement until a query of t (lake only)
//     returns it, with a 1 s tiering interval.
//
// By default the probe is a closed loop: the next write follows the last
// query at once. FLIGHTD_FRESHNESS_RATE=<writes/s> paces it instead (one
// write per period, never a burst to catch up), which is what the target is
// about: a closed loop of tiny RPCs costs the server ~0.75 cores by itself
// (mostly Go scheduler wake-ups and gRPC framing), so on 2 cores it measures
// the probe contending with itself as much as with the load.
//
// FLIGHTD_FRESHNESS_LOAD=<rows/s> adds a paced background ingest of 10k-row
// batches into another append table, from another process (loadgen_test.go),
// while it measures (the target is p99 <= 5 ms at half the maximum
// ingest rate); ack→lake is then not measured, since tiering the loaded
// table delays the probe table's rounds. FLIGHTD_FRESHNESS_INTERVAL sets
// --tiering-interval (default 1s; use the server's default, 30s, for the
// loaded measurement). A loaded measurement must span whole tiering cycles:
// the loaded table's rounds and compactions are where the tail comes from;
// at 100 writes/s use -benchtime 7000x (~70 s, two cycles), closed loop
// 16000x. server-cores is the server's average CPU use meanwhile.
// FLIGHTD_FRESHNESS_DUMP=<file> writes each query's acknowledgement and
// answer times (Unix ns), to match against a server execution trace.
//
// With FLIGHTD_BENCH_LOGS=badger,kafka it runs once on each log (benchLogs).
func BenchmarkFreshness(b *testing.B) {
	for _, log := range benchLogs() {
		b.Run("log="+log, func(b *testing.B) { freshness(b, log) })
	}
}

func freshness(b *testing.B, log string) {
	srv := testserver.Start(b, b.TempDir(), append([]string{"--tiering-interval", envStr("FLIGHTD_FRESHNESS_INTERVAL", "1s"), "--log-level", "warn"}, logArgs(b, log)...)...)
	c := open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4')"))
	load := envInt("FLIGHTD_FRESHNESS_LOAD", 0)
	if load > 0 {
		c.exec(b, "CREATE TABLE bench.load "+fmt.Sprintf(eightColsDDL, "", ""))
		g := startLoad(b, srv.URI(), "load", load)
		defer func() { b.ReportMetric(g.stop(b), "load-rows/s") }()
		time.Sleep(2 * time.Second) // let the load settle
	}
	var write, rt, lake []time.Duration
	id := int64(0)
	var period time.Duration
	if r := envInt("FLIGHTD_FRESHNESS_RATE", 0); r > 0 {
		period = time.Second / time.Duration(r)
	}
	var dump *os.File
	if p := os.Getenv("FLIGHTD_FRESHNESS_DUMP"); p != "" {
		dump, _ = os.Create(p)
		defer dump.Close()
	}
	cpu0, t0 := srv.CPUSeconds(), time.Now()
	next := t0
	for b.Loop() {
		if period > 0 {
			next = pace(next, period)
		}
		id++
		rec := makeBatch(id, 1, 3)
		sent := time.Now()
		c.ingest(b, "t", rec)
		acked := time.Now()
		write = append(write, acked.Sub(sent))
		rec.Release()
		if n := c.queryRows(b, fmt.Sprintf(`SELECT id FROM bench."t$rt" WHERE id = %d`, id)); n != 1 {
			b.Fatalf("row %d not in t$rt after its acknowledgement", id)
		}
		rt = append(rt, time.Since(acked))
		if dump != nil {
			fmt.Fprintf(dump, "%d %d\n", acked.UnixNano(), time.Now().UnixNano())
		}
		if load == 0 && id%10 == 1 { // the lake path is slow by design: sample it (without load: tiering of the loaded table would delay it)
			for c.queryRows(b, fmt.Sprintf(`SELECT id FROM bench.t WHERE id = %d`, id)) != 1 {
				if time.Since(acked) > 10*time.Second {
					b.Fatalf("row %d not in the lake after 10s", id)
				}
				time.Sleep(20 * time.Millisecond)
			}
			lake = append(lake, time.Since(acked))
		}
	}
	// the server's average CPU use while it was measured, in cores
	b.ReportMetric((srv.CPUSeconds()-cpu0)/time.Since(t0).Seconds(), "server-cores")
	report(b, "write", write)
	report(b, "ack-rt", rt)
	report(b, "ack-lake", lake)
}

// pace waits until next, and returns the time of the step after it: one
// period on, never a burst to catch up with steps that ran late.
func pace(next time.Time, period time.Duration) time.Time {
	if d := time.Until(next); d > 0 {
		time.Sleep(d)
	}
	next = next.Add(period)
	if now := time.Now(); next.Before(now) {
		next = now
	}
	return next
}

func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), name+"-p50-ms")
	b.ReportMetric(q(0.99), name+"-p99-ms")
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
