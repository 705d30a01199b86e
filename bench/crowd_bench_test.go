package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	aflightsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/testserver"
)

// loadSeconds is FLIGHTD_LOAD_SECONDS, default 90.
func loadSeconds() int {
	if n, err := strconv.Atoi(os.Getenv("FLIGHTD_LOAD_SECONDS")); err == nil && n > 0 {
		return n
	}
	return 90
}

// crowdTable starts crowdServer and loads rows into the 4-bucket primary-key table bench.t of eight
// columns. The caller releases the row templates.
func crowdTable(b *testing.B, rows int64, extra ...string) (*testserver.Server, *conn, []arrow.RecordBatch) {
	srv := crowdServer(b, extra...)
	admin := open(b, srv.URI())
	admin.exec(b, "CREATE DATABASE bench")
	admin.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id)", " WITH ('bucket' = '4')"))
	tmpl := templates(1)
	admin.ingestReader(b, "t", newGenReader(tmpl, 0, rows, func(i int64) int64 { return i }))
	return srv, admin, tmpl
}

// crowdServer starts flightd serve --memory-limit 2GiB with extra flags,
// and --debug-addr $FLIGHTD_LOAD_DEBUG_ADDR to profile it during a run.
func crowdServer(b *testing.B, extra ...string) *testserver.Server {
	args := append([]string{"--memory-limit", "2GiB", "--log-level", "warn"}, extra...)
	if a := os.Getenv("FLIGHTD_LOAD_ARGS"); a != "" {
		args = append(args, strings.Fields(a)...) // more flags of the server
	}
	if a := os.Getenv("FLIGHTD_LOAD_DEBUG_ADDR"); a != "" {
		args = append(args, "--debug-addr", a)
	}
	return testserver.Start(b, b.TempDir(), args...)
}

// crowdKind is one kind of client of the crowd: its latencies and its
// failures by gRPC code.
type crowdKind struct {
	mu      sync.Mutex
	lat     []time.Duration
	calls   int
	refused map[string]int // code -> count
}

func (k *crowdKind) record(d time.Duration, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	if err != nil {
		if k.refused == nil {
			k.refused = map[string]int{}
		}
		code := "error"
		if s, ok := status.FromError(err); ok {
			code = s.Code().String()
		} else if msg := err.Error(); strings.Contains(msg, "ResourceExhausted") || strings.Contains(msg, "RESOURCE_EXHAUSTED") {
			code = "ResourceExhausted"
		} else if len(msg) > 80 {
			code = msg[:80]
		} else {
			code = msg
		}
		k.refused[code]++
		return
	}
	k.lat = append(k.lat, d)
}

func (k *crowdKind) line(name string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	p50, p99 := 0.0, 0.0
	if len(k.lat) > 0 {
		p50, p99 = quantiles(k.lat)
	}
	failed := 0
	for _, n := range k.refused {
		failed += n
	}
	return fmt.Sprintf("%-12s calls %6d  failed %5d %v  p50 %8.1f ms  p99 %8.1f ms", name, k.calls, failed, k.refused, p50, p99)
}

