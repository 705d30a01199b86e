package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/testserver"
)

const batchRows = 10_000

// eightCols is the benchmark table: 8 mixed columns.
var eightCols = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s1", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s2", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

const eightColsDDL = `(id BIGINT, k INT, x DOUBLE, y DOUBLE, s1 STRING, s2 STRING, ts TIMESTAMP(6), flag BOOLEAN%s)%s`

// makeBatch builds rows [start, start+n) from a seed.
func makeBatch(start int64, n int, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, uint64(start)))
	b := array.NewRecordBuilder(memory.DefaultAllocator, eightCols)
	defer b.Release()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := 0; i < n; i++ {
		id := start + int64(i)
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int32Builder).Append(rng.Int32N(1000))
		b.Field(2).(*array.Float64Builder).Append(rng.Float64())
		b.Field(3).(*array.Float64Builder).Append(rng.NormFloat64())
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("customer-%d", rng.IntN(50_000)))
		b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("%x", rng.Uint64()))
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id*1000))
		b.Field(7).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
	}
	return b.NewRecordBatch()
}

type conn struct {
	db   adbc.Database
	conn adbc.Connection
}

func open(b testing.TB, uri string) *conn {
	drv := flightsql.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: uri})
	if err != nil {
		b.Fatal(err)
	}
	cn, err := db.Open(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	c := &conn{db: db, conn: cn}
	b.Cleanup(func() { cn.Close(); db.Close() })
	return c
}

func (c *conn) exec(b testing.TB, sql string) {
	if _, err := c.tryExec(sql); err != nil {
		b.Fatal(sql, err)
	}
}

// ingestStream sends batches as one ADBC bulk ingest (one DoPut stream),
// acknowledged once, when all are durable.
func (c *conn) ingestStream(b testing.TB, table string, batches []arrow.RecordBatch) {
	rr, err := array.NewRecordReader(batches[0].Schema(), batches)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Release()
	c.ingestReader(b, table, rr)
}

// ingestReader sends what rr yields as one ADBC bulk ingest (one DoPut
// stream), acknowledged once, when all of it is durable.
func (c *conn) ingestReader(b testing.TB, table string, rr array.RecordReader) {
	st, _ := c.conn.NewStatement()
	defer st.Close()
	_ = st.SetOption(adbc.OptionKeyIngestTargetTable, table)
	_ = st.SetOption(adbc.OptionValueIngestTargetDBSchema, "bench")
	_ = st.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeAppend)
	if err := st.BindStream(context.Background(), rr); err != nil {
		b.Fatal(err)
	}
	if _, err := st.ExecuteUpdate(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func (c *conn) ingest(b testing.TB, table string, rec arrow.RecordBatch) {
	st, _ := c.conn.NewStatement()
	defer st.Close()
	_ = st.SetOption(adbc.OptionKeyIngestTargetTable, table)
	_ = st.SetOption(adbc.OptionValueIngestTargetDBSchema, "bench")
	_ = st.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeAppend)
	if err := st.Bind(context.Background(), rec); err != nil {
		b.Fatal(err)
	}
	if _, err := st.ExecuteUpdate(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// queryRows runs sql and returns the rows it read.
func (c *conn) queryRows(b testing.TB, sql string) int64 {
	n, err := c.tryQuery(sql)
	if err != nil {
		b.Fatal(sql, err)
	}
	return n
}

// BenchmarkIngest: ADBC bulk ingest of 10k-row, 8-column batches from 1 or
// 4 concurrent clients, into each log of FLIGHTD_BENCH_LOGS (benchLogs). ack=batch sends each batch as its own ingest call
// (a durable acknowledgement per batch, 1M rows); ack=stream sends each
// client's share as one ingest stream (10M rows), as adbc_ingest of a large
// table does.
func BenchmarkIngest(b *testing.B) {
	for _, tc := range []struct {
		name, opts string
	}{
		{"table=append", ""},
		{"table=pk4", ", PRIMARY KEY (id) NOT ENFORCED"},
	} {
		for _, mode := range []struct {
			name  string
			total int
		}{{"ack=batch", 1_000_000}, {"ack=stream", 10_000_000}} {
			for _, clients := range []int{1, 4} {
				for _, log := range benchLogs() {
					name := fmt.Sprintf("%s/%s/clients=%d/rows=%.0e", tc.name, mode.name, clients, float64(mode.total))
					if log != "badger" || len(benchLogs()) > 1 {
						name += "/log=" + log
					}
					b.Run(name, func(b *testing.B) {
						srv := testserver.Start(b, b.TempDir(), append([]string{"--tiering-interval", "1h", "--log-level", "warn"}, logArgs(b, log)...)...)
						c := open(b, srv.URI())
						c.exec(b, "CREATE DATABASE bench")
						with := ""
						if tc.opts != "" {
							with = " WITH ('bucket' = '4')"
						}
						c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, tc.opts, with))
						total := mode.total
						batches := make([]arrow.RecordBatch, total/batchRows)
						for i := range batches {
							batches[i] = makeBatch(int64(i*batchRows), batchRows, 1)
						}
						b.Cleanup(func() {
							for _, r := range batches {
								r.Release()
							}
						})
						conns := make([]*conn, clients)
						for i := range conns {
							conns[i] = open(b, srv.URI())
						}
						b.ResetTimer()
						var rows int64
						for b.Loop() {
							var wg sync.WaitGroup
							for w, cn := range conns {
								wg.Add(1)
								go func(w int, cn *conn) {
									defer wg.Done()
									var mine []arrow.RecordBatch
									for i := w; i < len(batches); i += clients {
										mine = append(mine, batches[i])
									}
									if mode.name == "ack=stream" {
										cn.ingestStream(b, "t", mine)
										return
									}
									for _, rec := range mine {
										cn.ingest(b, "t", rec)
									}
								}(w, cn)
							}
							wg.Wait()
							rows += int64(total)
						}
						b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
						b.StopTimer()
						want := int64(10) // upserts
						if tc.opts == "" {
							want = 10 * rows / int64(total) // every append kept
						}
						if got := c.queryRows(b, `SELECT * FROM bench."t$rt" WHERE id < 10`); got != want {
							b.Fatalf("t$rt has %d rows with id < 10, want %d", got, want)
						}
					})
				}
			}
		}
	}
}

// BenchmarkReadRealtime: the rows of t$rt (1M rows, all still in the log)
// fetched through ADBC, and an aggregate over them; the same rows in a
// table whose versions are ordered by 'sequence.field' (s$rt) merge by a
// comparison of the field instead of by arrival.
func BenchmarkReadRealtime(b *testing.B) {
	srv := testserver.Start(b, b.TempDir(), "--tiering-interval", "1h", "--log-level", "warn")
	c := open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4')"))
	c.exec(b, "CREATE TABLE bench.s "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4', 'sequence.field' = 'ts')"))
	const total = 1_000_000
	for i := 0; i < total/batchRows; i++ {
		rec := makeBatch(int64(i*batchRows), batchRows, 1)
		c.ingest(b, "t", rec)
		c.ingest(b, "s", rec)
		rec.Release()
	}
	for _, q := range []struct{ name, sql string }{
		{"query=select-star", `SELECT * FROM bench."t$rt"`},
		{"query=group-by", `SELECT k, count(*), avg(x) FROM bench."t$rt" GROUP BY k`},
		{"table=seq/query=select-star", `SELECT * FROM bench."s$rt"`},
	} {
		b.Run(q.name+"/rows=1e6", func(b *testing.B) {
			for b.Loop() {
				c.queryRows(b, q.sql)
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
