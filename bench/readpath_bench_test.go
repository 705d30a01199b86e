package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/testserver"
)

// BenchmarkReadPath measures the read path end to end, through the real
// binary and the ADBC Go driver, over a primary-key table with several
// data files per bucket and 1% of its rows waiting in the log, and
// compares it with DuckDB reading the same Parquet files in the same run.
// Run it with `make bench-read` (FLIGHTD_READ_ROWS=10000000 for the
// issue's size; -v shows how the table was loaded).
//
// The table: FLIGHTD_READ_ROWS rows (default 1,000,000; the figure
// is 10,000,000) of the 8 columns the other benchmarks use, primary key
// id, 4 buckets, loaded by ADBC ingest streams of 10k-row batches in three
// parts with a tiering round after each (the table's lakestream.freshness
// is lowered to 1 s until sys.tiering shows no lag, then raised to 1 h
// again), so each bucket holds three level-0 files and compaction is left
// as the server does it (it compacts a bucket at 5 files). Then 1% of the
// keys are upserted with other values and stay in the log: t reads the
// lake, t$rt merges those rows over it.
//
// Sub-benchmarks, each reporting its measures with units and logging a
// one-line summary:
//
//   - query=select-star, table=t and table=t$rt: SELECT * fetched through
//     ADBC: rows/s, time to first batch (from the call that runs the
//     statement to the first batch the client holds), the server's CPU
//     over the read (/proc/<pid>/stat) in cores and in CPU-seconds per
//     million rows, and the server's peak anonymous RSS during the read;
//     t$rt also its ratio to t.
//   - reference=duckdb: DuckDB's read_parquet of the lake's data files
//     (the 8 value columns) into Arrow, 2 threads: rows/s and CPU-seconds
//     per million rows, and flightd's t relative to both (on a shared
//     machine the CPU ratio is the steadier one).
//   - reference=duckdb-count-sum: DuckDB's SELECT count(*), sum(x)
//     of read_parquet of the same files, 2 threads, in its own process.
//   - query=count-sum: SELECT count(*), sum(x) over t and t$rt: seconds,
//     rows/s and the time relative to DuckDB's.
//   - lookup: FLIGHTD_READ_LOOKUPS (default 2,000) sequential point
//     lookups SELECT * FROM t$rt WHERE id = ? (one prepared statement,
//     each key bound), random existing keys, or as many as fit in
//     FLIGHTD_READ_LOOKUP_SECONDS (default 30) where lookups are slow:
//     p50/p99 latency and server CPU per lookup; load=0 on an idle
//     server, then while another
//     process (the load generator of loadgen_test.go) ingests
//     FLIGHTD_READ_LOAD rows/s (default 500,000) in 10k-row batches into
//     an append table tiered every FLIGHTD_READ_LOAD_FRESHNESS (default
//     5s, so that the short measurement spans rounds of the loaded table
//     as a steady 30 s cycle would in proportion); under load the server's
//     CPU is mostly the load's, so it is reported as cores, not per lookup.
//   - ingest, table=append and table=pk4: FLIGHTD_READ_ROWS rows in 10k-row
//     batches over one ADBC ingest stream into a new table (not tiered
//     meanwhile): rows/s.
//
// Peak memory is RssAnon of /proc/<pid>/status sampled every 5 ms during
// the read, its largest value and the growth over the value before it
// began. VmHWM with a reset (writing 5 to /proc/<pid>/clear_refs) would
// catch a peak between samples, but it counts file-backed pages too (the
// memory-mapped files of the log and of Badger, which the kernel may drop
// at will), and RssAnon is what the other benchmarks report (testserver's
// RSS). A peak between samples is rarely missed: the Go runtime returns
// freed heap pages to the kernel over seconds, not at once. For the same
// reason a read's peak includes heap that loading, tiering or the read
// before it left mapped: the peak bounds what the read needed, and the
// growth is how much more the server had to map for it.
//
// The reference: bench/ does not link DuckDB (the engine package is the
// only one that does, so the other packages' tests build in seconds), and
// the test venv does not have DuckDB's Python package (requirements-
// test.txt); adding it would bring a second DuckDB, of another version
// than the server's. So the reference is bench/duckref, a small command
// built with the same duckdb-go module that flightd links (-tags
// duckdb_arrow): the benchmark runs it on the table's files, it times the
// query from its start to its last Arrow batch in its own process, three
// times, and the benchmark takes the median run. $FLIGHTD_DUCKREF_BIN names a built one (make
// bench-read builds bin/duckref); else it is built once per run. The files
// are those of the table's directory; since the three parts hold disjoint
// keys, the rows DuckDB reads equal the table's exactly when no file is
// there that the snapshot no longer names, which the benchmark checks.
//
// The benchmark asserts correctness only: row counts, that each lookup
// returns its key, that the upserts stayed in the log.
func BenchmarkReadPath(b *testing.B) {
	n := int64(envInt("FLIGHTD_READ_ROWS", 1_000_000))
	if n < 100 {
		b.Fatalf("FLIGHTD_READ_ROWS=%d: want at least 100 rows (1%% of them are upserted)", n)
	}
	lookups := envInt("FLIGHTD_READ_LOOKUPS", 2000)
	lookupBudget := time.Duration(envInt("FLIGHTD_READ_LOOKUP_SECONDS", 30)) * time.Second
	loadRate := envInt("FLIGHTD_READ_LOAD", 500_000)
	srv, c, loadTime, tierTime := loadReadTable(b, n)
	tmpl := templates(1)
	defer release(tmpl)
	files, err := filepath.Glob(filepath.Join(srv.DataDir, "warehouse", "bench.db", "t", "bucket-*", "*.parquet"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no data files of bench.t in the warehouse (%v)", err)
	}
	// 1% of the keys, spread over all of them, upserted with other values.
	upserts := n / 100
	utmpl := templates(2)
	defer release(utmpl)
	c.ingestReader(b, "t", newGenReader(utmpl, 0, upserts, func(i int64) int64 { return i*100 + int64(uint64(i)*2654435761%100) }))
	if lag := tableLag(b, c, "t"); lag != upserts {
		b.Fatalf("bench.t: %d rows in the log after %d upserts, want them all there", lag, upserts)
	}
	for _, tbl := range []string{`bench.t`, `bench."t$rt"`} {
		if got := mustScalar(b, c, "SELECT count(*) FROM "+tbl); int64(got) != n {
			b.Fatalf("%s has %.0f rows, want %d", tbl, got, n)
		}
	}
	b.Logf("table: %d rows loaded in 3 parts at %.2f M rows/s, each part tiered in %.1f s on average; %d data files in 4 buckets, %d upserts in the log",
		n, float64(n)/loadTime.Seconds()/1e6, tierTime.Seconds()/3, len(files), upserts)
	rowsName := fmt.Sprintf("rows=%.0e", float64(n))

	var tRate, tCPU float64 // rows/s and server CPU-s per M rows of SELECT * FROM t, for the ratios
	for _, q := range []struct{ table, sql string }{
		{"t", `SELECT * FROM bench.t`},
		{"t$rt", `SELECT * FROM bench."t$rt"`},
	} {
		b.Run("query=select-star/table="+q.table+"/"+rowsName, func(b *testing.B) {
			var m readMeasure
			for b.Loop() {
				m.add(b, srv, c, q.sql, n)
			}
			rate, cpu := m.report(b)
			if q.table == "t" {
				tRate, tCPU = rate, cpu
			} else if tRate > 0 {
				b.ReportMetric(rate/tRate, "rt/t")
			}
			b.Logf("SELECT * FROM %s: %s", q.table, m.summary())
			profileWhile(b, "select-star-"+q.table, func() { c.timedQuery(b, q.sql) })
		})
	}

	b.Run("reference=duckdb/threads=2/"+rowsName, func(b *testing.B) {
		bin := duckrefBinary(b)
		var secs, cpu float64
		runs := 0
		for b.Loop() {
			r := runDuckref(b, bin, files, "id, k, x, y, s1, s2, ts, flag")
			if r.Rows != n {
				b.Fatalf("DuckDB read %d rows from the %d files of bench.t, the table has %d: the directory holds files the snapshot does not name", r.Rows, len(files), n)
			}
			i := medianIndex(r.Seconds)
			secs += r.Seconds[i]
			cpu += r.CPU[i]
			runs++
		}
		rate := float64(n) * float64(runs) / secs
		b.ReportMetric(rate, "rows/s")
		cpuPerM := cpu / (float64(n) * float64(runs) / 1e6)
		b.ReportMetric(cpuPerM, "cpu-s/Mrows")
		vs := ""
		if tRate > 0 {
			b.ReportMetric(tRate/rate, "t/duckdb")
			b.ReportMetric(tCPU/cpuPerM, "t/duckdb-cpu")
			vs = fmt.Sprintf("; flightd's t at %.2f of its rate, %.2f times its CPU", tRate/rate, tCPU/cpuPerM)
		}
		b.Logf("DuckDB read_parquet into Arrow, 2 threads, in process: %.2f M rows/s, %.3f CPU-s per M rows%s", rate/1e6, cpuPerM, vs)
	})

	// DuckDB aggregating the same files in its own process, the reference
	// of the aggregates (count from the files' metadata, sum of one
	// column). The table's parts hold disjoint keys, so the files hold
	// each key once and the two answer the same.
	var duckAgg float64
	b.Run("reference=duckdb-count-sum/threads=2/"+rowsName, func(b *testing.B) {
		bin := duckrefBinary(b)
		var secs float64
		runs := 0
		for b.Loop() {
			r := runDuckref(b, bin, files, "count(*), sum(x)")
			secs += r.Seconds[medianIndex(r.Seconds)]
			runs++
		}
		duckAgg = secs / float64(runs)
		b.ReportMetric(duckAgg, "s/query")
		b.Logf("DuckDB SELECT count(*), sum(x) FROM read_parquet(the table's files), 2 threads, in process: %.3f s", duckAgg)
	})

	for _, q := range []struct{ table, sql string }{
		{"t", `SELECT count(*), sum(x) FROM bench.t`},
		{"t$rt", `SELECT count(*), sum(x) FROM bench."t$rt"`},
	} {
		b.Run("query=count-sum/table="+q.table+"/"+rowsName, func(b *testing.B) {
			// The median of three runs, as the reference takes.
			var total, medians time.Duration
			runs := 0
			cpu0 := srv.CPUSeconds()
			for b.Loop() {
				var times [3]time.Duration
				for i := range times {
					start := time.Now()
					got := mustScalar(b, c, q.sql) // count(*), the first column
					times[i] = time.Since(start)
					total += times[i]
					if int64(got) != n {
						b.Fatalf("%s: count %.0f, want %d", q.sql, got, n)
					}
				}
				sort.Slice(times[:], func(i, j int) bool { return times[i] < times[j] })
				medians += times[1]
				runs++
			}
			secs := medians.Seconds() / float64(runs)
			cores := (srv.CPUSeconds() - cpu0) / total.Seconds()
			b.ReportMetric(secs, "s/query")
			b.ReportMetric(float64(n)/secs, "rows/s")
			b.ReportMetric(cores, "server-cores")
			vs := ""
			if duckAgg > 0 {
				b.ReportMetric(secs/duckAgg, "x-duckdb-time")
				vs = fmt.Sprintf(", %.2f times DuckDB's time", secs/duckAgg)
			}
			b.Logf("SELECT count(*), sum(x) FROM %s: %.3f s, %.2f M rows/s, server %.2f cores%s", q.table, secs, float64(n)/secs/1e6, cores, vs)
			profileWhile(b, "count-sum-"+q.table, func() { mustScalar(b, c, q.sql) })
		})
	}

	for _, load := range []int{0, loadRate} {
		b.Run(fmt.Sprintf("lookup/load=%d/%s", load, rowsName), func(b *testing.B) {
			var g *loadGen
			if load > 0 {
				c.exec(b, "CREATE TABLE bench.load "+fmt.Sprintf(eightColsDDL, "", " WITH ('lakestream.freshness' = '"+envStr("FLIGHTD_READ_LOAD_FRESHNESS", "5s")+"')"))
				g = startLoad(b, srv.URI(), "load", load)
				// Measure once the load is flowing: a second's worth has arrived.
				testserver.Eventually(b, time.Minute, func() error {
					if got := logEnd(b, c, "load"); got < int64(load) {
						return fmt.Errorf("bench.load: %d rows arrived, waiting for %d", got, load)
					}
					return nil
				})
			}
			st := c.prepareLookup(b, `SELECT * FROM bench."t$rt" WHERE id = ?`)
			defer st.close()
			rng := rand.New(rand.NewPCG(42, uint64(load)))
			var lat []time.Duration
			cpu0, t0 := srv.CPUSeconds(), time.Now()
			for b.Loop() {
				deadline := time.Now().Add(lookupBudget)
				for i := 0; i < lookups && time.Now().Before(deadline); i++ {
					key := rng.Int64N(n)
					start := time.Now()
					st.lookup(b, key)
					lat = append(lat, time.Since(start))
				}
			}
			cpu, wall := srv.CPUSeconds()-cpu0, time.Since(t0).Seconds()
			p50, p99 := quantiles(lat)
			b.ReportMetric(p50, "p50-ms")
			b.ReportMetric(p99, "p99-ms")
			b.ReportMetric(cpu/wall, "server-cores")
			if load == 0 {
				profileWhile(b, "lookup", func() { st.lookup(b, rng.Int64N(n)) })
				b.ReportMetric(cpu/float64(len(lat))*1000, "server-cpu-ms/lookup")
				b.Logf("%d lookups of t$rt by key, idle: p50 %.2f ms, p99 %.2f ms, server %.3f ms CPU a lookup", len(lat), p50, p99, cpu/float64(len(lat))*1000)
				return
			}
			reached := g.stop(b)
			b.ReportMetric(reached, "load-rows/s")
			c.exec(b, "DROP TABLE bench.load")
			b.Logf("%d lookups of t$rt by key, %.0f rows/s of other ingest: p50 %.2f ms, p99 %.2f ms, server %.2f cores", len(lat), reached, p50, p99, cpu/wall)
		})
	}

	for _, tc := range []struct{ name, desc, opts, with string }{
		{"append", "an append table", "", " WITH ('lakestream.freshness' = '1h')"},
		{"pk4", "a 4-bucket primary-key table", ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4', 'lakestream.freshness' = '1h')"},
	} {
		b.Run("ingest/table="+tc.name+"/"+rowsName, func(b *testing.B) {
			var total time.Duration
			runs := 0
			for b.Loop() {
				name := fmt.Sprintf("ingest_%s_%d", tc.name, runs)
				c.exec(b, "CREATE TABLE bench."+name+" "+fmt.Sprintf(eightColsDDL, tc.opts, tc.with))
				start := time.Now()
				c.ingestReader(b, name, newGenReader(tmpl, 0, n, func(i int64) int64 { return i }))
				total += time.Since(start)
				runs++
				if got := tableLag(b, c, name); got != n {
					b.Fatalf("bench.%s: %d rows in the log after ingesting %d", name, got, n)
				}
				c.exec(b, "DROP TABLE bench."+name)
			}
			rate := float64(n) * float64(runs) / total.Seconds()
			b.ReportMetric(rate, "rows/s")
			b.Logf("ingest into %s, one stream of 10k-row batches: %.2f M rows/s", tc.desc, rate/1e6)
		})
	}
}

// profileWhile, when FLIGHTD_READ_PROFILE names a directory (and
// FLIGHTD_READ_DEBUG_ADDR the server's --debug-addr), repeats run for
// FLIGHTD_READ_PROFILE_SECONDS (default 10) while it fetches the server's
// CPU profile into <dir>/<name>.pprof: where the server's cores go
// during one measure, apart from the measure itself.
func profileWhile(b *testing.B, name string, run func()) {
	dir, addr := os.Getenv("FLIGHTD_READ_PROFILE"), os.Getenv("FLIGHTD_READ_DEBUG_ADDR")
	if dir == "" || addr == "" {
		return
	}
	secs := envInt("FLIGHTD_READ_PROFILE_SECONDS", 10)
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, name+".pprof"))
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("profile %s: %v", name, err)
			}
			return
		default:
			run()
		}
	}
}

