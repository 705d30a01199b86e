package loadfmt

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/internal/resultfmt"
)

// benchSchema: 8 mixed columns, as bench/ ingests.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s1", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s2", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

func benchBatch(start int64, n int) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, uint64(start)))
	b := array.NewRecordBuilder(memory.DefaultAllocator, benchSchema)
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

// BenchmarkRead: reading 256k rows of 8 columns from each format into
// batches of the table's types (no server).
func BenchmarkRead(b *testing.B) {
	const total = 256 << 10
	var recs []arrow.RecordBatch
	for s := 0; s < total; s += 64 << 10 {
		recs = append(recs, benchBatch(int64(s), 64<<10))
	}
	dir := b.TempDir()
	write := func(name string, f resultfmt.Format) File {
		var buf bytes.Buffer
		w, err := resultfmt.New(f, &buf, benchSchema, resultfmt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		ff, _ := ForPath(path)
		return File{Path: path, Format: ff, Size: int64(buf.Len())}
	}
	files := map[string]File{"csv": write("r.csv", resultfmt.CSV), "jsonl": write("r.jsonl", resultfmt.JSONL)}
	path := filepath.Join(dir, "r.parquet")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	pw, err := pqarrow.NewFileWriter(benchSchema, fh, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		if err := pw.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		b.Fatal(err)
	}
	files["parquet"] = File{Path: path, Format: Parquet}
	for _, r := range recs {
		r.Release()
	}
	for _, format := range []string{"parquet", "csv", "jsonl"} {
		b.Run("format="+format, func(b *testing.B) {
			for b.Loop() {
				r, err := Open(context.Background(), files[format], Options{Table: benchSchema})
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for r.Next() {
					rec, _ := r.Batch()
					n += rec.NumRows()
				}
				if r.Err() != nil || n != total {
					b.Fatal(r.Err(), n)
				}
				r.Close()
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
