package resultfmt

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

// matrixSchema holds one column of each type a flightd result carries.
var matrixSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "big", Type: &arrow.Decimal256Type{Precision: 40, Scale: 3}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "tsz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tso", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "+02:00"}, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "y", Type: &arrow.Decimal128Type{Precision: 5, Scale: 1}, Nullable: true}), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
}, nil)

// matrixJSON is the matrix's rows as arrow's JSON reader reads them (f32
// and f64 are set apart: JSON has no NaN); the third row is all NULL.
const matrixJSON = `[
{"i8":-128,"i64":-9223372036854775808,"u64":18446744073709551615,"dec":"12.50","big":"-1234567890123456789012345678901234567.891",
 "s":"a,\"b\"\nc","b":"aGk=","ok":true,"d":"2024-02-29","t":"10:00:00.25","ts":"2024-01-01T10:00:00.5",
 "tsz":"2024-01-01T10:00:00Z","tso":"2024-01-01T08:00:00Z","l":[1,null,3],"st":{"x":"q","y":"-0.5"},
 "m":[{"key":"k","value":1},{"key":"k,2","value":null}],"iv":{"months":1,"days":2,"nanoseconds":3}},
{"i8":7,"i64":0,"u64":0,"dec":"-0.05","big":"0.000","s":"","b":"","ok":false,"d":"1970-01-01","t":"00:00:00",
 "ts":"1999-12-31T23:59:59.999999","tsz":"2000-01-01T00:00:00Z","tso":"2000-01-01T00:00:00.001Z","l":[],"st":{"x":null,"y":null},
 "m":[],"iv":{"months":0,"days":0,"nanoseconds":0}},
{}
]`

func matrix(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, matrixSchema, strings.NewReader(matrixJSON))
	require.NoError(t, err)
	defer rec.Release()
	f32 := array.NewFloat32Builder(mem)
	defer f32.Release()
	f32.AppendValues([]float32{1.1, float32(math.Inf(-1))}, nil)
	f32.AppendNull()
	f64 := array.NewFloat64Builder(mem)
	defer f64.Release()
	f64.AppendValues([]float64{0.1, math.NaN()}, nil)
	f64.AppendNull()
	cols := rec.Columns()
	fa, fb := f32.NewArray(), f64.NewArray()
	defer fa.Release()
	defer fb.Release()
	cols = append(append(append([]arrow.Array{}, cols[:3]...), fa, fb), cols[5:]...)
	return array.NewRecordBatch(matrixSchema, cols, 3)
}

// matrixText is each row's text in CSV and TSV; "" in a NULL row's cell
// is an empty field.
var matrixText = [][]string{
	{"-128", "-9223372036854775808", "18446744073709551615", "1.1", "0.1", "12.50", "-1234567890123456789012345678901234567.891",
		"a,\"b\"\nc", "aGk=", "true", "2024-02-29", "10:00:00.25", "2024-01-01 10:00:00.5",
		"2024-01-01 10:00:00Z", "2024-01-01 10:00:00+02:00", "[1,null,3]", `{"x":"q","y":-0.5}`,
		`{"k":1,"k,2":null}`, `{"months":1,"days":2,"nanoseconds":3}`},
	{"7", "0", "0", "-Infinity", "NaN", "-0.05", "0.000", "", "", "false", "1970-01-01", "00:00:00", "1999-12-31 23:59:59.999999",
		"2000-01-01 00:00:00Z", "2000-01-01 02:00:00.001+02:00", "[]", `{"x":null,"y":null}`, "{}",
		`{"months":0,"days":0,"nanoseconds":0}`},
	make([]string, 19),
}