// BenchmarkCrowd (make bench-load) runs the crowd of the admission work
// against flightd serve --memory-limit 2GiB --tiering-interval 2s for
// FLIGHTD_LOAD_SECONDS (default 90): 8 bulk writers at 100k rows/s in all,
// 8 clients sending single-row INSERTs, 8 point queries on t$rt, 8 full
// scans of t and t$rt; then a burst of 100 clients × 3 SELECT 1 and 500
// connections × SELECT 1. It prints per-kind calls, failures by code and
// p50/p99, and the server's peak RSS, and checks that every acknowledged
// row is in t$rt exactly once.
func BenchmarkCrowd(b *testing.B) {
	secs := loadSeconds()
	const seedRows = 1_000_000
	srv, admin, tmpl := crowdTable(b, seedRows, "--tiering-interval", "2s")
	defer release(tmpl)
	peakRSS := sampleRSS(srv)
	var (
		bulk, single, point, scanT, scanRT, burst crowdKind
		acked                                     atomic.Int64 // rows acknowledged besides the seed
		nextSingle                                atomic.Int64
	)
	nextSingle.Store(1 << 40)
	cpu0, wall0 := srv.CPUSeconds(), time.Now()
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var wg sync.WaitGroup
	// FLIGHTD_LOAD_KINDS picks the kinds of clients (default all):
	// bulk,insert,point,scan.
	kinds := os.Getenv("FLIGHTD_LOAD_KINDS")
	if kinds == "" {
		kinds = "bulk,insert,point,scan"
	}
	kind := 0
	client := func(f func(c *conn, i int)) {
		kind++
		if !strings.Contains(kinds, []string{"", "bulk", "insert", "point", "scan"}[kind]) {
			return
		}
		for i := range 8 {
			c := open(b, srv.URI())
			wg.Add(1)
			go func() { defer wg.Done(); f(c, i) }()
		}
	}
	timed := func(k *crowdKind, f func() error) {
		start := time.Now()
		err := f()
		k.record(time.Since(start), err)
	}
	// 8 bulk writers, 12,500 rows a second each, one ingest call a second.
	client(func(c *conn, w int) {
		for n := int64(0); time.Now().Before(deadline); n++ {
			next := time.Now().Add(time.Second)
			from := int64(seedRows) + int64(w)*(1<<32) + n*12_500
			timed(&bulk, func() error {
				err := c.tryIngest(newGenReader(tmpl, from, from+12_500, func(i int64) int64 { return i }))
				if err == nil {
					acked.Add(12_500)
				}
				return err
			})
			time.Sleep(time.Until(next))
		}
	})
	client(func(c *conn, _ int) {
		for time.Now().Before(deadline) {
			id := nextSingle.Add(1)
			timed(&single, func() error {
				_, err := c.tryExec(fmt.Sprintf("INSERT INTO bench.t (id, k) VALUES (%d, 1)", id))
				if err == nil {
					acked.Add(1)
				}
				return err
			})
		}
	})
	client(func(c *conn, i int) {
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		for time.Now().Before(deadline) {
			timed(&point, func() error {
				n, err := c.tryQuery(fmt.Sprintf(`SELECT * FROM bench."t$rt" WHERE id = %d`, rng.Int64N(seedRows)))
				if err == nil && n != 1 {
					err = fmt.Errorf("point query: %d rows", n)
				}
				return err
			})
		}
	})
	client(func(c *conn, i int) {
		for j := 0; time.Now().Before(deadline); j++ {
			k, table := &scanT, "bench.t"
			if (i+j)%2 == 0 {
				k, table = &scanRT, `bench."t$rt"`
			}
			timed(k, func() error { _, err := c.tryQuery("SELECT * FROM " + table); return err })
		}
	})
	wg.Wait()
	cores := (srv.CPUSeconds() - cpu0) / time.Since(wall0).Seconds()

	// Bursts: 100 clients × 3 SELECT 1, then 500 connections × SELECT 1.
	for _, shape := range [][2]int{{100, 3}, {500, 1}} {
		conns := make([]*conn, shape[0])
		for i := range conns {
			conns[i] = open(b, srv.URI())
		}
		start := make(chan struct{})
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range shape[1] {
					timed(&burst, func() error { _, err := c.tryQuery("SELECT 1"); return err })
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	peak := peakRSS()

	want := int64(seedRows) + acked.Load()
	got := mustScalar(b, admin, `SELECT count(*) FROM bench."t$rt"`)
	keys := mustScalar(b, admin, `SELECT count(DISTINCT id) FROM bench."t$rt"`)
	b.Logf("crowd of %d s (%s): the server used %.2f cores", secs, kinds, cores)
	for _, k := range []struct {
		name string
		k    *crowdKind
	}{{"bulk ingest", &bulk}, {"insert row", &single}, {"point t$rt", &point}, {"scan t", &scanT}, {"scan t$rt", &scanRT}, {"SELECT 1", &burst}} {
		b.Log(k.k.line(k.name))
	}
	b.Logf("acknowledged rows %d, in t$rt %d (%d keys); peak RssAnon %d MiB", want, int64(got), int64(keys), peak>>20)
	if int64(got) != want || int64(keys) != want {
		b.Fatalf("rows lost or doubled: acknowledged %d, t$rt has %d rows and %d keys", want, int64(got), int64(keys))
	}
	if srv.Exited() {
		b.Fatal("the server died")
	}
	if len(point.lat) > 0 {
		p50, p99 := quantiles(point.lat)
		b.ReportMetric(p50, "point-p50-ms")
		b.ReportMetric(p99, "point-p99-ms")
	}
	b.ReportMetric(float64(peak>>20), "peak-rss-MiB")
	refused := 0
	for _, k := range []*crowdKind{&bulk, &single, &point, &scanT, &scanRT, &burst} {
		for _, n := range k.refused {
			refused += n
		}
	}
	b.ReportMetric(float64(refused), "failed-calls")
}

// tryExec, tryQuery and tryIngest are exec, queryRows and ingestReader
// that return their error (the crowd counts failures, it does not stop).
func (c *conn) tryExec(sql string) (int64, error) {
	st, err := c.statement(sql)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.ExecuteUpdate(context.Background())
}

func (c *conn) tryQuery(sql string) (int64, error) {
	st, err := c.statement(sql)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	r, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	return n, r.Err()
}

// statement is a new statement of sql; the caller closes it.
func (c *conn) statement(sql string) (adbc.Statement, error) {
	st, err := c.conn.NewStatement()
	if err != nil {
		return nil, err
	}
	if err := st.SetSqlQuery(sql); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func (c *conn) tryIngest(rr array.RecordReader) error {
	defer rr.Release()
	st, err := c.conn.NewStatement()
	if err != nil {
		return err
	}
	defer st.Close()
	_ = st.SetOption(adbc.OptionKeyIngestTargetTable, "t")
	_ = st.SetOption(adbc.OptionValueIngestTargetDBSchema, "bench")
	_ = st.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeAppend)
	if err := st.BindStream(context.Background(), rr); err != nil {
		return err
	}
	_, err = st.ExecuteUpdate(context.Background())
	return err
}

// BenchmarkCrowdIngest (make bench-load): 32 ADBC ingest streams at once,
// each sending two batches of about 48 MiB of Arrow data, into a server
// with --memory-limit 2GiB. Before the ingest memory budget, such a crowd
// ended the process (out of memory inside gRPC's message decode). Every
// stream must complete or be refused with RESOURCE_EXHAUSTED; it prints
// the outcomes, the peak RSS, and checks the rows acknowledged are there.
func BenchmarkCrowdIngest(b *testing.B) {
	srv := crowdServer(b)
	admin := open(b, srv.URI())
	admin.exec(b, "CREATE DATABASE bench")
	admin.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, "", ""))
	rec := makeBatch(0, 670_000, 3) // about 48 MiB
	defer rec.Release()
	var size int64
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				size += int64(buf.Len())
			}
		}
	}
	b.Logf("batch: %d rows, %d MiB", rec.NumRows(), size>>20)
	peakRSS := sampleRSS(srv)
	var k crowdKind
	var acked atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 32 {
		c := openWith(b, srv.URI(), map[string]string{flightsql.OptionWithMaxMsgSize: strconv.Itoa(64 << 20)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec, rec})
			if err != nil {
				panic(err)
			}
			t0 := time.Now()
			err = c.tryIngest(rr)
			k.record(time.Since(t0), err)
			if err == nil {
				acked.Add(2 * rec.NumRows())
			} else {
				b.Log(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	peak := peakRSS()
	b.Log(k.line("48MiB x 2"))
	got := mustScalar(b, admin, `SELECT count(*) FROM bench."t$rt"`)
	b.Logf("acknowledged rows %d, in t$rt %d; peak RssAnon %d MiB; server alive %v", acked.Load(), int64(got), peak>>20, !srv.Exited())
	if srv.Exited() {
		b.Fatal("the server died")
	}
	if int64(got) != acked.Load() {
		b.Fatalf("acknowledged %d rows, t$rt has %d", acked.Load(), int64(got))
	}
	for code := range k.refused {
		if code != "ResourceExhausted" {
			b.Errorf("a stream failed with %s, not RESOURCE_EXHAUSTED", code)
		}
	}
	b.ReportMetric(float64(peak>>20), "peak-rss-MiB")
}

// openWith is open with more ADBC database options.
func openWith(b testing.TB, uri string, opts map[string]string) *conn {
	opts[adbc.OptionKeyURI] = uri
	db, err := flightsql.NewDriver(memory.DefaultAllocator).NewDatabase(opts)
	if err != nil {
		b.Fatal(err)
	}
	cn, err := db.Open(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cn.Close(); db.Close() })
	return &conn{db: db, conn: cn}
}

// BenchmarkCrowdStalled (make bench-load): 16 clients start a SELECT * of
// a 2M-row table and stop reading, holding the long lane's slots until
// --stall-timeout; meanwhile 8 clients run point queries of t$rt for
// FLIGHTD_LOAD_SECONDS / 3. Before lanes, every point query of the others
// was refused. It prints the point queries' p50/p99 and failures and the
// server's peak RSS.
func BenchmarkCrowdStalled(b *testing.B) {
	secs := loadSeconds()
	const rows = 2_000_000
	srv, admin, tmpl := crowdTable(b, rows)
	defer release(tmpl)
	peakRSS := sampleRSS(srv)
	cl, err := aflightsql.NewClient(srv.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 16 {
		info, err := cl.Execute(ctx, `SELECT * FROM bench."t$rt"`)
		if err != nil {
			b.Fatal(err)
		}
		r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			b.Fatal(err)
		}
		r.Next() // and no further
		defer r.Release()
	}
	stalled := mustScalar(b, admin, `SELECT count(*) FROM sys.statements WHERE lane = 'long'`)
	var point crowdKind
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Duration(secs/3) * time.Second)
	for i := range 8 {
		c := open(b, srv.URI())
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			for time.Now().Before(deadline) {
				t0 := time.Now()
				n, err := c.tryQuery(fmt.Sprintf(`SELECT * FROM bench."t$rt" WHERE id = %d`, rng.Int64N(rows)))
				if err == nil && n != 1 {
					err = fmt.Errorf("point query: %d rows", n)
				}
				point.record(time.Since(t0), err)
			}
		}()
	}
	wg.Wait()
	peak := peakRSS()
	b.Logf("%d long statements stalled; %s; peak RssAnon %d MiB", int64(stalled), point.line("point t$rt"), peak>>20)
	if len(point.lat) > 0 {
		p50, p99 := quantiles(point.lat)
		b.ReportMetric(p50, "point-p50-ms")
		b.ReportMetric(p99, "point-p99-ms")
	}
	b.ReportMetric(float64(peak>>20), "peak-rss-MiB")
}
