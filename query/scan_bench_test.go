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
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
)

// BenchmarkLakeScan compares flightd's lake scan of a primary-key table
// (8 columns, 4 buckets) into Arrow with DuckDB's read_parquet of the same
// files into Arrow, in the same process, on 1 and 2 threads (flightd's scan
// with as many workers). Two layouts: files=1, one file per bucket (the
// state after compaction, read without merging), and files=3, three
// overlapping level-0 files per bucket (keys interleaved, id mod 3: every
// bucket is merged). Rows: $FLIGHTD_SCAN_ROWS (default 1e6; the lake
// issue's figure is 1e7).
func BenchmarkLakeScan(b *testing.B) {
	rows := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("FLIGHTD_SCAN_ROWS")); err == nil && n > 0 {
		rows = n
	}
	for _, files := range []int{1, 3} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) { benchLakeScan(b, rows, files) })
	}
}

func benchLakeScan(b *testing.B, rows, filesPerBucket int) {
	ctx := context.Background()
	wh := b.TempDir()
	cat, err := lake.OpenCatalog(wh)
	if err != nil {
		b.Fatal(err)
	}
	if err := cat.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	var cols []paimontype.Column
	for _, c := range []struct{ n, t string }{{"id", "BIGINT NOT NULL"}, {"k", "INT"}, {"x", "DOUBLE"}, {"y", "DOUBLE"},
		{"customer", "STRING"}, {"token", "STRING"}, {"ts", "TIMESTAMP(6)"}, {"amount", "DECIMAL(10, 2)"}} {
		dt, err := paimontype.ParseType(c.t)
		if err != nil {
			b.Fatal(err)
		}
		cols = append(cols, paimontype.Column{Name: c.n, Type: dt})
	}
	t, err := cat.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: cols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "4"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	sc := t.Schema().ArrowSchema()
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	const chunk = 100_000
	var snap *lake.Snapshot
	for file := 0; file < filesPerBucket; file++ {
		w := t.NewWrite(ctx)
		for start := 0; start < rows; start += chunk {
			bl := array.NewRecordBuilder(memory.DefaultAllocator, sc)
			n := min(chunk, rows-start)
			for i := 0; i < n; i++ {
				id := int64(start + i)
				bl.Field(0).(*array.Int64Builder).Append(id)
				bl.Field(1).(*array.Int32Builder).Append(rng.Int32N(1000))
				bl.Field(2).(*array.Float64Builder).Append(rng.Float64())
				bl.Field(3).(*array.Float64Builder).Append(rng.NormFloat64())
				bl.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("customer-%d", rng.IntN(50_000)))
				bl.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("%016x", rng.Uint64()))
				bl.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id))
				bl.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(10_000_000)))
			}
			rec := bl.NewRecordBatch()
			bl.Release()
			buckets, err := t.Buckets(rec)
			if err != nil {
				b.Fatal(err)
			}
			byBucket := map[int32][]int{}
			for i, bk := range buckets {
				if (start+i)%filesPerBucket == file {
					byBucket[bk] = append(byBucket[bk], i)
				}
			}
			for bk, idx := range byBucket {
				part := takeRows(rec, idx)
				kinds := make([]lake.RowKind, len(idx))
				seqs := make([]int64, len(idx))
				for i := range seqs {
					seqs[i] = int64(start + idx[i])
				}
				if err := w.Write(ctx, bk, part, kinds, seqs); err != nil {
					b.Fatal(err)
				}
				part.Release()
			}
			rec.Release()
		}
		snap, err = w.Commit(ctx, lake.CommitOptions{CommitUser: "bench", Identifier: int64(file + 1), ExpectedLatest: int64(file)})
		if err != nil {
			b.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(wh, "db.db", "t", "bucket-*", "*.parquet"))
	if len(files) != 4*filesPerBucket {
		b.Fatalf("want %d files per bucket, found %d", filesPerBucket, len(files))
	}
	list := ""
	for i, f := range files {
		if i > 0 {
			list += ", "
		}
		list += "'" + f + "'"
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("reader=flightd/threads=%d/rows=%d", threads, rows), func(b *testing.B) {
			for b.Loop() {
				r, err := t.ScanWith(ctx, snap, lake.ScanOptions{}, lake.ScanTuning{Workers: threads})
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for r.Next() {
					n += r.RecordBatch().NumRows()
				}
				if err := r.Err(); err != nil || n != int64(rows) {
					b.Fatalf("scan: %d rows, %v", n, err)
				}
				r.Release()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run(fmt.Sprintf("reader=duckdb/threads=%d/rows=%d", threads, rows), func(b *testing.B) {
			c, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
				_, err := ex.ExecContext(ctx, fmt.Sprintf("SET threads = %d", threads), nil)
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
			for b.Loop() {
				r, err := ar.QueryContext(ctx, "SELECT * FROM read_parquet(["+list+"])")
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for r.Next() {
					n += r.RecordBatch().NumRows()
				}
				r.Release()
				if n != int64(rows) {
					b.Fatalf("duckdb read %d rows", n)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func takeRows(rec arrow.RecordBatch, idx []int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rec.Schema())
	defer b.Release()
	for c := 0; c < int(rec.NumCols()); c++ {
		col := rec.Column(c)
		for _, i := range idx {
			if err := b.Field(c).AppendValueFromString(col.ValueStr(i)); err != nil {
				panic(err)
			}
		}
	}
	return b.NewRecordBatch()
}
