package integration

// The type matrix: one table of types, every Paimon type a CREATE TABLE
// takes and every Arrow type a client may send, each with the values that
// break writers (NULL, extremes, empty and multi-megabyte strings, unicode,
// NaN, ±Inf, -0.0). Every value written must come back identically from
// t$rt, from t after tiering and after compaction, and through pypaimon and
// Java Paimon; an ingest of a type flightd cannot store exactly must be
// refused up front, naming the column, and leave no table behind.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/lake"
)

// matrixCol is one row of the type matrix. paimon is the type CREATE TABLE
// gives the column ("" for a type only a client sends, which ingest-create
// maps); arrow is the type a client writes it with; vals are its values, nil
// for NULL. mayRefuse marks an Arrow type that has no exact Paimon
// counterpart: ingest-create may refuse it (naming the column), but must not
// accept it and then lose or change a value.
type matrixCol struct {
	name      string
	paimon    string
	arrow     arrow.DataType
	vals      []any
	mayRefuse bool
}

func ts(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		panic(err)
	}
	return t
}

// tod is a time of day, "15:04:05.999999999".
func tod(s string) time.Duration {
	t, err := time.Parse("15:04:05.999999999", s)
	if err != nil {
		panic(err)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
}

// bigString is n bytes of text that differs from every other bigString
// only near its end, so truncated statistics share a long prefix.
func bigString(n int, last byte) string {
	b := bytes.Repeat([]byte("é-"), n/6)
	b = append(b, strings.Repeat("z", n-len(b)-1)...)
	return string(append(b, last))
}

func bigBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func lst(v ...any) []any { return v }

// pair is one MAP entry.
type pair struct{ k, v any }

func utcTZ(u arrow.TimeUnit) arrow.DataType {
	return &arrow.TimestampType{Unit: u, TimeZone: "UTC"}
}

// ddlMatrix is every Paimon type with the Arrow type a client writes it with.
func ddlMatrix() []matrixCol {
	f32 := arrow.PrimitiveTypes.Float32
	f64 := arrow.PrimitiveTypes.Float64
	return []matrixCol{
		{name: "b", paimon: "BOOLEAN", arrow: arrow.FixedWidthTypes.Boolean, vals: lst(true, false, nil)},
		{name: "i8", paimon: "TINYINT", arrow: arrow.PrimitiveTypes.Int8, vals: lst(int64(math.MinInt8), int64(math.MaxInt8), int64(0), nil)},
		{name: "i16", paimon: "SMALLINT", arrow: arrow.PrimitiveTypes.Int16, vals: lst(int64(math.MinInt16), int64(math.MaxInt16), nil)},
		{name: "i32", paimon: "INT", arrow: arrow.PrimitiveTypes.Int32, vals: lst(int64(math.MinInt32), int64(math.MaxInt32), int64(-1), nil)},
		{name: "i64", paimon: "BIGINT", arrow: arrow.PrimitiveTypes.Int64, vals: lst(int64(math.MinInt64), int64(math.MaxInt64), nil)},
		{name: "f32", paimon: "FLOAT", arrow: f32, vals: lst(math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1),
			float64(math.SmallestNonzeroFloat32), float64(math.MaxFloat32), 0.1, nil)},
		{name: "f64", paimon: "DOUBLE", arrow: f64, vals: lst(math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1),
			math.SmallestNonzeroFloat64, math.MaxFloat64, 0.1, nil)},
		{name: "d1", paimon: "DECIMAL(1,0)", arrow: &arrow.Decimal128Type{Precision: 1, Scale: 0}, vals: lst("-9", "9", "0", nil)},
		{name: "d9", paimon: "DECIMAL(9,2)", arrow: &arrow.Decimal128Type{Precision: 9, Scale: 2}, vals: lst("-9999999.99", "9999999.99", "0.01", nil)},
		{name: "d18", paimon: "DECIMAL(18,4)", arrow: &arrow.Decimal128Type{Precision: 18, Scale: 4}, vals: lst("-99999999999999.9999", "99999999999999.9999", "-0.0001", nil)},
		{name: "d38", paimon: "DECIMAL(38,10)", arrow: &arrow.Decimal128Type{Precision: 38, Scale: 10},
			vals: lst("-9999999999999999999999999999.9999999999", "9999999999999999999999999999.9999999999", "0.0000000001", nil)},
		{name: "ch", paimon: "CHAR(5)", arrow: arrow.BinaryTypes.String, vals: lst("abcde", "ééééé", nil)},
		{name: "vc", paimon: "VARCHAR(10)", arrow: arrow.BinaryTypes.String, vals: lst("", "short", "ünïcödé✓", nil)},
		{name: "s", paimon: "STRING", arrow: arrow.BinaryTypes.String, vals: lst("", bigString(3<<20, 'a'), "🙂 emoji", "nul\x00inside", bigString(3<<20, 'b'), nil)},
		{name: "bn", paimon: "BINARY(4)", arrow: &arrow.FixedSizeBinaryType{ByteWidth: 4}, vals: lst([]byte{0, 0, 0, 0}, []byte{0xff, 0xfe, 0, 1}, nil)},
		{name: "vb", paimon: "VARBINARY(10)", arrow: arrow.BinaryTypes.Binary, vals: lst([]byte{}, []byte{0, 0xff}, nil)},
		{name: "by", paimon: "BYTES", arrow: arrow.BinaryTypes.Binary, vals: lst(bigBytes(2<<20, 1), []byte{}, []byte{0xff}, nil)},
		{name: "dt", paimon: "DATE", arrow: arrow.FixedWidthTypes.Date32, vals: lst(ts("0001-01-01 00:00:00"), ts("9999-12-31 00:00:00"), ts("1969-12-31 00:00:00"), nil)},
		{name: "t0", paimon: "TIME(0)", arrow: arrow.FixedWidthTypes.Time32s, vals: lst(tod("00:00:00"), tod("23:59:59"), nil)},
		{name: "t3", paimon: "TIME(3)", arrow: arrow.FixedWidthTypes.Time32ms, vals: lst(tod("23:59:59.999"), tod("00:00:00.001"), nil)},
		{name: "t6", paimon: "TIME(6)", arrow: arrow.FixedWidthTypes.Time64us, vals: lst(tod("12:34:56.789"), tod("00:00:00"), nil)},
		{name: "t9", paimon: "TIME(9)", arrow: arrow.FixedWidthTypes.Time64ns, vals: lst(tod("01:02:03.004"), nil)},
		{name: "ts0", paimon: "TIMESTAMP(0)", arrow: arrow.FixedWidthTypes.Timestamp_s, vals: lst(ts("0001-01-01 00:00:00"), ts("9999-12-31 23:59:59"), ts("1969-12-31 23:59:59"), nil)},
		{name: "ts3", paimon: "TIMESTAMP(3)", arrow: arrow.FixedWidthTypes.Timestamp_ms, vals: lst(ts("9999-12-31 23:59:59.999"), ts("1969-12-31 23:59:59.001"), nil)},
		{name: "ts6", paimon: "TIMESTAMP(6)", arrow: arrow.FixedWidthTypes.Timestamp_us, vals: lst(ts("0001-01-01 00:00:00.000001"), ts("9999-12-31 23:59:59.999999"), ts("1969-12-31 23:59:59.999999"), nil)},
		{name: "ts9", paimon: "TIMESTAMP(9)", arrow: arrow.FixedWidthTypes.Timestamp_ns, vals: lst(ts("2024-02-29 12:00:00.123456789"), ts("1969-12-31 23:59:59.999999999"), ts("1677-09-22 00:00:00.000000001"), nil)},
		{name: "lz0", paimon: "TIMESTAMP_LTZ(0)", arrow: utcTZ(arrow.Second), vals: lst(ts("2024-01-01 00:00:01"), nil)},
		{name: "lz3", paimon: "TIMESTAMP_LTZ(3)", arrow: utcTZ(arrow.Millisecond), vals: lst(ts("1969-12-31 23:59:59.999"), nil)},
		{name: "lz6", paimon: "TIMESTAMP_LTZ(6)", arrow: utcTZ(arrow.Microsecond), vals: lst(ts("2024-01-01 00:00:00.000001"), ts("9999-12-31 23:59:59.999999"), nil)},
		{name: "lz9", paimon: "TIMESTAMP_LTZ(9)", arrow: utcTZ(arrow.Nanosecond), vals: lst(ts("2024-01-01 00:00:00.000000001"), nil)},
		{name: "arr", paimon: "ARRAY<INT>", arrow: arrow.ListOf(arrow.PrimitiveTypes.Int32), vals: lst(lst(int64(1), nil, int64(3)), lst(), nil)},
		{name: "mp", paimon: "MAP<STRING, BIGINT>", arrow: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64),
			vals: lst([]pair{{"a", int64(1)}, {"b", nil}}, []pair{}, nil)},
		{name: "rw", paimon: "ROW<x INT, y STRING>", arrow: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), vals: lst(lst(int64(1), "a"), lst(nil, nil), nil)},
		{name: "nst", paimon: "ARRAY<ROW<k STRING, v ARRAY<DOUBLE>>>", arrow: arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "v", Type: arrow.ListOf(f64), Nullable: true})),
			vals: lst(lst(lst("k", lst(1.5, nil, math.Inf(-1))), nil), lst(), nil)},
	}
}

