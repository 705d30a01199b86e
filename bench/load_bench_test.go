package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/internal/resultfmt"
	"github.com/flightd/flightd/internal/testserver"
)

// BenchmarkLoad: `flightd load` of 1M rows of the 8-column benchmark
// table from a Parquet (zstd), a CSV and a JSON lines file, against the
// same rows, in batches of the same size, sent from memory by one ADBC
// bulk ingest (what the load is measured against: the ratio of their
// rows/s is its cost of reading files). stream-rows varies how many rows
// one ingest stream (one acknowledgement) carries. Each run appends to
// an append table; the command's start is included.
func BenchmarkLoad(b *testing.B) {
	const total, rowsPerBatch = 1 << 20, 64 << 10
	srv := testserver.Start(b, b.TempDir(), "--tiering-interval", "1h", "--log-level", "warn")
	c := open(b, srv.URI())
	c.exec(b, "CREATE DATABASE bench")
	var batches []arrow.RecordBatch
	for start := 0; start < total; start += rowsPerBatch {
		batches = append(batches, makeBatch(int64(start), rowsPerBatch, 1))
	}
	b.Cleanup(func() {
		for _, r := range batches {
			r.Release()
		}
	})
	dir := b.TempDir()
	files := map[string]string{}
	for _, f := range []struct {
		format resultfmt.Format
		ext    string
	}{{resultfmt.CSV, "csv"}, {resultfmt.JSONL, "jsonl"}} {
		var buf bytes.Buffer
		w, err := resultfmt.New(f.format, &buf, eightCols, resultfmt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range batches {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		files[f.ext] = filepath.Join(dir, "rows."+f.ext)
		if err := os.WriteFile(files[f.ext], buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	files["parquet"] = filepath.Join(dir, "rows.parquet")
	pf, err := os.Create(files["parquet"])
	if err != nil {
		b.Fatal(err)
	}
	pw, err := pqarrow.NewFileWriter(eightCols, pf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range batches {
		if err := pw.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		b.Fatal(err)
	}

	table := 0
	newTable := func(b *testing.B) string {
		table++
		name := fmt.Sprintf("t%d", table)
		c.exec(b, "CREATE TABLE bench."+name+" "+fmt.Sprintf(eightColsDDL, "", ""))
		return name
	}
	b.Run("client=adbc/rows=1e6", func(b *testing.B) {
		name := newTable(b)
		for b.Loop() {
			c.ingestStream(b, name, batches)
		}
		b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	for _, tc := range []struct {
		format     string
		streamRows int
	}{
		{"parquet", 0}, {"csv", 0}, {"jsonl", 0},
		{"parquet", rowsPerBatch}, {"parquet", 4 * rowsPerBatch},
		{"csv", rowsPerBatch}, {"csv", 4 * rowsPerBatch},
	} {
		name := fmt.Sprintf("client=load/format=%s/rows=1e6", tc.format)
		args := []string{"load", "--server", srv.Addr}
		if tc.streamRows > 0 {
			name += fmt.Sprintf("/stream-rows=%d", tc.streamRows)
			args = append(args, "--stream-rows", fmt.Sprint(tc.streamRows))
		}
		b.Run(name, func(b *testing.B) {
			t := newTable(b)
			for b.Loop() {
				cmd := exec.Command(testserver.Binary(b), append(args, "bench."+t, files[tc.format])...)
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), fmt.Sprintf("loaded %d rows", total)) {
					b.Fatalf("flightd load: %v\n%s", err, out)
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.StopTimer()
			if got := c.queryRows(b, `SELECT * FROM bench."`+t+`$rt" WHERE id < 10`); got != 10*int64(b.N) {
				b.Fatalf("%s$rt has %d rows with id < 10, want %d", t, got, 10*b.N)
			}
		})
	}
}
