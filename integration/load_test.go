package integration

// `flightd load` through the real binary: Parquet, CSV and JSON lines
// files read back equal over ADBC; --create from a Parquet file; a
// directory and a glob of several files; a bad value that stops the load
// naming its file and line, with the table holding exactly the rows
// reported acknowledged; a primary-key table upserted in file order; and
// Ctrl-C, which stops the load with the same report.

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// loadDDL is the table the files are loaded into; loadSchema its Arrow
// schema as the server reads it.
const loadDDL = `(id BIGINT, name STRING, amount DECIMAL(10, 2), ts TIMESTAMP(6), day DATE,
	score DOUBLE, flag BOOLEAN, tags ARRAY<STRING>)`

var loadSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
}, nil)

// loadRow is row i of the test data: names with commas, quotes, line
// breaks and non-ASCII text; every 10th row has nulls.
type loadRow struct {
	id     int64
	name   string
	cents  int64 // amount × 100
	ts     time.Time
	day    time.Time
	score  float64
	flag   bool
	tags   []string
	nulls  bool
	amount string // the amount's text
}

var loadBase = time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)

func makeLoadRow(i int) loadRow {
	r := loadRow{id: int64(i), name: fmt.Sprintf("n%d", i), cents: int64(i*37%100000) - 5000,
		ts:  loadBase.Add(time.Duration(i)*time.Second + time.Duration(i%1000)*time.Microsecond),
		day: loadBase.AddDate(0, 0, i), score: float64(i) / 7, flag: i%2 == 0, tags: []string{"a", strconv.Itoa(i)},
		nulls: i%10 == 0}
	if i%3 == 0 {
		r.name = fmt.Sprintf("n%d, \"quoted\"\nsecond line ü", i)
	}
	sign, c := "", r.cents
	if c < 0 {
		sign, c = "-", -c
	}
	r.amount = fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
	return r
}

// loadRecord is rows [from, to) as Arrow data of loadSchema.
func loadRecord(from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, loadSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		r := makeLoadRow(i)
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.name)
		if r.nulls {
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			b.Field(7).AppendNull()
		} else {
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(r.cents))
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
			lb := b.Field(7).(*array.ListBuilder)
			lb.Append(true)
			for _, tag := range r.tags {
				lb.ValueBuilder().(*array.StringBuilder).Append(tag)
			}
		}
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32FromTime(r.day))
		b.Field(5).(*array.Float64Builder).Append(r.score)
		b.Field(6).(*array.BooleanBuilder).Append(r.flag)
	}
	return b.NewRecordBatch()
}

// writeLoadCSV writes rows [from, to) as CSV with a header (encoding/csv:
// NULL an empty field), with badLine's amount (a line number, 0 for none)
// replaced by text that is no number.
func writeLoadCSV(t *testing.T, path string, from, to, badLine int) {
	t.Helper()
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	require.NoError(t, w.Write([]string{"id", "name", "amount", "ts", "day", "score", "flag", "tags"}))
	line := 2
	for i := from; i < to; i++ {
		r := makeLoadRow(i)
		rec := []string{strconv.FormatInt(r.id, 10), r.name, r.amount, r.ts.Format("2006-01-02 15:04:05.999999"),
			r.day.Format("2006-01-02"), strconv.FormatFloat(r.score, 'g', -1, 64), strconv.FormatBool(r.flag), `["a","` + strconv.Itoa(i) + `"]`}
		if r.nulls {
			rec[2], rec[3], rec[7] = "", "", ""
		}
		if line == badLine {
			rec[2] = "12,5"
		}
		require.NoError(t, w.Write(rec))
		line += 1 + strings.Count(r.name, "\n")
	}
	w.Flush()
	require.NoError(t, w.Error())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func writeLoadJSONL(t *testing.T, path string, from, to int) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := from; i < to; i++ {
		r := makeLoadRow(i)
		row := map[string]any{"id": r.id, "name": r.name, "amount": json.Number(r.amount),
			"ts": r.ts.Format("2006-01-02T15:04:05.999999Z"), "day": r.day.Format("2006-01-02"),
			"score": r.score, "flag": r.flag, "tags": r.tags}
		if r.nulls {
			row["amount"], row["ts"] = nil, nil
			delete(row, "tags") // a missing key is NULL
		}
		require.NoError(t, enc.Encode(row))
	}
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func writeLoadParquet(t *testing.T, path string, recs ...arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(recs[0].Schema(), f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1000)), pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
}