// readMeasure accumulates the reads of one query.
type readMeasure struct {
	rows        int64
	wall, first time.Duration
	runs        int
	cpu         float64
	peak, grow  int64 // largest RssAnon during a read, and its growth over the value before
}

// add runs sql once, fetching every batch, and checks it returned want rows.
func (m *readMeasure) add(b *testing.B, srv *testserver.Server, c *conn, sql string, want int64) {
	before := srv.RSS()
	peak := sampleRSS(srv)
	cpu0 := srv.CPUSeconds()
	rows, first, wall := c.timedQuery(b, sql)
	m.cpu += srv.CPUSeconds() - cpu0
	p := peak()
	if rows != want {
		b.Fatalf("%s: %d rows, want %d", sql, rows, want)
	}
	m.rows += rows
	m.wall += wall
	m.first += first
	m.runs++
	m.peak = max(m.peak, p)
	m.grow = max(m.grow, p-before)
}

// report reports the measures and returns the rate in rows/s and the
// server's CPU-seconds per million rows.
func (m *readMeasure) report(b *testing.B) (rate, cpuPerM float64) {
	rate = float64(m.rows) / m.wall.Seconds()
	cpuPerM = m.cpu / (float64(m.rows) / 1e6)
	b.ReportMetric(rate, "rows/s")
	b.ReportMetric(cpuPerM, "server-cpu-s/Mrows")
	b.ReportMetric(float64(m.first.Microseconds())/float64(m.runs)/1000, "first-batch-ms")
	b.ReportMetric(m.cpu/m.wall.Seconds(), "server-cores")
	b.ReportMetric(float64(m.peak)/(1<<20), "rss-peak-MiB")
	b.ReportMetric(float64(m.grow)/(1<<20), "rss-growth-MiB")
	return rate, cpuPerM
}

