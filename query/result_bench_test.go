//go:build duckdb_arrow

package query

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/internal/memguard"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
)

// BenchmarkResults runs statements DuckDB answers over a lake table of
// $FLIGHTD_RESULT_ROWS rows (default 2e6; 4 columns, append table, one
// bucket) through the engine, with results streamed as Arrow (path=arrow)
// and built from rows (path=rows), beside DuckDB aggregating read_parquet
// of the same files in the same process (path=parquet), all on 2 threads.
// peak-rss-MiB is the growth of resident memory while a result is read;
// query=generate reads rows DuckDB makes itself, without a scan.
func BenchmarkResults(b *testing.B) {
	rows := 2_000_000
	if n, err := strconv.Atoi(os.Getenv("FLIGHTD_RESULT_ROWS")); err == nil && n > 0 {
		rows = n
	}
	ctx := context.Background()
	dir := b.TempDir()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	if err != nil {
		b.Fatal(err)
	}
	if err := cat.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	var cols []paimontype.Column
	for _, c := range []struct{ n, t string }{{"id", "BIGINT"}, {"k", "INT"}, {"x", "DOUBLE"}, {"s", "STRING"}} {
		dt, err := paimontype.ParseType(c.t)
		if err != nil {
			b.Fatal(err)
		}
		cols = append(cols, paimontype.Column{Name: c.n, Type: dt})
	}
	t, err := cat.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: cols}, false)
	if err != nil {
		b.Fatal(err)
	}
	sc := t.Schema().ArrowSchema()
	w := t.NewWrite(ctx)
	rng := rand.New(rand.NewPCG(1, 2))
	const chunk = 500_000
	for start := 0; start < rows; start += chunk {
		bl := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := start; i < min(start+chunk, rows); i++ {
			bl.Field(0).(*array.Int64Builder).Append(int64(i))
			bl.Field(1).(*array.Int32Builder).Append(rng.Int32N(1000))
			bl.Field(2).(*array.Float64Builder).Append(rng.Float64())
			bl.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("customer-%d", rng.IntN(50_000)))
		}
		rec := bl.NewRecordBatch()
		bl.Release()
		if err := w.Write(ctx, 0, rec, nil, nil); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	if _, err := w.Commit(ctx, lake.CommitOptions{CommitUser: "bench", Identifier: 1}); err != nil {
		b.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "warehouse", "db.db", "t", "bucket-*", "*.parquet"))
	if len(files) == 0 {
		b.Fatal("no data files")
	}
	list := "'" + strings.Join(files, "', '") + "'"

	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	e, err := New(lakestream.New(cat, log, lakestream.Options{}), Options{Threads: 2, TempDir: filepath.Join(dir, "duckdb-tmp")})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()

	// read runs sql through the engine and returns the rows and the peak
	// growth of resident memory while they were read.
	read := func(b *testing.B, sql string) (int64, int64) {
		before := memguard.ResidentBytes()
		peak := before
		res, err := e.Execute(ctx, plan.Analyze(sql))
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for i := 0; res.Reader.Next(); i++ {
			n += res.Reader.RecordBatch().NumRows()
			if i%64 == 0 {
				peak = max(peak, memguard.ResidentBytes())
			}
		}
		peak = max(peak, memguard.ResidentBytes())
		if err := res.Reader.Err(); err != nil {
			b.Fatal(err)
		}
		res.Reader.Release()
		return n, peak - before
	}
	const agg = "SELECT count(*), sum(x), sum(k) FROM %s"
	const all = "SELECT id, k + 1 AS k1, x, s FROM %s" // an expression: DuckDB runs it
	// DuckDB's own rows, no scan: the memory a result holds.
	gen := fmt.Sprintf("SELECT range AS id, 'customer-' || range::VARCHAR AS s FROM range(%d) -- %%s", rows)
	for _, q := range []struct{ name, sql string }{{"agg", agg}, {"select", all}, {"generate", gen}} {
		for _, path := range []string{"arrow", "rows"} {
			b.Run(fmt.Sprintf("query=%s/path=%s/rows=%d", q.name, path, rows), func(b *testing.B) {
				e.forceRows.Store(path == "rows")
				defer e.forceRows.Store(false)
				var peak int64
				cpu := cpuSeconds()
				for b.Loop() {
					n, p := read(b, fmt.Sprintf(q.sql, "db.t"))
					peak = max(peak, p)
					if q.name != "agg" && n != int64(rows) {
						b.Fatalf("%d rows, want %d", n, rows)
					}
				}
				b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
			})
		}
		if q.name != "agg" {
			continue
		}
		b.Run(fmt.Sprintf("query=%s/path=parquet/rows=%d", q.name, rows), func(b *testing.B) {
			c, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
				_, err := ex.ExecContext(ctx, "SET threads = 2", nil)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			conn, err := c.Connect(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			ar, err := duckdb.NewArrowFromConn(conn)
			if err != nil {
				b.Fatal(err)
			}
			cpu := cpuSeconds()
			for b.Loop() {
				r, err := ar.QueryContext(ctx, fmt.Sprintf(q.sql, "read_parquet(["+list+"])"))
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