// clientMatrix is every Arrow type a client may send that ddlMatrix does not
// already cover; ingest-create maps each to a Paimon type.
func clientMatrix() []matrixCol {
	return []matrixCol{
		{name: "u8", arrow: arrow.PrimitiveTypes.Uint8, vals: lst(uint64(0), uint64(math.MaxUint8), nil)},
		{name: "u16", arrow: arrow.PrimitiveTypes.Uint16, vals: lst(uint64(math.MaxUint16), nil)},
		{name: "u32", arrow: arrow.PrimitiveTypes.Uint32, vals: lst(uint64(math.MaxUint32), uint64(0), nil)},
		{name: "u64", arrow: arrow.PrimitiveTypes.Uint64, vals: lst(uint64(math.MaxUint64), uint64(0), nil), mayRefuse: true},
		{name: "f16", arrow: arrow.FixedWidthTypes.Float16, vals: lst(1.5, math.Copysign(0, -1), math.Inf(1), nil)},
		{name: "lu", arrow: arrow.BinaryTypes.LargeString, vals: lst("large", "", nil)},
		{name: "sv", arrow: arrow.BinaryTypes.StringView, vals: lst("a view string longer than twelve bytes", "", nil)},
		{name: "lb", arrow: arrow.BinaryTypes.LargeBinary, vals: lst([]byte{1, 2}, []byte{}, nil)},
		{name: "bv", arrow: arrow.BinaryTypes.BinaryView, vals: lst([]byte("a binary view longer than twelve"), nil)},
		{name: "fsb", arrow: &arrow.FixedSizeBinaryType{ByteWidth: 3}, vals: lst([]byte{1, 2, 3}, nil)},
		{name: "dict", arrow: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
			vals: lst("red", "green", "red", nil)},
		{name: "d256", arrow: &arrow.Decimal256Type{Precision: 20, Scale: 2}, vals: lst("-123456789012345678.90", nil)},
		{name: "d256wide", arrow: &arrow.Decimal256Type{Precision: 60, Scale: 0}, vals: lst("1", nil), mayRefuse: true},
		{name: "d64", arrow: arrow.FixedWidthTypes.Date64, vals: lst(ts("2024-02-29 00:00:00"), ts("1900-01-01 00:00:00"), nil)},
		{name: "tsz", arrow: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, vals: lst(ts("2024-07-01 12:00:00.5"), nil)},
		// Paimon's TIME holds milliseconds: a finer value is refused, never truncated.
		{name: "t6sub", arrow: arrow.FixedWidthTypes.Time64us, vals: lst(tod("12:00:00.000001"), nil), mayRefuse: true},
		{name: "t9sub", arrow: arrow.FixedWidthTypes.Time64ns, vals: lst(tod("12:00:00.000000001"), nil), mayRefuse: true},
		{name: "ll", arrow: arrow.LargeListOf(arrow.BinaryTypes.String), vals: lst(lst("x", nil), lst(), nil)},
		{name: "fsl", arrow: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), vals: lst(lst(int64(1), int64(2)), lst(nil, int64(4)), nil)},
	}
}