func (m *readMeasure) summary() string {
	return fmt.Sprintf("%.2f M rows/s, first batch %.1f ms, server %.2f cores (%.3f CPU-s per M rows), peak RssAnon %.0f MiB (+%.0f MiB during the read)",
		float64(m.rows)/m.wall.Seconds()/1e6, float64(m.first.Microseconds())/float64(m.runs)/1000, m.cpu/m.wall.Seconds(),
		m.cpu/(float64(m.rows)/1e6), float64(m.peak)/(1<<20), float64(m.grow)/(1<<20))
}

// sampleRSS samples the server's RssAnon every 5 ms until the returned
// function is called, which returns the largest value seen.
func sampleRSS(srv *testserver.Server) func() int64 {
	var peak atomic.Int64
	peak.Store(srv.RSS())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v := srv.RSS(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return max(peak.Load(), srv.RSS())
	}
}

// timedQuery runs sql and reads every batch: the rows, the time from the
// call until the first batch was in hand, and until the last.
func (c *conn) timedQuery(b testing.TB, sql string) (rows int64, first, total time.Duration) {
	start := time.Now()
	st, _ := c.conn.NewStatement()
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		b.Fatal(err)
	}
	r, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		b.Fatal(sql, err)
	}
	defer r.Release()
	for r.Next() {
		if rows == 0 {
			first = time.Since(start)
		}
		rows += r.RecordBatch().NumRows()
	}
	if err := r.Err(); err != nil {
		b.Fatal(sql, err)
	}
	return rows, first, time.Since(start)
}