func write(t *testing.T, f Format, rec arrow.RecordBatch, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := New(f, &buf, rec.Schema(), o)
	require.NoError(t, err)
	// Two batches of one result: the writer must join them.
	a, b := rec.NewSlice(0, 1), rec.NewSlice(1, rec.NumRows())
	defer a.Release()
	defer b.Release()
	require.NoError(t, w.Write(a))
	require.NoError(t, w.Write(b))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func checkedAlloc(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func TestDelimitedReadsBack(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	rec := matrix(t, mem)
	defer rec.Release()
	for _, tc := range []struct {
		name  string
		f     Format
		delim rune
	}{{"csv", CSV, ','}, {"tsv", TSV, '\t'}} {
		t.Run(tc.name, func(t *testing.T) {
			out := write(t, tc.f, rec, Options{})
			r := csv.NewReader(bytes.NewReader(out))
			r.Comma = tc.delim
			got, err := r.ReadAll()
			require.NoError(t, err, "%s", out)
			var names []string
			for _, f := range matrixSchema.Fields() {
				names = append(names, f.Name)
			}
			require.Equal(t, append([][]string{names}, matrixText...), got)
			// NULL is an empty field, an empty string "": the raw lines tell them apart.
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			require.Equal(t, strings.Repeat(string(tc.delim), 18), lines[len(lines)-1])
			require.Contains(t, lines[len(lines)-2], string(tc.delim)+`""`+string(tc.delim))
		})
	}
}

func TestJSONReadsBack(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	rec := matrix(t, mem)
	defer rec.Release()
	// What each row must decode to, with json.Number for numbers.
	n := func(s string) json.Number { return json.Number(s) }
	want := []map[string]any{
		{"i8": n("-128"), "i64": n("-9223372036854775808"), "u64": n("18446744073709551615"), "f32": n("1.1"), "f64": n("0.1"),
			"dec": n("12.50"), "big": n("-1234567890123456789012345678901234567.891"),
			"s": "a,\"b\"\nc", "b": "aGk=", "ok": true, "d": "2024-02-29", "t": "10:00:00.25",
			"ts": "2024-01-01 10:00:00.5", "tsz": "2024-01-01 10:00:00Z", "tso": "2024-01-01 10:00:00+02:00",
			"l": []any{n("1"), nil, n("3")}, "st": map[string]any{"x": "q", "y": n("-0.5")},
			"m": map[string]any{"k": n("1"), "k,2": nil}, "iv": map[string]any{"months": n("1"), "days": n("2"), "nanoseconds": n("3")}},
		{"i8": n("7"), "i64": n("0"), "u64": n("0"), "f32": "-Infinity", "f64": "NaN", "dec": n("-0.05"), "big": n("0.000"),
			"s": "", "b": "", "ok": false, "d": "1970-01-01", "t": "00:00:00", "ts": "1999-12-31 23:59:59.999999",
			"tsz": "2000-01-01 00:00:00Z", "tso": "2000-01-01 02:00:00.001+02:00", "l": []any{},
			"st": map[string]any{"x": nil, "y": nil}, "m": map[string]any{},
			"iv": map[string]any{"months": n("0"), "days": n("0"), "nanoseconds": n("0")}},
		{},
	}
	for _, f := range matrixSchema.Fields() {
		want[2][f.Name] = nil
	}
	decode := func(t *testing.T, b []byte, v any) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		require.NoError(t, d.Decode(v), "%s", b)
	}
	t.Run("jsonl", func(t *testing.T) {
		out := write(t, JSONL, rec, Options{})
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		require.Len(t, lines, 3)
		for i, l := range lines {
			var got map[string]any
			decode(t, []byte(l), &got)
			require.Equal(t, want[i], got, "row %d", i)
			// Columns in the result's order, not sorted.
			require.True(t, strings.HasPrefix(l, `{"i8":`), l)
		}
	})
	t.Run("json", func(t *testing.T) {
		var got []map[string]any
		decode(t, write(t, JSON, rec, Options{}), &got)
		require.Equal(t, want, got)
	})
	t.Run("json empty", func(t *testing.T) {
		empty := rec.NewSlice(0, 0)
		defer empty.Release()
		var buf bytes.Buffer
		w, err := New(JSON, &buf, matrixSchema, Options{})
		require.NoError(t, err)
		require.NoError(t, w.Write(empty))
		require.NoError(t, w.Close())
		require.Equal(t, "[]\n", buf.String())
	})
}

func TestParquetAndArrowReadBackEqual(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	rec := matrix(t, mem)
	defer rec.Release()
	// The field metadata of the wire is dropped; the values stay.
	md := arrow.NewMetadata([]string{"ARROW:FLIGHT:SQL:TYPE_NAME", "keep"}, []string{"BIGINT", "x"})
	fields := matrixSchema.Fields()
	fields[1].Metadata = md
	wire := array.NewRecordBatch(arrow.NewSchema(fields, nil), rec.Columns(), rec.NumRows())
	defer wire.Release()
	// Parquet has no type for an interval: the error names the column.
	iv := len(fields) - 1
	var buf bytes.Buffer
	_, err := New(Parquet, &buf, wire.Schema(), Options{Alloc: mem})
	require.ErrorContains(t, err, `parquet: column "iv" of type month_day_nano_interval`)
	noInterval := array.NewRecordBatch(arrow.NewSchema(fields[:iv], nil), rec.Columns()[:iv], rec.NumRows())
	defer noInterval.Release()

	t.Run("parquet", func(t *testing.T) {
		out := write(t, Parquet, noInterval, Options{Alloc: mem})
		pf, err := file.NewParquetReader(bytes.NewReader(out))
		require.NoError(t, err)
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
		require.NoError(t, err)
		tbl, err := fr.ReadTable(context.Background())
		require.NoError(t, err)
		defer tbl.Release()
		require.Equal(t, int64(3), tbl.NumRows())
		require.Equal(t, int64(iv), tbl.NumCols())
		require.Equal(t, "x", tbl.Schema().Field(1).Metadata.Values()[tbl.Schema().Field(1).Metadata.FindKey("keep")])
		require.Equal(t, -1, tbl.Schema().Field(1).Metadata.FindKey("ARROW:FLIGHT:SQL:TYPE_NAME"))
		for c := 0; c < int(tbl.NumCols()); c++ {
			col := tbl.Column(c)
			require.True(t, arrow.TypeEqual(rec.Column(c).DataType(), col.DataType()),
				"%s: %s read back as %s", col.Name(), rec.Column(c).DataType(), col.DataType())
			got := array.NewChunkedSlice(col.Data(), 0, 3)
			concat, err := array.Concatenate(got.Chunks(), mem)
			got.Release()
			require.NoError(t, err)
			require.True(t, array.ApproxEqual(rec.Column(c), concat, array.WithNaNsEqual(true)),
				"%s: %s != %s", col.Name(), rec.Column(c), concat)
			concat.Release()
		}
	})
	t.Run("arrow", func(t *testing.T) {
		out := write(t, Arrow, wire, Options{Alloc: mem})
		r, err := ipc.NewFileReader(bytes.NewReader(out), ipc.WithAllocator(mem))
		require.NoError(t, err)
		defer r.Close()
		require.Equal(t, 2, r.NumRecords())
		var rows int64
		for i := 0; i < r.NumRecords(); i++ {
			got, err := r.RecordBatchAt(i)
			require.NoError(t, err)
			want := rec.NewSlice(rows, rows+got.NumRows())
			require.True(t, array.RecordApproxEqual(want, got, array.WithNaNsEqual(true)), "batch %d", i)
			rows += got.NumRows()
			want.Release()
			got.Release()
		}
		require.Equal(t, int64(3), rows)
	})
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	rec := matrix(t, mem)
	defer rec.Release()
	small := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{matrixSchema.Field(1), matrixSchema.Field(7), matrixSchema.Field(8)}, nil),
		[]arrow.Array{rec.Column(1), rec.Column(7), rec.Column(8)}, rec.NumRows())
	defer small.Release()
	require.Equal(t, "| i64 | s | b |\n"+
		"| ---: | --- | --- |\n"+
		"| -9223372036854775808 | a,\"b\"\\nc | \\x6869 |\n"+
		"| 0 |  | \\x |\n"+
		"| NULL | NULL | NULL |\n", string(write(t, Markdown, small, Options{})))
}