// buildMatrix builds a batch of (id BIGINT, the columns); row i holds value
// i of each column, NULL past its values; ids start at firstID.
func buildMatrix(t *testing.T, cols []matrixCol, firstID int64) arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	n := 0
	for _, c := range cols {
		n = max(n, len(c.vals))
	}
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	for i := range n {
		ib.Append(firstID + int64(i))
	}
	arrs := []arrow.Array{ib.NewArray()}
	for _, c := range cols {
		fields = append(fields, arrow.Field{Name: c.name, Type: c.arrow, Nullable: true})
		b := array.NewBuilder(mem, c.arrow)
		for i := range n {
			var v any
			if i < len(c.vals) {
				v = c.vals[i]
			}
			appendValue(t, b, v)
		}
		arrs = append(arrs, b.NewArray())
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

func appendValue(t *testing.T, b array.Builder, v any) {
	t.Helper()
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(int8(v.(int64)))
	case *array.Int16Builder:
		b.Append(int16(v.(int64)))
	case *array.Int32Builder:
		b.Append(int32(v.(int64)))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(uint8(v.(uint64)))
	case *array.Uint16Builder:
		b.Append(uint16(v.(uint64)))
	case *array.Uint32Builder:
		b.Append(uint32(v.(uint64)))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float16Builder:
		b.Append(float16.New(float32(v.(float64))))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Decimal128Builder:
		dt := b.Type().(*arrow.Decimal128Type)
		d, err := decimal128.FromString(v.(string), dt.Precision, dt.Scale)
		require.NoError(t, err)
		b.Append(d)
	case *array.Decimal256Builder:
		dt := b.Type().(*arrow.Decimal256Type)
		d, err := decimal256.FromString(v.(string), dt.Precision, dt.Scale)
		require.NoError(t, err)
		b.Append(d)
	case *array.BinaryDictionaryBuilder:
		require.NoError(t, b.AppendString(v.(string)))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.StringViewBuilder:
		b.Append(v.(string))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	case *array.BinaryViewBuilder:
		b.Append(v.([]byte))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(arrow.Date32FromTime(v.(time.Time)))
	case *array.Date64Builder:
		b.Append(arrow.Date64FromTime(v.(time.Time)))
	case *array.Time32Builder:
		unit := b.Type().(*arrow.Time32Type).Unit
		b.Append(arrow.Time32(v.(time.Duration) / unit.Multiplier()))
	case *array.Time64Builder:
		unit := b.Type().(*arrow.Time64Type).Unit
		b.Append(arrow.Time64(v.(time.Duration) / unit.Multiplier()))
	case *array.TimestampBuilder:
		unit := b.Type().(*arrow.TimestampType).Unit
		tv, err := arrow.TimestampFromTime(v.(time.Time), unit)
		require.NoError(t, err)
		b.Append(tv)
	case *array.MapBuilder:
		b.Append(true)
		for _, p := range v.([]pair) {
			appendValue(t, b.KeyBuilder(), p.k)
			appendValue(t, b.ItemBuilder(), p.v)
		}
	case *array.StructBuilder:
		b.Append(true)
		for j, fv := range v.([]any) {
			appendValue(t, b.FieldBuilder(j), fv)
		}
	case *array.FixedSizeListBuilder:
		b.Append(true)
		for _, e := range v.([]any) {
			appendValue(t, b.ValueBuilder(), e)
		}
	case array.ListLikeBuilder:
		b.Append(true)
		for _, e := range v.([]any) {
			appendValue(t, b.ValueBuilder(), e)
		}
	default:
		t.Fatalf("type matrix: no builder case for %T", b)
	}
}