// requireTableHolds checks that sql returns exactly want's rows.
func requireTableHolds(t *testing.T, c *client, sql string, want arrow.RecordBatch) {
	t.Helper()
	got := queryTable(t, c, sql)
	defer got.Release()
	require.Equal(t, want.NumRows(), got.NumRows())
	require.Equal(t, want.NumCols(), got.NumCols())
	mem := memory.DefaultAllocator
	for i := 0; i < int(want.NumCols()); i++ {
		g := concatColumn(t, got.Column(i), mem)
		require.True(t, arrow.TypeEqual(want.Column(i).DataType(), g.DataType()), "%s: %s read back as %s", want.ColumnName(i), want.Column(i).DataType(), g.DataType())
		require.True(t, array.Equal(want.Column(i), g), "%s differs", want.ColumnName(i))
		g.Release()
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE ld")
	load := func(t *testing.T, args ...string) (stderr string, code int) {
		t.Helper()
		_, stderr, code = runCLI(t, "", append([]string{"load", "--server", srv.Addr}, args...)...)
		return stderr, code
	}
	const rows = 3000

	t.Run("parquet, csv and json lines read back equal", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		want := loadRecord(0, rows)
		defer want.Release()
		files := map[string]string{"pq": filepath.Join(dir, "rows.parquet"), "csv": filepath.Join(dir, "rows.csv"), "jsonl": filepath.Join(dir, "rows.jsonl")}
		// The Parquet file in two parts, with row groups of 1000 rows.
		a, b := want.NewSlice(0, 1500), want.NewSlice(1500, rows)
		writeLoadParquet(t, files["pq"], a, b)
		a.Release()
		b.Release()
		writeLoadCSV(t, files["csv"], 0, rows, 0)
		writeLoadJSONL(t, files["jsonl"], 0, rows)
		for _, kind := range []string{"pq", "csv", "jsonl"} {
			c.mustExec("CREATE TABLE ld.rt_" + kind + " " + loadDDL)
			// Batches of 700 rows in streams of 1400: several of each.
			errOut, code := load(t, "--batch-rows", "700", "--stream-rows", "1400", "ld.rt_"+kind, files[kind])
			require.Equal(t, 0, code, errOut)
			require.Contains(t, errOut, fmt.Sprintf("loaded %d rows from 1 file (", rows))
			requireTableHolds(t, c, `SELECT * FROM ld."rt_`+kind+`$rt" ORDER BY id`, want)
		}
	})

	t.Run("create from parquet", func(t *testing.T) {
		t.Parallel()
		sc := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "small", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
			{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		}, nil)
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := 0; i < 2000; i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.StringBuilder).Append("v" + strconv.Itoa(i))
			bld.Field(2).(*array.Uint8Builder).Append(uint8(i))
			bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(loadBase.UnixMilli() + int64(i)))
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		defer rec.Release()
		path := filepath.Join(t.TempDir(), "new.parquet")
		writeLoadParquet(t, path, rec)

		errOut, code := load(t, "ld.created", path)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "table ld.created does not exist: create it first (CREATE TABLE), or give --create")

		errOut, code = load(t, "--create", "--primary-key", "id", "--bucket", "2", "ld.created", path)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "created table ld.created from "+path+
			": id BIGINT NOT NULL, name STRING, small SMALLINT, at TIMESTAMP(3) WITH LOCAL TIME ZONE; primary key (id), 2 buckets\n")
		require.Contains(t, errOut, "loaded 2000 rows from 1 file")
		require.Equal(t, [][]string{{"2000", "1999", "v999", "255"}},
			c.mustQuery(`SELECT count(*), max(id), max(name), max(small) FROM ld."created$rt"`))
		require.Equal(t, "2", c.scalar(`SELECT "value" FROM ld."created$options" WHERE "key" = 'bucket'`))
		// Again: the table exists, the rows are upserted.
		errOut, code = load(t, "--create", "ld.created", path)
		require.Equal(t, 0, code, errOut)
		require.NotContains(t, errOut, "created table")
		require.Equal(t, "2000", c.scalar(`SELECT count(*) FROM ld."created$rt"`))
	})

	t.Run("a directory and a glob of several files", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		c.mustExec("CREATE TABLE ld.many " + loadDDL)
		writeLoadCSV(t, filepath.Join(dir, "part-1.csv"), 0, 500, 0)
		writeLoadCSV(t, filepath.Join(dir, "part-2.csv"), 500, 1000, 0)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		writeLoadJSONL(t, filepath.Join(dir, "sub", "part-3.jsonl"), 1000, 1500)
		rec := loadRecord(1500, 2000)
		writeLoadParquet(t, filepath.Join(dir, "sub", "part-4.parquet"), rec)
		rec.Release()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not data"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644))
		errOut, code := load(t, "ld.many", dir)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "loaded 2000 rows from 4 files (")
		want := loadRecord(0, 2000)
		defer want.Release()
		requireTableHolds(t, c, `SELECT * FROM ld."many$rt" ORDER BY id`, want)

		c.mustExec("CREATE TABLE ld.globbed " + loadDDL)
		errOut, code = load(t, "ld.globbed", filepath.Join(dir, "part-*.csv"))
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "loaded 1000 rows from 2 files (")
		require.Equal(t, [][]string{{"1000", "0", "999"}}, c.mustQuery(`SELECT count(*), min(id), max(id) FROM ld."globbed$rt"`))
	})

	t.Run("a bad value stops the load at its line", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		c.mustExec("CREATE TABLE ld.bad " + loadDDL)
		first, second := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
		writeLoadCSV(t, first, 0, 1000, 0)
		// The bad value is on the line of row 2500 (rows with line breaks
		// in their names take two lines).
		badLine := 2
		for i := 1000; i < 2500; i++ {
			badLine += 1 + strings.Count(makeLoadRow(i).name, "\n")
		}
		writeLoadCSV(t, second, 1000, rows, badLine)
		errOut, code := load(t, "--batch-rows", "300", "--stream-rows", "600", "ld.bad", first, second)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, fmt.Sprintf("flightd: load into ld.bad stopped: %s:%d: column \"amount\": \"12,5\" is not a number (DECIMAL(10, 2))\n", second, badLine))
		require.Contains(t, errOut, fmt.Sprintf("2500 rows acknowledged by the server stay in ld.bad: every row before %s:%d\n", second, badLine))
		require.NotContains(t, errOut, "loaded ")
		require.Equal(t, [][]string{{"2500", "0", "2499"}}, c.mustQuery(`SELECT count(*), min(id), max(id) FROM ld."bad$rt"`))
	})

	t.Run("a primary-key table is upserted in file order", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		c.mustExec("CREATE TABLE ld.pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
		var one, two strings.Builder
		one.WriteString("id,v\n")
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&one, "%d,first\n", i)
		}
		for i := 500; i < 1500; i++ {
			fmt.Fprintf(&two, "{\"id\": %d, \"v\": \"second\"}\n", i)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "1.csv"), []byte(one.String()), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "2.jsonl"), []byte(two.String()), 0o644))
		errOut, code := load(t, "ld.pk", filepath.Join(dir, "1.csv"), filepath.Join(dir, "2.jsonl"))
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "loaded 2000 rows from 2 files")
		require.Equal(t, [][]string{{"first", "500", "0", "499"}, {"second", "1000", "500", "1499"}},
			c.mustQuery(`SELECT v, count(*), min(id), max(id) FROM ld."pk$rt" GROUP BY v ORDER BY v`))
	})

	t.Run("ctrl-c stops the load with the same report", func(t *testing.T) {
		t.Parallel()
		c.mustExec("CREATE TABLE ld.stopped (id BIGINT, v STRING)")
		// Standard input that the test feeds: 250 rows, then nothing more
		// until the load is stopped. Batches of 100 rows: two go out, in
		// a stream that stays open.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, testserver.Binary(t), "load", "--server", srv.Addr, "--format", "csv", "--batch-rows", "100", "ld.stopped", "-")
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		require.NoError(t, cmd.Start())
		_, err = io.WriteString(stdin, "id,v\n")
		require.NoError(t, err)
		for i := 0; i < 250; i++ {
			_, err = fmt.Fprintf(stdin, "%d,x\n", i)
			require.NoError(t, err)
		}
		waitFor(t, "the first two batches to be written", func() bool {
			return c.scalar(`SELECT count(*) FROM ld."stopped$rt"`) == "200"
		})
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		err = cmd.Wait()
		stdin.Close()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, errOut.String())
		require.Equal(t, 1, ee.ExitCode(), errOut.String())
		require.Contains(t, errOut.String(), "stopping after the batch being sent")
		require.Contains(t, errOut.String(), "flightd: load into ld.stopped stopped: interrupted\n200 rows acknowledged by the server stay in ld.stopped")
		require.Equal(t, "200", c.scalar(`SELECT count(*) FROM ld."stopped$rt"`))
	})
}