// lookupStmt is a prepared point lookup with one BIGINT parameter.
type lookupStmt struct {
	st  adbc.Statement
	sql string
}

func (c *conn) prepareLookup(b testing.TB, sql string) *lookupStmt {
	st, err := c.conn.NewStatement()
	if err != nil {
		b.Fatal(err)
	}
	if err := st.SetSqlQuery(sql); err != nil {
		b.Fatal(err)
	}
	if err := st.Prepare(context.Background()); err != nil {
		b.Fatal(sql, err)
	}
	return &lookupStmt{st: st, sql: sql}
}

func (l *lookupStmt) close() { _ = l.st.Close() }

var keyParam = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

// lookup runs the statement for key and checks that it returned exactly
// that key's row.
func (l *lookupStmt) lookup(b testing.TB, key int64) {
	ctx := context.Background()
	bl := array.NewRecordBuilder(memory.DefaultAllocator, keyParam)
	bl.Field(0).(*array.Int64Builder).Append(key)
	rec := bl.NewRecordBatch()
	bl.Release()
	err := l.st.Bind(ctx, rec)
	rec.Release()
	if err != nil {
		b.Fatal(err)
	}
	r, _, err := l.st.ExecuteQuery(ctx)
	if err != nil {
		b.Fatal(l.sql, key, err)
	}
	defer r.Release()
	var got []int64
	for r.Next() {
		ids := r.RecordBatch().Column(0).(*array.Int64)
		got = append(got, ids.Int64Values()...)
	}
	if err := r.Err(); err != nil {
		b.Fatal(l.sql, key, err)
	}
	if len(got) != 1 || got[0] != key {
		b.Fatalf("%s with id %d returned ids %v, want just %d", l.sql, key, got, key)
	}
}

