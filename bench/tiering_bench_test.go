package bench

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightd/flightd/internal/testserver"
)

// BenchmarkTierBurst measures tiering a burst into a primary-key table,
// through the real binary ($FLIGHTD_BIN, else one built for the run) and
// the ADBC Go driver: FLIGHTD_TIER_ROWS rows (default 10,000,000) of the
// 8 columns the other benchmarks use, primary key id, 4 buckets, ingested
// by one ADBC ingest stream of 10k-row batches while the table's
// lakestream.freshness is 1 h (and the server's --tiering-interval too),
// so nothing is tiered meanwhile; then the freshness is lowered to 1 s
// until sys.tiering shows no lag (tierNow), which runs the rounds that
// move the burst into the lake.
//
// Measured over the rounds:
//
//   - tier-s: from the ALTER TABLE that lowers the freshness until
//     sys.tiering shows no lag (polled every 100 ms; the scheduler wakes
//     at least once a second, so up to a second of it is waiting);
//   - round-s and rows/s: the server's own sum of the rounds' durations
//     (flightd_tiering_round_duration_seconds on --debug-addr, compaction
//     included), and the burst's rows over it;
//   - rss-peak-MiB: the server's largest RssAnon (sampled every 5 ms, as
//     sampleRSS does for the read path) and rss-growth-MiB its growth over
//     the value before the rounds;
//   - hwm-MiB: VmHWM after resetting it (writing 5 to
//     /proc/<pid>/clear_refs) right before the rounds: the peak resident
//     memory between samples too, file-backed pages included (the log's
//     and Badger's memory-mapped files, which the kernel may drop);
//   - server-cpu-s and server-cores: the server's CPU time over tier-s.
//
// It asserts correctness only: after the rounds the lake holds N rows
// (SELECT count(*) FROM bench.t) and no lag. Each iteration uses a new
// server and table. FLIGHTD_TIER_PROFILE=<dir> saves the server's CPU
// profile from the start of the rounds (FLIGHTD_TIER_PROFILE_SECONDS long,
// default 15) as <dir>/tier-cpu.pprof and its heap profile (inuse and
// alloc) after them as <dir>/tier-heap.pprof;
// FLIGHTD_TIER_DEBUG_ADDR sets the server's --debug-addr (else a free
// port), to profile it during the rounds.
func BenchmarkTierBurst(b *testing.B) {
	n := int64(envInt("FLIGHTD_TIER_ROWS", 10_000_000))
	tmpl := templates(1)
	defer release(tmpl)
	var tierWall, roundSecs, cpu float64
	var peak, grow, hwm int64
	runs := 0
	for b.Loop() {
		debug := os.Getenv("FLIGHTD_TIER_DEBUG_ADDR")
		if debug == "" {
			debug = freeAddr(b)
		}
		srv := testserver.Start(b, b.TempDir(), "--tiering-interval", "1h", "--log-level", "info", "--debug-addr", debug)
		c := open(b, srv.URI())
		c.exec(b, "CREATE DATABASE bench")
		c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED",
			" WITH ('bucket' = '4', 'lakestream.freshness' = '1h')"))
		c.ingestReader(b, "t", newGenReader(tmpl, 0, n, func(i int64) int64 { return i }))
		if lag := tableLag(b, c, "t"); lag != n {
			b.Fatalf("bench.t: %d rows in the log after ingesting %d (tiered during the ingest?)", lag, n)
		}
		sum0, _, _ := roundSeconds(b, debug)
		before := srv.RSS()
		if err := srv.ResetHWM(); err != nil {
			b.Fatal(err)
		}
		var profiled chan struct{}
		if dir := os.Getenv("FLIGHTD_TIER_PROFILE"); dir != "" {
			profiled = make(chan struct{})
			go func() {
				defer close(profiled)
				secs := envInt("FLIGHTD_TIER_PROFILE_SECONDS", 15)
				saveProfile(b, debug, fmt.Sprintf("profile?seconds=%d", secs), dir+"/tier-cpu.pprof")
			}()
		}
		rss := sampleRSS(srv)
		cpu0 := srv.CPUSeconds()
		start := time.Now()
		tierNow(b, c, "t")
		wall := time.Since(start)
		cpu += srv.CPUSeconds() - cpu0
		p := rss()
		h := srv.HWM()
		// The rounds are observed after their commits (and compaction):
		// wait until the server has counted the burst's rows.
		var sum1 float64
		var rounds int64
		testserver.Eventually(b, time.Minute, func() error {
			var rows float64
			sum1, rounds, rows = roundSeconds(b, debug)
			if int64(rows) < n {
				return fmt.Errorf("the server's metrics count %.0f rows tiered, want %d", rows, n)
			}
			return nil
		})
		if got := int64(mustScalar(b, c, "SELECT count(*) FROM bench.t")); got != n {
			b.Fatalf("bench.t holds %d rows after tiering %d", got, n)
		}
		if lag := tableLag(b, c, "t"); lag != 0 {
			b.Fatalf("bench.t: lag %d after tiering", lag)
		}
		if dir := os.Getenv("FLIGHTD_TIER_PROFILE"); dir != "" {
			saveProfile(b, debug, "heap", dir+"/tier-heap.pprof")
			<-profiled
		}
		tierWall += wall.Seconds()
		roundSecs += sum1 - sum0
		peak, grow, hwm = max(peak, p), max(grow, p-before), max(hwm, h)
		runs++
		b.Logf("%d rows: %d rounds in %.1f s (%.1f s until no lag), %.2f M rows/s, peak RssAnon %.0f MiB (+%.0f), VmHWM %.0f MiB, server %.1f CPU-s",
			n, rounds, sum1-sum0, wall.Seconds(), float64(n)/(sum1-sum0)/1e6, float64(p)/(1<<20), float64(p-before)/(1<<20), float64(h)/(1<<20), srv.CPUSeconds()-cpu0)
		srv.Stop(syscall.SIGKILL)
	}
	b.ReportMetric(tierWall/float64(runs), "tier-s")
	b.ReportMetric(roundSecs/float64(runs), "round-s")
	b.ReportMetric(float64(n)*float64(runs)/roundSecs, "rows/s")
	b.ReportMetric(float64(peak)/(1<<20), "rss-peak-MiB")
	b.ReportMetric(float64(grow)/(1<<20), "rss-growth-MiB")
	b.ReportMetric(float64(hwm)/(1<<20), "hwm-MiB")
	b.ReportMetric(cpu/float64(runs), "server-cpu-s")
	b.ReportMetric(cpu/tierWall, "server-cores")
}

// freeAddr is a free loopback address for the server's --debug-addr.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// roundSeconds reads the sum and count of the server's
// flightd_tiering_round_duration_seconds for bench.t from its /metrics,
// and flightd_tiering_rows_total.
func roundSeconds(b *testing.B, addr string) (sum float64, count int64, rows float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `table="t"`) {
			continue
		}
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "flightd_tiering_round_duration_seconds_sum"):
			sum, _ = strconv.ParseFloat(f[len(f)-1], 64)
		case strings.HasPrefix(line, "flightd_tiering_round_duration_seconds_count"):
			c, _ := strconv.ParseFloat(f[len(f)-1], 64)
			count = int64(c)
		case strings.HasPrefix(line, "flightd_tiering_rows_total"):
			rows, _ = strconv.ParseFloat(f[len(f)-1], 64)
		}
	}
	return sum, count, rows
}

// saveProfile fetches the server's /debug/pprof/<name> into path.
func saveProfile(b *testing.B, addr, name, path string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + name)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadFrom(resp.Body); err != nil {
		b.Fatal(err)
	}
}
