package loadfmt

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/resultfmt"
)

// allTypes is a table with a column of every type a table has.
var allTypes = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "t", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "tsz", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
}, nil)

// sampleRecord holds rows of allTypes: ordinary values, edges and nulls.
func sampleRecord(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	rows := []string{
		`{"id": 1, "b": true, "i8": -128, "i16": 32767, "i32": -2147483648, "f32": 1.5, "f64": 0.1,
		  "dec": 12.50, "big": 99999999999999999999999999999999999999, "s": "ann; \"quoted\", comma",
		  "bin": "aGk=", "d": "2024-02-29", "t": "23:59:59.999", "ts": "2024-01-01 10:00:00.5",
		  "tsz": "2024-01-01 08:00:00.123Z", "ns": "1999-12-31 23:59:59.123456789",
		  "l": [1, null, 3], "st": {"k": "x", "n": 7}, "m": [{"key": "a", "value": 1.25}, {"key": "b", "value": null}]}`,
		`{"id": 2, "s": "", "bin": "", "l": [], "st": {"k": null, "n": null}, "m": []}`,
		`{"id": 3, "s": "line one\nline two", "f64": "NaN", "f32": "-Infinity", "dec": -0.05,
		  "d": "1900-01-01", "ts": "1970-01-01 00:00:00", "tsz": "2024-06-30 23:00:00+02:00"}`,
		`{"id": 4, "s": " spaced ", "big": -12345678901234567890123, "i8": 0}`,
	}
	b := array.NewRecordBuilder(mem, allTypes)
	defer b.Release()
	for _, r := range rows {
		require.NoError(t, b.UnmarshalJSON([]byte(r)), r)
	}
	return b.NewRecordBatch()
}

// readAll reads every batch of f; the batches are retained.
func readAll(t *testing.T, f File, o Options) (recs []arrow.RecordBatch, pos []Pos, err error) {
	t.Helper()
	r, err := Open(context.Background(), f, o)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for r.Next() {
		rec, p := r.Batch()
		rec.Retain()
		recs = append(recs, rec)
		pos = append(pos, p)
	}
	return recs, pos, r.Err()
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func writeFile(t *testing.T, name, text string) File {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	f, ok := ForPath(path)
	require.True(t, ok, path)
	return File{Path: path, Format: f, Size: int64(len(text))}
}

// TestReadsWhatExportWrites: every value of every type, written by
// resultfmt as CSV, TSV, JSON lines and a JSON array, reads back equal
// into a table of the same types.
func TestReadsWhatExportWrites(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	want := sampleRecord(t, mem)
	defer want.Release()
	for _, tc := range []struct {
		name string
		f    resultfmt.Format
		ext  string
	}{
		{name: "csv", f: resultfmt.CSV, ext: ".csv"},
		{name: "tsv", f: resultfmt.TSV, ext: ".tsv"},
		{name: "jsonl", f: resultfmt.JSONL, ext: ".jsonl"},
		{name: "json array", f: resultfmt.JSON, ext: ".json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := resultfmt.New(tc.f, &buf, allTypes, resultfmt.Options{})
			require.NoError(t, err)
			require.NoError(t, w.Write(want))
			require.NoError(t, w.Close())
			f := writeFile(t, "data"+tc.ext, buf.String())
			recs, pos, err := readAll(t, f, Options{Table: allTypes, Allocator: mem})
			defer releaseAll(recs)
			require.NoError(t, err, buf.String())
			require.Len(t, recs, 1)
			got := recs[0]
			require.Equal(t, want.NumRows(), got.NumRows())
			for c := range allTypes.Fields() {
				require.True(t, arrow.TypeEqual(want.Column(c).DataType(), got.Column(c).DataType()))
				require.True(t, array.ApproxEqual(want.Column(c), got.Column(c), array.WithNaNsEqual(true), array.WithAbsTolerance(0)),
					"%s: want %s, got %s\n%s", allTypes.Field(c).Name, want.Column(c), got.Column(c), buf.String())
			}
			require.Equal(t, int64(0), pos[0].Row)
			first := int64(2) // after the header, or the array's '['
			if tc.f == resultfmt.JSONL {
				first = 1
			}
			require.Equal(t, first, pos[0].Line)
		})
	}
}

func TestCSVQuotingAndNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	// A byte order mark, CRLF, a blank line, quotes, a field over two
	// lines, columns in another order and by another case, \N as NULL.
	text := "\xef\xbb\xbfN,ID,Name\r\n" +
		"1,1,plain\r\n" +
		"\r\n" +
		",2,\"\"\r\n" + // NULL, and an empty string
		"\\N,3,\\N\r\n" + // NULL twice
		"\"4\",4,\"a \"\"b\"\", c\nd\"\r\n" +
		"5,5,\"\\N\"\n" + // quoted: the text \N
		"\"\",6,x" // a quoted empty number is NULL; no line break at the end
	f := writeFile(t, "q.csv", text)
	recs, pos, err := readAll(t, f, Options{Table: table, Null: `\N`, Allocator: mem})
	defer releaseAll(recs)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	rec := recs[0]
	require.Equal(t, []string{"n", "id", "name"}, []string{rec.Schema().Field(0).Name, rec.Schema().Field(1).Name, rec.Schema().Field(2).Name})
	require.Equal(t, `[1 (null) (null) 4 5 (null)]`, rec.Column(0).String())
	require.Equal(t, `[1 2 3 4 5 6]`, rec.Column(1).String())
	names := rec.Column(2).(*array.String)
	require.Equal(t, "plain", names.Value(0))
	require.True(t, names.IsValid(1))
	require.Equal(t, "", names.Value(1))
	require.True(t, names.IsNull(2))
	require.Equal(t, "a \"b\", c\nd", names.Value(3))
	require.Equal(t, `\N`, names.Value(4))
	require.Equal(t, "x", names.Value(5))
	require.Equal(t, int64(2), pos[0].Line)
}

func TestCSVDelimiter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	f := writeFile(t, "semi.csv", "a;b\n1;x,y\n2;\"p;q\"\n")
	recs, _, err := readAll(t, f, Options{Table: table, Delimiter: ';', Allocator: mem})
	defer releaseAll(recs)
	require.NoError(t, err)
	require.Equal(t, `["x,y" "p;q"]`, recs[0].Column(1).String())
	// A .tsv file is split at tabs.
	f = writeFile(t, "t.tsv", "a\tb\n1\tx,y\n")
	recs2, _, err := readAll(t, f, Options{Table: table, Allocator: mem})
	defer releaseAll(recs2)
	require.NoError(t, err)
	require.Equal(t, `["x,y"]`, recs2[0].Column(1).String())
}

// TestCSVBadValueNamesItsLine: a bad value on a line after a field that
// spans two lines is reported with its own line, the column and the
// value; the batches before the error hold exactly the rows before it.
func TestCSVBadValueNamesItsLine(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	text := "id,note,amount\n" + // 1
		"1,a,1.5\n" + // 2
		"2,\"two\nlines\",2\n" + // 3-4
		"3,c,3\n" + // 5
		"4,d,4\n" + // 6
		"5,e,x5\n" + // 7: bad
		"6,f,6\n" // 8
	f := writeFile(t, "bad.csv", text)
	recs, pos, err := readAll(t, f, Options{Table: table, BatchRows: 3, Allocator: mem})
	defer releaseAll(recs)
	var re *RowError
	require.ErrorAs(t, err, &re)
	require.Equal(t, int64(7), re.Pos.Line)
	require.Equal(t, int64(4), re.Pos.Row)
	require.Equal(t, "amount", re.Column)
	require.Equal(t, f.Path+`:7: column "amount": "x5" is not a number (DECIMAL(10, 2))`, err.Error())
	require.Len(t, recs, 2)
	require.Equal(t, "[1 2 3]", recs[0].Column(0).String())
	require.Equal(t, "[4]", recs[1].Column(0).String())
	require.Equal(t, []int64{2, 6}, []int64{pos[0].Line, pos[1].Line})
	require.Equal(t, []int64{0, 3}, []int64{pos[0].Row, pos[1].Row})
}