// loadReadTable starts a server holding bench.t: n rows of eight columns
// in a 4-bucket primary-key table, loaded in three ingest streams with a
// tiering round after each. It returns how long the loads and the rounds
// took.
func loadReadTable(b *testing.B, n int64) (srv *testserver.Server, c *conn, loadTime, tierTime time.Duration) {
	args := []string{"--tiering-interval", "1h", "--log-level", "warn"}
	if a := os.Getenv("FLIGHTD_READ_DEBUG_ADDR"); a != "" {
		args = append(args, "--debug-addr", a)
	}
	srv = testserver.Start(b, b.TempDir(), args...)
	c = open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED",
		" WITH ('bucket' = '4', 'lakestream.freshness' = '1h')"))
	tmpl := templates(1)
	defer release(tmpl)
	for p := int64(0); p < 3; p++ {
		start := time.Now()
		c.ingestReader(b, "t", newGenReader(tmpl, p*n/3, (p+1)*n/3, func(i int64) int64 { return i }))
		loaded := time.Now()
		tierNow(b, c, "t")
		loadTime += loaded.Sub(start)
		tierTime += time.Since(loaded)
	}
	return srv, c, loadTime, tierTime
}

// tierNow has bench.<table> tiered once: its freshness is lowered to 1 s
// until sys.tiering shows nothing of it left in the log, then raised to
// 1 h again (before the next pass could start another round: a round is
// due 1 s after the last one).
func tierNow(b *testing.B, c *conn, table string) {
	c.exec(b, "ALTER TABLE bench."+table+" SET ('lakestream.freshness' = '1s')")
	testserver.Eventually(b, 10*time.Minute, func() error {
		if lag := tableLag(b, c, table); lag > 0 {
			return fmt.Errorf("bench.%s: %d rows not tiered", table, lag)
		}
		return nil
	})
	c.exec(b, "ALTER TABLE bench."+table+" SET ('lakestream.freshness' = '1h')")
}

