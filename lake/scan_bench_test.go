package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/bufpool"
	"github.com/flightd/flightd/lake/paimontype"
)

// BenchmarkScanDecode: the whole-table scan of a primary-key table of the
// read benchmark's 8 columns (bench/readpath_bench_test.go) and 4 buckets,
// one file per bucket (read without merging), LAKE_SCAN_ROWS rows
// (default 2M), with 1 and 2 workers. It reports rows/s and CPU-seconds
// per million rows (this process, all goroutines, GC included): the cost
// of decoding Parquet into Arrow, which bounds every read of the lake.
func BenchmarkScanDecode(b *testing.B) {
	ctx := context.Background()
	n := 2_000_000
	if s := os.Getenv("LAKE_SCAN_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	c, err := OpenCatalog(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := c.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	var cols []paimontype.Column
	for _, col := range []struct{ n, t string }{{"id", "BIGINT NOT NULL"}, {"k", "INT"}, {"x", "DOUBLE"}, {"y", "DOUBLE"},
		{"customer", "STRING"}, {"token", "STRING"}, {"ts", "TIMESTAMP(6)"}, {"amount", "DECIMAL(10, 2)"}} {
		dt, err := paimontype.ParseType(col.t)
		if err != nil {
			b.Fatal(err)
		}
		cols = append(cols, paimontype.Column{Name: col.n, Type: dt})
	}
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: cols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "4"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	w := tb.NewWrite(ctx)
	const chunk = 250_000
	for start := 0; start < n; start += chunk {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, tb.Schema().ArrowSchema())
		m := min(chunk, n-start)
		for i := 0; i < m; i++ {
			id := int64(start + i)
			rb.Field(0).(*array.Int64Builder).Append(id)
			rb.Field(1).(*array.Int32Builder).Append(rng.Int32N(1000))
			rb.Field(2).(*array.Float64Builder).Append(rng.Float64())
			rb.Field(3).(*array.Float64Builder).Append(rng.NormFloat64())
			rb.Field(4).(*array.StringBuilder).Append("customer-" + strconv.Itoa(rng.IntN(50_000)))
			rb.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("%016x", rng.Uint64()))
			rb.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id))
			rb.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(10_000_000)))
		}
		rec := rb.NewRecordBatch()
		rb.Release()
		writeByBucket(b, tb, w, rec, func(i int64) int64 { return int64(start) + i })
		rec.Release()
	}
	snap, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1, ExpectedLatest: 0})
	if err != nil {
		b.Fatal(err)
	}
	// Keeping the row kinds (t$audit_log, t$rt of a sequence-field table):
	// each bucket is one file, read raw, against merged as before.
	for _, merged := range []bool{false, true} {
		b.Run(fmt.Sprintf("keep-kinds/merged=%v", merged), func(b *testing.B) {
			defer func(old bool) { mergeKeptKinds = old }(mergeKeptKinds)
			mergeKeptKinds = merged
			for b.Loop() {
				r, err := tb.ScanWith(ctx, snap, ScanOptions{KeepKinds: true}, ScanTuning{Workers: 2})
				if err != nil {
					b.Fatal(err)
				}
				var got int64
				for r.Next() {
					got += r.RecordBatch().NumRows()
				}
				if err := r.Err(); err != nil || got != int64(n) {
					b.Fatalf("scan: %d rows, %v", got, err)
				}
				r.Release()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	for _, cols := range [][]string{nil, {"x"}, {"id"}} {
		for _, workers := range []int{1, 2, -2} {
			name := fmt.Sprintf("workers=%d", workers)
			if workers < 0 {
				name = fmt.Sprintf("workers=%d/unordered", -workers)
			}
			if cols != nil {
				name = "columns=" + cols[0] + "/" + name
			}
			b.Run(name, func(b *testing.B) {
				cpu := time.Duration(0)
				for b.Loop() {
					start := cpuTime(b)
					r, err := tb.ScanWith(ctx, snap, ScanOptions{Columns: cols}, ScanTuning{Workers: max(workers, -workers), Unordered: workers < 0})
					if err != nil {
						b.Fatal(err)
					}
					var got int64
					for r.Next() {
						got += r.RecordBatch().NumRows()
					}
					if err := r.Err(); err != nil || got != int64(n) {
						b.Fatalf("scan: %d rows, %v", got, err)
					}
					r.Release()
					cpu += cpuTime(b) - start
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(cpu.Seconds()/float64(b.N)/(float64(n)/1e6), "cpu-s/Mrows")
			})
		}
	}
	// A union read's lake side with 1% of the keys in the log (spread over
	// all of them, as bench/readpath_bench_test.go upserts), reading x, the
	// column of an aggregate: the rows dropped by position from the files'
	// cached keys (exclude), or by decoding the key column and filtering
	// each batch by it (filter, union.LogMerge.LakeFilter before), against
	// reading x alone (none, a read of t); with Go's allocator and with the
	// buffer pool the server scans with.
	var logKeys []int64
	for i := int64(0); i < int64(n); i += 100 {
		logKeys = append(logKeys, i+int64(uint64(i)*2654435761%100))
	}
	for _, alloc := range []string{"go", "pool"} {
		for _, how := range []string{"none", "exclude", "exclude-churn", "filter"} {
			b.Run("union/"+how+"/alloc="+alloc, func(b *testing.B) {
				tune := ScanTuning{Workers: 2, Allocator: memory.DefaultAllocator}
				cols := []string{"x"}
				if alloc == "pool" {
					tune.Allocator = bufpool.New()
				}
				want := int64(n - len(logKeys))
				switch how {
				case "none":
					want = int64(n)
				case "exclude":
					tune.Exclude = &KeySet{All: logKeys}
				case "exclude-churn":
					// Each read sees a log whose every row group's keys
					// changed (one key in twenty moved to its neighbour),
					// so no remembered positions are reused.
					tune.Exclude = &KeySet{All: slices.Clone(logKeys)}
				default:
					cols = []string{"id", "x"}
					tune.Transform = func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
						keys, err := keyValues(rec.Column(0))
						if err != nil {
							return nil, err
						}
						keep := make([]bool, len(keys))
						for i, k := range keys {
							_, found := slices.BinarySearch(logKeys, k)
							keep[i] = !found
						}
						return arrowutil.FilterRecord(ctx, tune.Allocator, rec, keep)
					}
				}
				cpu := time.Duration(0)
				round := 0
				for b.Loop() {
					if how == "exclude-churn" {
						round++
						keys := tune.Exclude.All
						for i := round % 20; i < len(keys); i += 20 {
							if i+1 == len(keys) || keys[i]+1 < keys[i+1] {
								keys[i]++
							} else if i == 0 || keys[i]-1 > keys[i-1] {
								keys[i]--
							}
						}
					}
					start := cpuTime(b)
					r, err := tb.ScanWith(ctx, snap, ScanOptions{Columns: cols}, tune)
					if err != nil {
						b.Fatal(err)
					}
					var got int64
					for r.Next() {
						got += r.RecordBatch().NumRows()
					}
					if err := r.Err(); err != nil || got != want {
						b.Fatalf("scan: %d rows, want %d, %v", got, want, err)
					}
					r.Release()
					cpu += cpuTime(b) - start
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(cpu.Seconds()/float64(b.N)/(float64(n)/1e6), "cpu-s/Mrows")
			})
		}
	}
}

// writeByBucket writes rec's rows as inserts, each to its bucket, with
// sequence number seq(row).
func writeByBucket(b testing.TB, tb *Table, w *Write, rec arrow.RecordBatch, seq func(row int64) int64) {
	ctx := context.Background()
	buckets, err := tb.Buckets(rec)
	if err != nil {
		b.Fatal(err)
	}
	byBucket := map[int32][]int64{}
	for i, bk := range buckets {
		byBucket[bk] = append(byBucket[bk], int64(i))
	}
	for bk, idx := range byBucket {
		sub, err := takeRecord(ctx, rec, idx, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		seqs := make([]int64, len(idx))
		for i := range seqs {
			seqs[i] = seq(idx[i])
		}
		if err := w.Write(ctx, bk, sub, make([]RowKind, len(idx)), seqs); err != nil {
			b.Fatal(err)
		}
		sub.Release()
	}
}