// canonValue renders value i of col so that equal values of any Arrow type
// that can hold them render alike (an int8 and an int16 5, a time32[s] and a
// time64[ns] noon, a timestamp in any unit or zone at the same instant); long
// values are shortened to a prefix and a digest.
func canonValue(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Float16:
		return canonFloat(float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return canonFloat(float64(a.Value(i)), 32)
	case *array.Float64:
		return canonFloat(a.Value(i), 64)
	case *array.String:
		return shorten(a.Value(i))
	case *array.LargeString:
		return shorten(a.Value(i))
	case *array.StringView:
		return shorten(a.Value(i))
	case *array.Binary:
		return shorten("0x" + fmt.Sprintf("%x", a.Value(i)))
	case *array.LargeBinary:
		return shorten("0x" + fmt.Sprintf("%x", a.Value(i)))
	case *array.BinaryView:
		return shorten("0x" + fmt.Sprintf("%x", a.Value(i)))
	case *array.FixedSizeBinary:
		return shorten("0x" + fmt.Sprintf("%x", a.Value(i)))
	case *array.Dictionary:
		return canonValue(a.Dictionary(), a.GetValueIndex(i))
	case *array.Decimal128:
		return canonRat(a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.Decimal256:
		return canonRat(a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale))
	case *array.Date32:
		return a.Value(i).ToTime().UTC().Format("2006-01-02")
	case *array.Date64:
		return a.Value(i).ToTime().UTC().Format("2006-01-02")
	case *array.Time32:
		return canonTime(time.Duration(a.Value(i)) * a.DataType().(*arrow.Time32Type).Unit.Multiplier())
	case *array.Time64:
		return canonTime(time.Duration(a.Value(i)) * a.DataType().(*arrow.Time64Type).Unit.Multiplier())
	case *array.Timestamp:
		return canonTimestamp(a.Value(i), a.DataType().(*arrow.TimestampType).Unit)
	case *array.Map: // before the list cases: a map is a list
		start, end := a.ValueOffsets(i)
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			parts = append(parts, canonValue(a.Keys(), int(j))+"="+canonValue(a.Items(), int(j)))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *array.FixedSizeList:
		n := int64(a.DataType().(*arrow.FixedSizeListType).Len())
		parts := make([]string, 0, n)
		for j := int64(i) * n; j < int64(i+1)*n; j++ {
			parts = append(parts, canonValue(a.ListValues(), int(j)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			parts = append(parts, canonValue(a.ListValues(), int(j)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		parts := make([]string, a.NumField())
		for j := range parts {
			parts[j] = st.Field(j).Name + ": " + canonValue(a.Field(j), i)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	default:
		return col.ValueStr(i) // booleans and integers of every width
	}
}

func canonFloat(f float64, bits int) string {
	if f == 0 && math.Signbit(f) {
		return "-0"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func canonRat(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "BADDECIMAL(" + s + ")"
	}
	return r.RatString()
}

func canonTime(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d:%02d.%09d", d/time.Hour, d/time.Minute%60, d/time.Second%60, d%time.Second)
}

// canonTimestamp renders an instant as UTC with nanoseconds, without going
// through time.Time's nanosecond range (years 1 and 9999 in seconds).
func canonTimestamp(v arrow.Timestamp, unit arrow.TimeUnit) string {
	per := int64(time.Second / unit.Multiplier()) // units per second
	sec, frac := int64(v)/per, int64(v)%per
	if frac < 0 {
		sec, frac = sec-1, frac+per
	}
	return time.Unix(sec, 0).UTC().Format("2006-01-02T15:04:05") + fmt.Sprintf(".%09d", frac*int64(unit.Multiplier()))
}

func shorten(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q…(%d bytes, sha256 %x)", s[:24], len(s), sha256.Sum256([]byte(s)))
}

// canonColumns renders a result as id -> column -> value; every batch's
// columns are matched by name.
func canonColumns(t *testing.T, recs []arrow.RecordBatch) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, rec := range recs {
		idx := rec.Schema().FieldIndices("id")
		require.Len(t, idx, 1, "result has no single id column: %s", rec.Schema())
		for i := 0; i < int(rec.NumRows()); i++ {
			id := canonValue(rec.Column(idx[0]), i)
			row := map[string]string{}
			for j, f := range rec.Schema().Fields() {
				row[f.Name] = canonValue(rec.Column(j), i)
			}
			require.NotContains(t, out, id, "id %s twice", id)
			out[id] = row
		}
	}
	return out
}

// requireSameValues compares two canonical results column by column, so a
// failure names the column and id.
func requireSameValues(t *testing.T, want, got map[string]map[string]string, where string) {
	t.Helper()
	require.Equal(t, sortedKeys(want), sortedKeys(got), "%s: ids", where)
	var diffs []string
	for id, w := range want {
		for col, wv := range w {
			if gv, ok := got[id][col]; !ok {
				diffs = append(diffs, fmt.Sprintf("column %s missing", col))
			} else if gv != wv {
				diffs = append(diffs, fmt.Sprintf("id %s column %s: want %s, got %s", id, col, wv, gv))
			}
		}
	}
	sort.Strings(diffs)
	require.Empty(t, diffs, "%s: values differ", where)
}

func sameValues(want, got map[string]map[string]string) bool {
	if len(want) != len(got) {
		return false
	}
	for id, w := range want {
		for col, wv := range w {
			if got[id][col] != wv {
				return false
			}
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// queryBatches runs sql and returns its batches (retained).
func (c *client) queryBatches(sql string) ([]arrow.RecordBatch, error) {
	st, err := c.conn.NewStatement()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		return nil, err
	}
	r, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	return out, r.Err()
}

func (c *client) canonQuery(sql string) map[string]map[string]string {
	c.t.Helper()
	recs, err := c.queryBatches(sql)
	require.NoError(c.t, err, sql)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return canonColumns(c.t, recs)
}

// pypaimonCanon reads db.table's latest snapshot with pypaimon (as Arrow IPC).
func pypaimonCanon(t *testing.T, pr *paimonReader, warehouse, name string) map[string]map[string]string {
	t.Helper()
	db, table, _ := strings.Cut(name, ".")
	cat, err := lake.OpenCatalog(warehouse)
	require.NoError(t, err)
	tb, err := cat.GetTable(t.Context(), db, table)
	require.NoError(t, err)
	snap, err := tb.LatestSnapshot(context.Background())
	require.NoError(t, err)
	require.NotNil(t, snap, "%s has no snapshot", name)
	ans, err := pr.read(warehouse, name, snap.ID, "ipc")
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(ans.IPC)
	require.NoError(t, err)
	rd, err := ipc.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	defer rd.Release()
	var recs []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	require.NoError(t, rd.Err())
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return canonColumns(t, recs)
}

// javaCanon reads db.table with Java Paimon and renders its JSON rows like
// canonValue renders flightd's, using the Arrow types flightd serves.
func javaCanon(t *testing.T, jar, warehouse, name string, like []arrow.RecordBatch) map[string]map[string]string {
	t.Helper()
	rows, err := javaRead(jar, warehouse, name)
	require.NoError(t, err)
	require.NotEmpty(t, like)
	sc := like[0].Schema()
	out := map[string]map[string]string{}
	for _, r := range rows {
		row := map[string]string{}
		for _, f := range sc.Fields() {
			v, ok := r[f.Name]
			require.True(t, ok, "Java row has no column %q", f.Name)
			row[f.Name] = canonJavaValue(v, f.Type)
		}
		out[row["id"]] = row
	}
	return out
}

// canonJavaValue renders a PaimonCheck JSON value (see PaimonCheck.toJson)
// of the column flightd serves as typ.
func canonJavaValue(v any, typ arrow.DataType) string {
	if v == nil {
		return "NULL"
	}
	switch tt := typ.(type) {
	case *arrow.MapType:
		pairs, _ := v.([]any)
		parts := make([]string, len(pairs))
		for j, p := range pairs {
			kv, _ := p.([]any)
			if len(kv) != 2 {
				return fmt.Sprintf("BADMAP(%v)", v)
			}
			parts[j] = canonJavaValue(kv[0], tt.KeyType()) + "=" + canonJavaValue(kv[1], tt.ItemType())
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case arrow.ListLikeType:
		elems, _ := v.([]any)
		parts := make([]string, len(elems))
		for j, e := range elems {
			parts[j] = canonJavaValue(e, tt.Elem())
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *arrow.StructType:
		obj, _ := v.(map[string]any)
		parts := make([]string, tt.NumFields())
		for j, f := range tt.Fields() {
			parts[j] = f.Name + ": " + canonJavaValue(obj[f.Name], f.Type)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	s := fmt.Sprint(v)
	switch typ.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		bits := 64
		if typ.ID() != arrow.FLOAT64 {
			bits = 32
		}
		switch s {
		case "NaN":
			return "NaN"
		case "Infinity":
			return "+Inf"
		case "-Infinity":
			return "-Inf"
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			return "BADFLOAT(" + s + ")"
		}
		return canonFloat(f, bits)
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return shorten(s)
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "BADBASE64"
		}
		return shorten("0x" + fmt.Sprintf("%x", b))
	case arrow.DECIMAL128, arrow.DECIMAL256:
		return canonRat(s)
	case arrow.TIME32, arrow.TIME64:
		return canonTime(tod(s))
	case arrow.TIMESTAMP:
		tv, err := time.Parse("2006-01-02T15:04:05.999999999", s)
		if err != nil {
			return "BADTIMESTAMP(" + s + ")"
		}
		return tv.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%09d", tv.Nanosecond())
	}
	return s // booleans, integers, dates
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// TestTypeMatrix writes every value of the type matrix through the real
// binary and requires it back identically everywhere it can be read.
func TestTypeMatrix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir, "--tiering-interval", "1s")
	c := connect(t, srv)
	pr := startPaimonReader(t)
	c.mustExec("CREATE DATABASE tm")

	ddl := ddlMatrix()
	var cols []string
	for _, m := range ddl {
		cols = append(cols, m.name+" "+m.paimon)
	}
	c.mustExec("CREATE TABLE tm.pk (id BIGINT, " + strings.Join(cols, ", ") + ", PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("CREATE TABLE tm.ap (id BIGINT, " + strings.Join(cols, ", ") + ")")

	// The DDL tables: t$rt, t, t after compaction, pypaimon, Java.
	rec := buildMatrix(t, ddl, 0)
	defer rec.Release()
	want := canonColumns(t, []arrow.RecordBatch{rec})
	for _, name := range []string{"pk", "ap"} {
		t.Run("ddl/"+name, func(t *testing.T) {
			_, err := c.ingest("tm", name, adbc.OptionValueIngestModeAppend, rec)
			require.NoError(t, err, "ingest into tm.%s", name)
			requireSameValues(t, want, c.canonQuery(fmt.Sprintf(`SELECT * FROM tm."%s$rt"`, name)), "t$rt before tiering")
			waitTieredRows(t, srv, c, "tm."+name, len(want))
			requireSameValues(t, want, c.canonQuery("SELECT * FROM tm."+name), "t after tiering")
		})
	}
	// Primary-key table: the same rows four more times, each tiered, so
	// that the bucket's files are compacted into one.
	t.Run("ddl/pk/compacted", func(t *testing.T) {
		for range 4 {
			_, err := c.ingest("tm", "pk", adbc.OptionValueIngestModeAppend, rec)
			require.NoError(t, err)
			waitLakeEqualsRT(t, srv, c, "tm.pk")
		}
		requireSameValues(t, want, c.canonQuery("SELECT * FROM tm.pk"), "t after compaction")
		requireSameValues(t, want, c.canonQuery(`SELECT * FROM tm."pk$rt"`), "t$rt after compaction")
	})
	for _, name := range []string{"tm.pk", "tm.ap"} {
		t.Run("pypaimon/"+name, func(t *testing.T) {
			if pr == nil {
				t.Skip("FLIGHTD_PAIMON_PYTHON is not set")
			}
			// pypaimon's merge of overlapping key files goes through Python
			// datetimes, which hold microseconds: TIMESTAMP(7..9) read that
			// way is cut (a single file, read as Arrow, is exact). Java
			// reads the nanoseconds either way.
			got := pypaimonCanon(t, pr, wh, name)
			if cut := micros(want, "ts9", "lz9"); sameValues(cut, got) {
				t.Logf("pypaimon read %s's TIMESTAMP(9) values in microseconds", name)
				return
			}
			requireSameValues(t, want, got, "pypaimon")
		})
		t.Run("java/"+name, func(t *testing.T) {
			jar := paimonJar(t)
			like, err := c.queryBatches("SELECT * FROM " + name + " LIMIT 1")
			require.NoError(t, err)
			defer release(like)
			requireSameValues(t, want, javaCanon(t, jar, wh, name, like), "Java Paimon")
		})
	}

	// Partition values that need escaping in paths, in a partitioned key
	// table and a two-level append table. A key that leaves out a partition
	// column is refused, as Java Paimon refuses it for fixed buckets.
	t.Run("partitions", func(t *testing.T) {
		_, err := c.exec("CREATE TABLE tm.pbad (id BIGINT, p STRING, PRIMARY KEY (id) NOT ENFORCED) PARTITIONED BY (p)")
		require.ErrorContains(t, err, "partition")
		c.mustExec("CREATE TABLE tm.ppk (id BIGINT, p STRING, v INT, PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '2')")
		c.mustExec("CREATE TABLE tm.pap (id BIGINT, p STRING, d DATE) PARTITIONED BY (p, d)")
		pv := lst("a/b", "k=v", "nul\x00byte", "100%", "sp ace", "ünï", "", "#?:*", "..", "NULL")
		var dts []any
		for i := range pv {
			dts = append(dts, ts(fmt.Sprintf("2024-01-%02d 00:00:00", i+1)))
		}
		var vs []any
		for i := range pv {
			vs = append(vs, int64(i))
		}
		prec := buildMatrix(t, []matrixCol{{name: "p", arrow: arrow.BinaryTypes.String, vals: pv},
			{name: "v", arrow: arrow.PrimitiveTypes.Int32, vals: vs}}, 0)
		defer prec.Release()
		arec := buildMatrix(t, []matrixCol{{name: "p", arrow: arrow.BinaryTypes.String, vals: append(pv, nil)},
			{name: "d", arrow: arrow.FixedWidthTypes.Date32, vals: dts}}, 0)
		defer arec.Release()
		for name, r := range map[string]arrow.RecordBatch{"ppk": prec, "pap": arec} {
			wantP := canonColumns(t, []arrow.RecordBatch{r})
			_, err := c.ingest("tm", name, adbc.OptionValueIngestModeAppend, r)
			require.NoError(t, err, "ingest into tm.%s", name)
			requireSameValues(t, wantP, c.canonQuery(fmt.Sprintf(`SELECT * FROM tm."%s$rt"`, name)), name+": t$rt before tiering")
			waitTieredRows(t, srv, c, "tm."+name, len(wantP))
			requireSameValues(t, wantP, c.canonQuery("SELECT * FROM tm."+name), name+": t after tiering")
			if pr != nil {
				requireSameValues(t, wantP, pypaimonCanon(t, pr, wh, "tm."+name), name+": pypaimon")
			}
			like, err := c.queryBatches("SELECT * FROM tm." + name + " LIMIT 1")
			require.NoError(t, err)
			requireSameValues(t, wantP, javaCanon(t, paimonJar(t), wh, "tm."+name, like), name+": Java Paimon")
			release(like)
		}
	})

	// Ingest-create: every Arrow type a client may send, a table each.
	all := append(ddlMatrix(), clientMatrix()...)
	var created []string
	for _, m := range all {
		name := "c_" + m.name
		one := buildMatrix(t, []matrixCol{m}, 0)
		wantOne := canonColumns(t, []arrow.RecordBatch{one})
		_, err := c.ingest("tm", name, adbc.OptionValueIngestModeCreate, one)
		one.Release()
		if err != nil {
			require.True(t, m.mayRefuse, "ingest-create of %s (%s) refused: %v", m.name, m.arrow, err)
			require.Contains(t, errText(err), m.name, "the refusal of %s names the column", m.arrow)
			_, qerr := c.query("SELECT * FROM tm." + name)
			require.Error(t, qerr, "a refused ingest-create of %s left table tm.%s behind", m.arrow, name)
			continue
		}
		created = append(created, name)
		requireSameValues(t, wantOne, c.canonQuery(fmt.Sprintf(`SELECT * FROM tm."%s$rt"`, name)), "ingest-create "+m.name+": t$rt")
		// The batch a table was created from is accepted again.
		one = buildMatrix(t, []matrixCol{m}, 100)
		_, err = c.ingest("tm", name, adbc.OptionValueIngestModeAppend, one)
		one.Release()
		require.NoError(t, err, "append to tm.%s the batch shape it was created from", name)
	}
	for _, name := range created {
		t.Run("ingest/"+name, func(t *testing.T) {
			rt := c.canonQuery(fmt.Sprintf(`SELECT * FROM tm."%s$rt"`, name))
			waitTieredRows(t, srv, c, "tm."+name, len(rt))
			requireSameValues(t, rt, c.canonQuery("SELECT * FROM tm."+name), "t after tiering")
			if pr != nil {
				requireSameValues(t, rt, pypaimonCanon(t, pr, wh, "tm."+name), "pypaimon")
			}
		})
	}
}

// micros returns want with the named timestamp columns cut to microseconds.
func micros(want map[string]map[string]string, cols ...string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for id, row := range want {
		r := map[string]string{}
		for k, v := range row {
			r[k] = v
		}
		for _, c := range cols {
			if v := r[c]; len(v) > 3 && v != "NULL" {
				r[c] = v[:len(v)-3] + "000"
			}
		}
		out[id] = r
	}
	return out
}

// waitTieredRows waits until name (db.table) holds n rows in the lake and
// they equal its t$rt.
func waitTieredRows(t *testing.T, srv *testserver.Server, c *client, name string, n int) {
	t.Helper()
	testserver.Eventually(t, 45*time.Second, func() error {
		rows, err := c.query("SELECT count(*) FROM " + name)
		require.NoError(t, err, "count the rows of %s", name)
		if got := rows[0][0]; got != strconv.Itoa(n) {
			return fmt.Errorf("%s has %s rows in the lake, want %d; server log:\n%s", name, got, n, lastLines(srv.Log(), name, 3))
		}
		return nil
	})
	waitLakeEqualsRT(t, srv, c, name)
}

// waitLakeEqualsRT waits until name's lake snapshot holds everything its
// log does: its sys.tiering lag is zero.
func waitLakeEqualsRT(t *testing.T, srv *testserver.Server, c *client, name string) {
	t.Helper()
	db, table, _ := strings.Cut(name, ".")
	testserver.Eventually(t, 45*time.Second, func() error {
		rows, err := c.query(fmt.Sprintf("SELECT coalesce(sum(lag_rows), 0) FROM sys.tiering WHERE database = '%s' AND \"table\" = '%s'", db, table))
		require.NoError(t, err, "read sys.tiering")
		if lag := rows[0][0]; lag != "0" {
			return fmt.Errorf("%s: %s rows not tiered yet; server log:\n%s", name, lag, lastLines(srv.Log(), name, 3))
		}
		return nil
	})
}

// lastLines returns the last n lines of log that mention what.
func lastLines(log, what string, n int) string {
	var hits []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, what) {
			hits = append(hits, l[:min(len(l), 600)])
		}
	}
	return strings.Join(hits[max(0, len(hits)-n):], "\n")
}