// tableLag is how many rows of bench.<table> the log holds that are not in
// the lake (sys.tiering).
func tableLag(b testing.TB, c *conn, table string) int64 {
	return int64(mustScalar(b, c, `SELECT coalesce(sum(lag_rows), 0) FROM sys.tiering WHERE database = 'bench' AND "table" = '`+table+`'`))
}

// logEnd is how many rows bench.<table>'s log has taken (sys.tiering).
func logEnd(b testing.TB, c *conn, table string) int64 {
	return int64(mustScalar(b, c, `SELECT coalesce(sum(log_end), 0) FROM sys.tiering WHERE database = 'bench' AND "table" = '`+table+`'`))
}

func mustScalar(b testing.TB, c *conn, sql string) float64 {
	v, err := c.scalar(sql)
	if err != nil {
		b.Fatal(sql, err)
	}
	return v
}

func quantiles(ds []time.Duration) (p50, p99 float64) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	return q(0.5), q(0.99)
}

// templates are 16 batches of makeBatch's rows (160k distinct rows of
// values) that genReader cycles through.
func templates(seed uint64) []arrow.RecordBatch {
	t := make([]arrow.RecordBatch, 16)
	for i := range t {
		t[i] = makeBatch(int64(i*batchRows), batchRows, seed)
	}
	return t
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// genReader yields rows [from, to) as 10k-row batches: the values of the
// templates in turn, with id(i) as row i's key. Making a batch costs only
// its id column, so an ingest stream of any size is sent at the speed of
// the client and server, not of generating rows, and without holding the
// rows in memory.
type genReader struct {
	refs     atomic.Int64
	tmpl     []arrow.RecordBatch
	next, to int64
	id       func(int64) int64
	cur      arrow.RecordBatch
}

func newGenReader(tmpl []arrow.RecordBatch, from, to int64, id func(int64) int64) *genReader {
	g := &genReader{tmpl: tmpl, next: from, to: to, id: id}
	g.refs.Store(1)
	return g
}

func (g *genReader) Retain() { g.refs.Add(1) }

func (g *genReader) Release() {
	if g.refs.Add(-1) == 0 && g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
}

func (g *genReader) Schema() *arrow.Schema          { return eightCols }
func (g *genReader) RecordBatch() arrow.RecordBatch { return g.cur }
func (g *genReader) Record() arrow.RecordBatch      { return g.cur }
func (g *genReader) Err() error                     { return nil }

func (g *genReader) Next() bool {
	if g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
	if g.next >= g.to {
		return false
	}
	rows := min(int64(batchRows), g.to-g.next)
	t := g.tmpl[int(g.next/batchRows)%len(g.tmpl)].NewSlice(0, rows)
	defer t.Release()
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	ib.Reserve(int(rows))
	for i := g.next; i < g.next+rows; i++ {
		ib.UnsafeAppend(g.id(i))
	}
	ids := ib.NewArray()
	defer ids.Release()
	cols := append([]arrow.Array{ids}, t.Columns()[1:]...)
	g.cur = array.NewRecordBatch(eightCols, cols, rows)
	g.next += rows
	return true
}

// duckref is what bench/duckref prints.
type duckref struct {
	Rows    int64     `json:"rows"`
	Seconds []float64 `json:"seconds"`
	CPU     []float64 `json:"cpu_seconds"`
}

// duckrefBinary returns $FLIGHTD_DUCKREF_BIN, or bench/duckref built into
// the benchmark's temporary directory (it links DuckDB: a minute or two
// the first time, seconds once the build cache has DuckDB).
func duckrefBinary(b *testing.B) string {
	if p := os.Getenv("FLIGHTD_DUCKREF_BIN"); p != "" {
		return p
	}
	bin := filepath.Join(b.TempDir(), "duckref")
	out, err := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", bin, "github.com/flightd/flightd/bench/duckref").CombinedOutput()
	if err != nil {
		b.Fatalf("build bench/duckref (set FLIGHTD_DUCKREF_BIN to use a built one): %v\n%s", err, out)
	}
	return bin
}

// duckrefRuns: the reference reads the files this many times in one
// process and the benchmark takes the median run, so that a fresh
// process's first query (thread pool, allocator) weighs no more than in
// the long-running server it is compared with.
const duckrefRuns = 3

// runDuckref reads files with DuckDB on 2 threads, duckrefRuns times.
func runDuckref(b *testing.B, bin string, files []string, columns string) duckref {
	args := append([]string{"-threads", "2", "-runs", fmt.Sprint(duckrefRuns), "-columns", columns}, files...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v", bin, err)
	}
	var r duckref
	if err := json.Unmarshal(out, &r); err != nil || len(r.Seconds) != duckrefRuns || len(r.CPU) != duckrefRuns {
		b.Fatalf("%s printed %q, want its JSON result of %d runs (%v)", bin, out, duckrefRuns, err)
	}
	return r
}

// medianIndex is the index of the median of xs (the lower one of an even count).
func medianIndex(xs []float64) int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	return idx[(len(xs)-1)/2]
}