func TestCSVErrors(t *testing.T) {
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int8},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 4, Scale: 2}, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
	}, nil)
	for _, tc := range []struct {
		name, text, err string
		rows            int64 // read before the error
	}{
		{name: "overflow", text: "id\n1\n128\n", rows: 1,
			err: `:3: column "id": "128" is out of range for TINYINT`},
		{name: "too many fields", text: "id,ts\n1,\n2,,\n", rows: 1,
			err: `:3: has 3 fields, but the header has 2`},
		{name: "unclosed quote", text: "id,ts\n1,\n2,\"2024-01-01\n3,\n", rows: 1,
			err: `:3: a quoted field is not closed before the end of the file`},
		{name: "text after a quote", text: "id,ts\n1,\"x\"y\n", rows: 0,
			err: `:2: "y" after the closing quote of field 2: a quote inside a quoted field is written twice ("")`},
		{name: "finer than the unit", text: "id,ts\n1,2024-01-01 10:00:00.001\n2,2024-01-01 10:00:00.0001\n", rows: 1,
			err: `:3: column "ts": "2024-01-01 10:00:00.0001" has a finer fraction of a second than TIMESTAMP(3) holds`},
		{name: "decimal scale", text: "id,d\n1,1.5\n2,1.505\n", rows: 1,
			err: `:3: column "d": "1.505" has more digits after the point than DECIMAL(4, 2) holds (2)`},
		{name: "decimal precision", text: "id,d\n1,99.99\n2,100\n", rows: 1,
			err: `:3: column "d": "100" has more digits than DECIMAL(4, 2) holds (4, 2 of them before the point)`},
		{name: "time finer than milliseconds", text: "id,t\n1,10:00:00.5\n2,10:00:00.0005\n", rows: 1,
			err: `:3: column "t": "10:00:00.0005" is finer than TIME(3) holds (Paimon keeps times in milliseconds)`},
		{name: "null in not null", text: "id,d\n1,2\n,3\n", rows: 1,
			err: `:3: column "id": NULL (an empty field) in a NOT NULL column`},
		{name: "not a date", text: "id,ts\n1,2024-02-30 10:00:00\n", rows: 0,
			err: `:2: column "ts": "2024-02-30 10:00:00" is not a TIMESTAMP(3) (YYYY-MM-DD HH:MM:SS[.ffffff][zone])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			f := writeFile(t, "e.csv", tc.text)
			recs, _, err := readAll(t, f, Options{Table: table, Allocator: mem})
			defer releaseAll(recs)
			require.Error(t, err)
			require.Equal(t, f.Path+tc.err, err.Error())
			var n int64
			for _, r := range recs {
				n += r.NumRows()
			}
			require.Equal(t, tc.rows, n)
		})
	}

	t.Run("header", func(t *testing.T) {
		for _, tc := range []struct{ text, err string }{
			{"id,nope\n", `: column "nope" is not a column of the table (its columns: id, ts, d, t)`},
			{"ts\n", `: has no column "id", which is NOT NULL in the table`},
			{"id,ID\n", `: two columns are column "id" of the table`},
			{"", `: empty: no header line`},
		} {
			f := writeFile(t, "h.csv", tc.text)
			_, err := Open(context.Background(), f, Options{Table: table})
			require.Error(t, err)
			require.Equal(t, f.Path+tc.err, err.Error())
		}
	})
}

func TestJSONErrorsNameTheirLine(t *testing.T) {
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	}, nil)
	for _, tc := range []struct {
		name, text, err string
		rows            int64
	}{
		{name: "wrong type", text: "{\"id\": 1}\n{\"id\": \"2\"}\n", rows: 1,
			err: `:2: column "id": expected a number for BIGINT, found a string "\"2\""`},
		{name: "nested", text: "{\"id\": 1, \"tags\": [\"a\"]}\n\n{\"id\": 2, \"tags\": [\"a\", 3]}\n", rows: 1,
			err: `:3: column "tags": element 2: expected a string for STRING, found a number "3"`},
		{name: "struct field", text: "{\"id\": 1, \"st\": {\"n\": 1}}\n{\"id\": 2, \"st\": {\"n\": 1, \"x\": 2}}\n", rows: 1,
			err: `:2: column "st": "x" is not a field of ROW<` + "`n`" + ` INT>`},
		{name: "unknown key", text: "{\"id\": 1, \"nope\": 2}\n", rows: 0,
			err: `:1: key "nope" is not a column of the table (its columns: id, tags, st)`},
		{name: "missing not null", text: "{\"id\": 1}\n{\"tags\": []}\n", rows: 1,
			err: `:2: column "id": missing (the key is not in the row) in a NOT NULL column`},
		{name: "syntax", text: "{\"id\": 1}\n{\"id\": 2,\n \"tags\": [}\n", rows: 1,
			err: `:3: invalid JSON: invalid character '}' looking for a value`},
		{name: "not an object", text: "{\"id\": 1}\n[1]\n", rows: 1,
			err: `:2: a row is a JSON object, not an array`},
		{name: "array element line", text: "[\n  {\"id\": 1},\n  {\"id\": 2},\n  {\"id\":\n     true}\n]\n", rows: 2,
			err: `:4: column "id": expected a number for BIGINT, found a boolean "true"`},
		{name: "truncated", text: "{\"id\": 1}\n{\"id\": 2", rows: 1,
			err: `:2: the file ends inside this value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			f := writeFile(t, "e.jsonl", tc.text)
			recs, _, err := readAll(t, f, Options{Table: table, Allocator: mem})
			defer releaseAll(recs)
			require.Error(t, err)
			require.Equal(t, f.Path+tc.err, err.Error())
			var n int64
			for _, r := range recs {
				n += r.NumRows()
			}
			require.Equal(t, tc.rows, n)
		})
	}
}

func TestInferTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	t.Run("csv", func(t *testing.T) {
		f := writeFile(t, "i.csv", "i,f,b,d,ts,tz,s,n,onezero\n"+
			"1,1.5,true,2024-01-01,2024-01-01 10:00:00,2024-01-01T10:00:00Z,a,,1\n"+
			"-2,3,FALSE,2024-01-02,2024-01-01 10:00:00.1234567,2024-01-01 10:00:00+02:00,2,,0\n")
		recs, _, err := readAll(t, f, Options{Allocator: mem})
		defer releaseAll(recs)
		require.NoError(t, err)
		var got []string
		for _, fl := range recs[0].Schema().Fields() {
			got = append(got, fl.Name+" "+typeName(fl.Type))
		}
		require.Equal(t, []string{"i BIGINT", "f DOUBLE", "b BOOLEAN", "d DATE", "ts TIMESTAMP(9)",
			"tz TIMESTAMP(6) WITH LOCAL TIME ZONE", "s STRING", "n STRING", "onezero BIGINT"}, got)
		require.Equal(t, "[1704103200000000 1704096000000000]", recs[0].Column(5).String())
	})
	t.Run("json", func(t *testing.T) {
		f := writeFile(t, "i.jsonl", `{"a": 1, "b": {"x": [1.5, 2]}, "c": "2024-01-01"}`+"\n"+
			`{"a": 2, "d": null, "b": {"y": "s"}, "e": [{"k": true}]}`+"\n")
		recs, _, err := readAll(t, f, Options{Allocator: mem})
		defer releaseAll(recs)
		require.NoError(t, err)
		var got []string
		for _, fl := range recs[0].Schema().Fields() {
			got = append(got, fl.Name+" "+typeName(fl.Type))
		}
		require.Equal(t, []string{"a BIGINT", "b ROW<`x` ARRAY<DOUBLE>, `y` STRING>", "c DATE", "d STRING", "e ARRAY<ROW<`k` BOOLEAN>>"}, got)
		require.Equal(t, `{[[1.5 2] (null)] [(null) "s"]}`, recs[0].Column(1).String())
	})
	t.Run("json conflict", func(t *testing.T) {
		f := writeFile(t, "c.jsonl", "{\"a\": 1}\n{\"a\": \"x\"}\n")
		_, err := Open(context.Background(), f, Options{Allocator: mem})
		require.Error(t, err)
		require.Equal(t, f.Path+`: cannot tell the columns' types: column field "a" holds a number on line 1 but a string on line 2; create the table with the type you want first (CREATE TABLE), then load into it`, err.Error())
	})
	t.Run("a later row does not fit", func(t *testing.T) {
		f := writeFile(t, "l.csv", "n\n1\n2\n3\nx\n")
		recs, _, err := readAll(t, f, Options{Allocator: mem, BatchRows: 2})
		defer releaseAll(recs)
		require.Error(t, err)
		require.Equal(t, f.Path+`:5: column "n": "x" is not an integer (BIGINT)`, err.Error())
	})
}

