package bench

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightd/flightd/internal/testserver"
)

// delayProxy is a loopback HTTP reverse proxy in front of an S3 server that
// holds every request for a fixed delay before passing it on, as a store in
// another building would, and counts the requests it saw (and, while
// recording, their methods and paths).
type delayProxy struct {
	url    string
	delay  atomic.Int64 // nanoseconds
	count  atomic.Int64
	mu     sync.Mutex
	record bool
	seen   []string
}

func startDelayProxy(b testing.TB, target string, delay time.Duration) *delayProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := &delayProxy{url: "http://" + l.Addr().String()}
	p.delay.Store(int64(delay))
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host // the client signed the request for the proxy's host
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count.Add(1)
		p.mu.Lock()
		if p.record {
			q := ""
			if r.URL.RawQuery != "" {
				q = "?" + r.URL.RawQuery
			}
			p.seen = append(p.seen, r.Method+" "+r.URL.Path+q)
		}
		p.mu.Unlock()
		time.Sleep(time.Duration(p.delay.Load()))
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return p
}

// recording starts (on) or stops (off) keeping the requests' lines and
// returns those kept since the last start.
func (p *delayProxy) recording(on bool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.record, p.seen = on, nil
	return seen
}

// BenchmarkS3PointLookup measures prepared point lookups of t$rt on a
// warehouse in S3 whose every request takes FLIGHTD_S3_DELAY_MS (default
// 20) longer, through a delaying proxy in front of Versity S3 Gateway:
// FLIGHTD_S3_ROWS rows (default 100k) in a 4-bucket primary-key table,
// tiered, with FLIGHTD_S3_UPSERTS keys (default 1000) written again into the
// log. It reports the lookups' p50/p99 and the store requests per lookup
// (the proxy's count over the measured lookups, less what the server asks
// at its idle rate over the same time: background checks, tiering's table
// discovery; a steady-state lookup should need none). The warm-up, before
// the delay is switched on, reads the whole table once and makes 50
// lookups. FLIGHTD_S3_LOG=file writes the requests of five lookups to file.
//
//	VERSITYGW=bin/tools/versitygw FLIGHTD_BIN=bin/flightd go test ./bench -run '^$' -bench S3PointLookup -benchtime 1x
func BenchmarkS3PointLookup(b *testing.B) {
	delay := 20 * time.Millisecond
	if v := os.Getenv("FLIGHTD_S3_DELAY_MS"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("FLIGHTD_S3_DELAY_MS=%q: %v", v, err)
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	rows := envInt64(b, "FLIGHTD_S3_ROWS", 100_000)
	upserts := envInt64(b, "FLIGHTD_S3_UPSERTS", 1000)
	lookups := int(envInt64(b, "FLIGHTD_S3_LOOKUPS", 400))

	endpoint, _ := testserver.StartS3(b, "flightd")
	// Loading and tiering go through the proxy too, but undelayed: the
	// delay is for the measured reads.
	proxy := startDelayProxy(b, endpoint, 0)
	b.Setenv("FLIGHTD_S3_SECRET_ACCESS_KEY", testserver.S3SecretKey)
	srv := testserver.Start(b, b.TempDir(), "--warehouse", "s3://flightd/wh", "--s3-endpoint", proxy.url,
		"--s3-access-key-id", testserver.S3AccessKey, "--s3-region", testserver.S3Region, "--s3-path-style", "true",
		"--tiering-interval", "1h", "--log-level", "warn")
	c := open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED",
		" WITH ('bucket' = '4', 'lakestream.freshness' = '1h')"))
	tmpl := templates(1)
	defer release(tmpl)
	c.ingestReader(b, "t", newGenReader(tmpl, 0, rows, func(i int64) int64 { return i }))
	tierNow(b, c, "t")
	// Keys spread over the table written again: they stay in the log.
	step := max(rows/max(upserts, 1), 1)
	c.ingestReader(b, "t", newGenReader(tmpl, 0, upserts, func(i int64) int64 { return (i * step) % rows }))
	if lag := tableLag(b, c, "t"); lag != upserts {
		b.Fatalf("log holds %d rows, want the %d upserts", lag, upserts)
	}

	l := c.prepareLookup(b, `SELECT * FROM bench."t$rt" WHERE id = ?`)
	defer l.close()
	rng := rand.New(rand.NewPCG(7, 11))
	// Warm up undelayed: the first reads of a file (footers, manifests,
	// data pages: one full read of the table) are not what is measured.
	if n, _, _ := c.timedQuery(b, `SELECT * FROM bench.t`); n != rows {
		b.Fatalf("bench.t holds %d rows, want %d", n, rows)
	}
	for range 50 {
		l.lookup(b, rng.Int64N(rows))
	}
	proxy.delay.Store(int64(delay))
	for range 10 {
		l.lookup(b, rng.Int64N(rows))
	}
	if os.Getenv("FLIGHTD_S3_LOG") != "" {
		proxy.recording(true)
		for range 5 {
			l.lookup(b, rng.Int64N(rows))
		}
		seen := proxy.recording(false)
		if err := os.WriteFile(os.Getenv("FLIGHTD_S3_LOG"), []byte(strings.Join(seen, "\n")+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d store requests of 5 lookups written to %s", len(seen), os.Getenv("FLIGHTD_S3_LOG"))
	}

	// What the server asks of the store by itself (background checks,
	// tiering's table discovery), over an idle second.
	idleFrom, idleStart := proxy.count.Load(), time.Now()
	time.Sleep(time.Second)
	idleRate := float64(proxy.count.Load()-idleFrom) / time.Since(idleStart).Seconds()

	var lat []time.Duration
	var reqs int64
	var busy time.Duration
	b.ResetTimer()
	for range b.N {
		before, from := proxy.count.Load(), time.Now()
		for range lookups {
			start := time.Now()
			l.lookup(b, rng.Int64N(rows))
			lat = append(lat, time.Since(start))
		}
		reqs += proxy.count.Load() - before
		busy += time.Since(from)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := quantiles(lat)
	// The requests seen while the lookups ran, less those the server makes
	// on its own at the idle rate over the same time.
	perLookup := max(float64(reqs)-idleRate*busy.Seconds(), 0) / float64(len(lat))
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	b.ReportMetric(perLookup, "requests/lookup")
	b.ReportMetric(idleRate, "idle-requests/s")
	b.ReportMetric(0, "ns/op")
	b.Logf("s3 delay %s, %d rows, %d upserts: %d lookups p50 %.2f ms p99 %.2f ms, %.2f store requests/lookup (%d seen in %.1f s, idle %.1f/s) (%s)",
		delay, rows, upserts, len(lat), p50, p99, perLookup, reqs, busy.Seconds(), idleRate, testserver.Binary(b))
}

func envInt64(b testing.TB, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