// TestTextFormatsWriteEachBatchAtOnce: a streaming read never ends, so
// its rows must reach the output as each batch comes, not at Close.
func TestTextFormatsWriteEachBatchAtOnce(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	rec := matrix(t, mem)
	defer rec.Release()
	first := rec.NewSlice(0, 1)
	defer first.Release()
	for _, f := range []Format{CSV, TSV, JSON, JSONL, Markdown} {
		var buf bytes.Buffer
		w, err := New(f, &buf, rec.Schema(), Options{})
		require.NoError(t, err)
		require.NoError(t, w.Write(first))
		require.Contains(t, buf.String(), "-9223372036854775808", "%s: the first row before Close", f)
		require.NoError(t, w.Close())
	}
}

func TestParseFormatAndForPath(t *testing.T) {
	t.Parallel()
	for _, f := range Formats {
		got, err := ParseFormat(strings.ToUpper(string(f)))
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	_, err := ParseFormat("xml")
	require.ErrorContains(t, err, `unknown format "xml" (known: table, csv, tsv, json, jsonl, markdown, parquet, arrow)`)
	for path, want := range map[string]Format{"a.csv": CSV, "b.TSV": TSV, "c.json": JSON, "d.jsonl": JSONL, "e.ndjson": JSONL,
		"f.md": Markdown, "g.parquet": Parquet, "h.arrow": Arrow, "i.feather": Arrow} {
		got, ok := ForPath(path)
		require.True(t, ok, path)
		require.Equal(t, want, got, path)
	}
	_, ok := ForPath("out.txt")
	require.False(t, ok)
}