func TestTimestampsWithZones(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "wall", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
		{Name: "instant", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	// A zone on a column without one is converted to UTC; a time without
	// a zone in a column with one is UTC.
	f := writeFile(t, "z.csv", "wall,instant\n2024-01-01T10:00:00+01:30,2024-01-01 10:00:00\n2024-01-01,2024-01-01 10:00:00.25-0100\n")
	recs, _, err := readAll(t, f, Options{Table: table, Allocator: mem})
	defer releaseAll(recs)
	require.NoError(t, err)
	wall := recs[0].Column(0).(*array.Timestamp)
	inst := recs[0].Column(1).(*array.Timestamp)
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	require.Equal(t, at("2024-01-01T08:30:00Z").Unix(), int64(wall.Value(0)))
	require.Equal(t, at("2024-01-01T00:00:00Z").Unix(), int64(wall.Value(1)))
	require.Equal(t, at("2024-01-01T10:00:00Z").UnixMicro(), int64(inst.Value(0)))
	require.Equal(t, at("2024-01-01T11:00:00.25Z").UnixMicro(), int64(inst.Value(1)))
}

func TestDecimalText(t *testing.T) {
	for _, tc := range []struct {
		in    string
		prec  int32
		scale int32
		want  string
		err   string
	}{
		{in: "12.5", prec: 10, scale: 2, want: "12.50"},
		{in: "-0.05", prec: 10, scale: 2, want: "-0.05"},
		{in: "1.2500", prec: 10, scale: 2, want: "1.25"},
		{in: "1e3", prec: 10, scale: 2, want: "1000.00"},
		{in: "125E-2", prec: 10, scale: 2, want: "1.25"},
		{in: "+7", prec: 1, scale: 0, want: "7"},
		{in: "0.000", prec: 1, scale: 0, want: "0"},
		{in: "12345678901234567890123456789012345678", prec: 38, scale: 0, want: "12345678901234567890123456789012345678"},
		{in: "1.255", prec: 10, scale: 2, err: "more digits after the point"},
		{in: "123456789", prec: 10, scale: 2, err: "more digits than"},
		{in: "1.", prec: 10, scale: 2, want: "1.00"},
		{in: ".5", prec: 10, scale: 2, want: "0.50"},
		{in: ".", prec: 10, scale: 2, err: "not a number"},
		{in: "1,5", prec: 10, scale: 2, err: "not a number"},
		{in: "", prec: 10, scale: 2, err: "not a number"},
	} {
		v, err := parseDecimal([]byte(tc.in), tc.prec, tc.scale)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, v.ToString(tc.scale), tc.in)
	}
}

func TestCompressedText(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte("id\n1\n2\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	var zs bytes.Buffer
	enc, err := zstd.NewWriter(&zs)
	require.NoError(t, err)
	_, err = enc.Write([]byte("{\"id\": 3}\n{\"id\": 4}\n"))
	require.NoError(t, err)
	require.NoError(t, enc.Close())
	for name, data := range map[string][]byte{"a.csv.gz": gz.Bytes(), "b.jsonl.zst": zs.Bytes()} {
		f := writeFile(t, name, string(data))
		recs, _, err := readAll(t, f, Options{Table: table, Allocator: mem})
		require.NoError(t, err, name)
		require.Len(t, recs, 1)
		require.Equal(t, int64(2), recs[0].NumRows(), name)
		releaseAll(recs)
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.csv", "a.parquet", "sub/c.jsonl", "sub/d.csv.gz", ".hidden.csv", "_SUCCESS", "notes.txt", "_tmp/e.csv"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644))
	}
	rel := func(fs []File) []string {
		var out []string
		for _, f := range fs {
			r, _ := filepath.Rel(dir, f.Path)
			out = append(out, r+" "+string(f.Format))
		}
		return out
	}
	fs, err := Files([]string{dir}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"a.parquet parquet", "b.csv csv", "sub/c.jsonl json", "sub/d.csv.gz csv"}, rel(fs))

	fs, err = Files([]string{dir}, CSV)
	require.NoError(t, err)
	require.Equal(t, []string{"b.csv csv", "sub/d.csv.gz csv"}, rel(fs))

	// A glob, sorted; a file named twice is read once.
	_, err = Files([]string{filepath.Join(dir, "*"), filepath.Join(dir, "b.csv")}, "")
	require.Error(t, err, "_SUCCESS and notes.txt have no format")
	require.Contains(t, err.Error(), "_SUCCESS: cannot tell the format from the file name")
	fs, err = Files([]string{filepath.Join(dir, "[ab].*"), filepath.Join(dir, "b.csv")}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"a.parquet parquet", "b.csv csv"}, rel(fs))

	_, err = Files([]string{filepath.Join(dir, "*.nope")}, "")
	require.ErrorContains(t, err, "no file matches")
	_, err = Files([]string{filepath.Join(dir, "missing.csv")}, "")
	require.True(t, errors.Is(err, os.ErrNotExist))
	_, err = Files([]string{filepath.Join(dir, "sub")}, Parquet)
	require.ErrorContains(t, err, "a directory with no files of format parquet (.parquet, .pq) in it")
	_, err = Files([]string{"-"}, "")
	require.ErrorContains(t, err, "needs --format")
	require.True(t, strings.HasSuffix(fs[0].Path, "a.parquet"))
}
