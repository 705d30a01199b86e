package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pgo "github.com/parquet-go/parquet-go"
)

// The Parquet library decision: arrow-go's pqarrow against parquet-go on
// Paimon-shaped data (ids, strings of low and high cardinality, timestamps,
// decimals, 20% nulls), encode and decode, zstd and snappy.

const pqRows = 1_000_000

var pqSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "token", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}, // 20% null
}, nil)

// pqRow is the same data for parquet-go.
type pqRow struct {
	ID       int64     `parquet:"id"`
	K        *int32    `parquet:"k,optional"`
	X        *float64  `parquet:"x,optional"`
	Customer *string   `parquet:"customer,optional"`
	Token    *string   `parquet:"token,optional"`
	TS       time.Time `parquet:"ts,optional,timestamp(microsecond)"`
	Amount   *int64    `parquet:"amount,optional,decimal(2:10)"`
	Note     *string   `parquet:"note,optional"`
}

func pqData() (arrow.RecordBatch, []pqRow) {
	rng := rand.New(rand.NewPCG(42, 42))
	b := array.NewRecordBuilder(memory.DefaultAllocator, pqSchema)
	defer b.Release()
	rows := make([]pqRow, pqRows)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		k := rng.Int32N(1000)
		x := rng.Float64() * 1000
		cust := fmt.Sprintf("customer-%d", rng.IntN(5000))
		tok := fmt.Sprintf("%016x", rng.Uint64())
		ts := base.Add(time.Duration(i) * time.Millisecond)
		amt := rng.Int64N(10_000_000)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int32Builder).Append(k)
		b.Field(2).(*array.Float64Builder).Append(x)
		b.Field(3).(*array.StringBuilder).Append(cust)
		b.Field(4).(*array.StringBuilder).Append(tok)
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
		b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(amt))
		r := pqRow{ID: int64(i), K: &k, X: &x, Customer: &cust, Token: &tok, TS: ts, Amount: &amt}
		if rng.IntN(5) == 0 {
			b.Field(7).AppendNull()
		} else {
			note := fmt.Sprintf("note %d", rng.IntN(100))
			b.Field(7).(*array.StringBuilder).Append(note)
			r.Note = &note
		}
		rows[i] = r
	}
	return b.NewRecordBatch(), rows
}

func pqarrowEncode(b testing.TB, rec arrow.RecordBatch, codec compress.Compression, level int, dict bool) []byte {
	var buf bytes.Buffer
	opts := []parquet.WriterProperty{parquet.WithCompression(codec), parquet.WithDictionaryDefault(dict), parquet.WithMaxRowGroupLength(128 << 10)}
	if level != 0 {
		opts = append(opts, parquet.WithCompressionLevel(level))
	}
	props := parquet.NewWriterProperties(opts...)
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	if err := w.WriteBuffered(rec); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func pgoEncode(b testing.TB, rows []pqRow, codec pgo.WriterOption) []byte {
	var buf bytes.Buffer
	w := pgo.NewGenericWriter[pqRow](&buf, codec, pgo.PageBufferSize(1<<20))
	if _, err := w.Write(rows); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func BenchmarkParquet(b *testing.B) {
	rec, rows := pqData()
	defer rec.Release()
	codecs := []struct {
		name  string
		arw   compress.Compression
		level int // 0: the library's default (zstd: 3)
		pgo   pgo.WriterOption
	}{
		{"zstd", compress.Codecs.Zstd, 0, pgo.Compression(&pgo.Zstd)},
		{"zstd1", compress.Codecs.Zstd, 1, nil}, // Paimon's default level
		{"snappy", compress.Codecs.Snappy, 0, pgo.Compression(&pgo.Snappy)},
	}
	for _, c := range codecs {
		for _, dict := range []bool{true, false} {
			b.Run(fmt.Sprintf("lib=pqarrow/codec=%s/dict=%v/op=encode", c.name, dict), func(b *testing.B) {
				var n int
				for b.Loop() {
					n = len(pqarrowEncode(b, rec, c.arw, c.level, dict))
				}
				b.ReportMetric(float64(pqRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(n)/(1<<20), "MiB")
			})
		}
		if c.pgo != nil {
			b.Run("lib=parquet-go/codec="+c.name+"/op=encode", func(b *testing.B) {
				var n int
				for b.Loop() {
					n = len(pgoEncode(b, rows, c.pgo))
				}
				b.ReportMetric(float64(pqRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(n)/(1<<20), "MiB")
			})
		}
		data := pqarrowEncode(b, rec, c.arw, c.level, false) // as lake writes: no dictionaries
		b.Run("lib=pqarrow/codec="+c.name+"/op=decode", func(b *testing.B) {
			for b.Loop() {
				pf, err := file.NewParquetReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				rr, err := fr.GetRecordReader(b.Context(), nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				var got int64
				for rr.Next() {
					got += rr.RecordBatch().NumRows()
				}
				rr.Release()
				if got != pqRows {
					b.Fatalf("read %d rows", got)
				}
			}
			b.ReportMetric(float64(pqRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		if c.pgo == nil {
			continue
		}
		pdata := pgoEncode(b, rows, c.pgo)
		b.Run("lib=parquet-go/codec="+c.name+"/op=decode", func(b *testing.B) {
			buf := make([]pqRow, 8192)
			for b.Loop() {
				r := pgo.NewGenericReader[pqRow](bytes.NewReader(pdata))
				var got int
				for {
					n, err := r.Read(buf)
					got += n
					if err != nil {
						break
					}
				}
				r.Close()
				if got != pqRows {
					b.Fatalf("read %d rows", got)
				}
			}
			b.ReportMetric(float64(pqRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
