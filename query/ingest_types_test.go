//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/tiering"
)

// newTieredEngine is an engine with a tiering service to run rounds by hand.
func newTieredEngine(t *testing.T) (*Engine, *tiering.Service) {
	t.Helper()
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ls := lakestream.New(cat, log, lakestream.Options{})
	tr := tiering.New(ls, tiering.Options{})
	e, err := New(ls, Options{Threads: 2, Drain: tr.Drain, TempDir: filepath.Join(dir, "duckdb-tmp")})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e, tr
}

// oneColumn is a batch of one nullable column "c" built by fill.
func oneColumn(typ arrow.DataType, fill func(b array.Builder)) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fill(b.Field(0))
	return b.NewRecordBatch()
}

// built is an array of typ built by fill.
func built(typ arrow.DataType, fill func(b array.Builder)) arrow.Array {
	b := array.NewBuilder(memory.DefaultAllocator, typ)
	defer b.Release()
	fill(b)
	return b.NewArray()
}

func ingestOne(e *Engine, table string, create bool, rec arrow.RecordBatch) (int64, error) {
	r, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return 0, err
	}
	defer r.Release()
	return e.Ingest(context.Background(), DefaultDatabase, table, create, r)
}

// readColumn reads column c of table (t or t$rt) without DuckDB, a value
// per row (as Arrow prints it), with the column's type.
func readColumn(t *testing.T, e *Engine, table string) ([]string, arrow.DataType) {
	t.Helper()
	res, err := e.Execute(context.Background(), plan.Analyze(fmt.Sprintf(`SELECT c FROM "%s"`, table)))
	require.NoError(t, err)
	defer res.Reader.Release()
	var out []string
	for res.Reader.Next() {
		out = append(out, values(res.Reader.RecordBatch().Column(0))...)
	}
	require.NoError(t, res.Reader.Err())
	return out, res.Reader.Schema().Field(0).Type
}

func values(a arrow.Array) []string {
	out := make([]string, a.Len())
	for i := range out {
		out[i] = strings.Clone(a.ValueStr(i)) // the batch is released later
	}
	return out
}

// TestIngestCreatesExactTypesForEveryArrowType: every Arrow type a client
// sends through ingest (mode create, then append) becomes a column that
// holds its values exactly, the batch the table was created from is
// accepted, and the table tiers into the lake and reads back the same.
// Before, time64[us] created a TIME(6) stored as milliseconds that refused
// its own batch (leaving an empty table; now TIME(3), see
// TestIngestCreateThatFailsLeavesNoTable for finer values), and lists, structs, maps,
// uint64, dictionaries and decimal256 could not be created at all.
func TestIngestCreatesExactTypesForEveryArrowType(t *testing.T) {
	e, tr := newTieredEngine(t)
	ctx := context.Background()
	elem := func(typ arrow.DataType) arrow.DataType {
		return arrow.ListOfField(arrow.Field{Name: "element", Type: typ, Nullable: true})
	}
	cases := []struct {
		name   string
		typ    arrow.DataType
		fill   func(b array.Builder)
		paimon string
		want   arrow.Array // the values as the table's Arrow type holds them
	}{
		{"uint8", arrow.PrimitiveTypes.Uint8, func(b array.Builder) { b.(*array.Uint8Builder).AppendValues([]uint8{0, 255}, nil); b.AppendNull() },
			"SMALLINT", built(arrow.PrimitiveTypes.Int16, func(b array.Builder) { b.(*array.Int16Builder).AppendValues([]int16{0, 255}, nil); b.AppendNull() })},
		{"uint32", arrow.PrimitiveTypes.Uint32, func(b array.Builder) { b.(*array.Uint32Builder).AppendValues([]uint32{0, math.MaxUint32}, nil) },
			"BIGINT", built(arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.(*array.Int64Builder).AppendValues([]int64{0, math.MaxUint32}, nil) })},
		{"uint64", arrow.PrimitiveTypes.Uint64, func(b array.Builder) {
			b.(*array.Uint64Builder).AppendValues([]uint64{0, math.MaxUint64}, nil)
			b.AppendNull()
		},
			"DECIMAL(20, 0)", built(&arrow.Decimal128Type{Precision: 20}, func(b array.Builder) {
				b.(*array.Decimal128Builder).Append(decimal128.FromU64(0))
				b.(*array.Decimal128Builder).Append(decimal128.FromU64(math.MaxUint64))
				b.AppendNull()
			})},
		{"float16", arrow.FixedWidthTypes.Float16, func(b array.Builder) {
			b.(*array.Float16Builder).AppendValues([]float16.Num{float16.New(1.5), float16.New(-65504)}, nil)
		}, "FLOAT", built(arrow.PrimitiveTypes.Float32, func(b array.Builder) { b.(*array.Float32Builder).AppendValues([]float32{1.5, -65504}, nil) })},
		{"large_utf8", arrow.BinaryTypes.LargeString, func(b array.Builder) { b.(*array.LargeStringBuilder).AppendValues([]string{"a", "ü"}, nil) },
			"STRING", built(arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).AppendValues([]string{"a", "ü"}, nil) })},
		{"string_view", arrow.BinaryTypes.StringView, func(b array.Builder) {
			b.(*array.StringViewBuilder).AppendValues([]string{"short", "a string longer than twelve bytes"}, nil)
		}, "STRING", built(arrow.BinaryTypes.String, func(b array.Builder) {
			b.(*array.StringBuilder).AppendValues([]string{"short", "a string longer than twelve bytes"}, nil)
		})},
		{"large_binary", arrow.BinaryTypes.LargeBinary, func(b array.Builder) { b.(*array.BinaryBuilder).AppendValues([][]byte{{0, 1}, {}}, nil) },
			"BYTES", built(arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).AppendValues([][]byte{{0, 1}, {}}, nil) })},
		{"binary_view", arrow.BinaryTypes.BinaryView, func(b array.Builder) { b.(*array.BinaryViewBuilder).AppendValues([][]byte{{0, 1}, {2}}, nil) },
			"BYTES", built(arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).AppendValues([][]byte{{0, 1}, {2}}, nil) })},
		{"fixed_size_binary", &arrow.FixedSizeBinaryType{ByteWidth: 3}, func(b array.Builder) { b.(*array.FixedSizeBinaryBuilder).AppendValues([][]byte{{1, 2, 3}}, nil) },
			"BINARY(3)", built(arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).AppendValues([][]byte{{1, 2, 3}}, nil) })},
		{"dictionary", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, func(b array.Builder) {
			db := b.(*array.BinaryDictionaryBuilder)
			_ = db.AppendString("x")
			_ = db.AppendString("y")
			_ = db.AppendString("x")
			db.AppendNull()
		}, "STRING", built(arrow.BinaryTypes.String, func(b array.Builder) {
			b.(*array.StringBuilder).AppendValues([]string{"x", "y", "x"}, nil)
			b.AppendNull()
		})},
		{"decimal256", &arrow.Decimal256Type{Precision: 38, Scale: 2}, func(b array.Builder) {
			b.(*array.Decimal256Builder).Append(decimal256.FromI64(-12345))
		}, "DECIMAL(38, 2)", built(&arrow.Decimal128Type{Precision: 38, Scale: 2}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(-12345))
		})},
		{"decimal64", &arrow.Decimal64Type{Precision: 18, Scale: 3}, func(b array.Builder) {
			b.(*array.Decimal64Builder).Append(123456789012345678)
		}, "DECIMAL(18, 3)", built(&arrow.Decimal128Type{Precision: 18, Scale: 3}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(123456789012345678))
		})},
		{"date64", arrow.FixedWidthTypes.Date64, func(b array.Builder) { b.(*array.Date64Builder).Append(arrow.Date64(19000 * 86400000)) },
			"DATE", built(arrow.FixedWidthTypes.Date32, func(b array.Builder) { b.(*array.Date32Builder).Append(19000) })},
		{"timestamp_s", &arrow.TimestampType{Unit: arrow.Second}, func(b array.Builder) { b.(*array.TimestampBuilder).Append(1700000000) },
			"TIMESTAMP(0)", built(&arrow.TimestampType{Unit: arrow.Millisecond}, func(b array.Builder) { b.(*array.TimestampBuilder).Append(1700000000000) })},
		{"timestamp_ns", &arrow.TimestampType{Unit: arrow.Nanosecond}, func(b array.Builder) { b.(*array.TimestampBuilder).Append(1700000000123456789) },
			"TIMESTAMP(9)", built(&arrow.TimestampType{Unit: arrow.Nanosecond}, func(b array.Builder) { b.(*array.TimestampBuilder).Append(1700000000123456789) })},
		{"timestamp_us_zone", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, func(b array.Builder) { b.(*array.TimestampBuilder).Append(1700000000123456) },
			"TIMESTAMP(6) WITH LOCAL TIME ZONE", built(&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, func(b array.Builder) { b.(*array.TimestampBuilder).Append(1700000000123456) })},
		{"time32_s", arrow.FixedWidthTypes.Time32s, func(b array.Builder) { b.(*array.Time32Builder).Append(3661) },
			"TIME(3)", built(arrow.FixedWidthTypes.Time32ms, func(b array.Builder) { b.(*array.Time32Builder).Append(3661000) })},
		{"list", arrow.ListOf(arrow.PrimitiveTypes.Int64), func(b array.Builder) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
			lb.AppendNull()
			lb.Append(true)
		}, "ARRAY<BIGINT>", built(elem(arrow.PrimitiveTypes.Int64), func(b array.Builder) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
			lb.AppendNull()
			lb.Append(true)
		})},
		{"large_list_of_uint8", arrow.LargeListOf(arrow.PrimitiveTypes.Uint8), func(b array.Builder) {
			lb := b.(*array.LargeListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Uint8Builder).AppendValues([]uint8{200, 7}, nil)
		}, "ARRAY<SMALLINT>", built(elem(arrow.PrimitiveTypes.Int16), func(b array.Builder) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int16Builder).AppendValues([]int16{200, 7}, nil)
		})},
		{"fixed_size_list", arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64), func(b array.Builder) {
			lb := b.(*array.FixedSizeListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{1.5, 2.5}, nil)
			lb.AppendNull()
		}, "ARRAY<DOUBLE>", built(elem(arrow.PrimitiveTypes.Float64), func(b array.Builder) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{1.5, 2.5}, nil)
			lb.AppendNull()
		})},
		{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Uint16, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.LargeString, Nullable: true}), func(b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Uint16Builder).Append(65535)
			sb.FieldBuilder(1).(*array.LargeStringBuilder).Append("s")
			sb.AppendNull()
		}, "ROW<`a` INT, `b` STRING>", built(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), func(b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(65535)
			sb.FieldBuilder(1).(*array.StringBuilder).Append("s")
			sb.AppendNull()
		})},
		{"map", arrow.MapOf(arrow.BinaryTypes.LargeString, arrow.PrimitiveTypes.Int32), func(b array.Builder) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.LargeStringBuilder).AppendValues([]string{"k1", "k2"}, nil)
			mb.ItemBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
			mb.AppendNull()
		}, "MAP<STRING NOT NULL, INT>", built(arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), func(b array.Builder) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).AppendValues([]string{"k1", "k2"}, nil)
			mb.ItemBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
			mb.AppendNull()
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer c.want.Release()
			rec := oneColumn(c.typ, c.fill)
			defer rec.Release()
			n, err := ingestOne(e, c.name, true, rec)
			require.NoError(t, err, "the batch a table is created from is accepted")
			require.Equal(t, rec.NumRows(), n)
			tb, err := e.ls.Table(ctx, DefaultDatabase, c.name)
			require.NoError(t, err)
			require.Equal(t, c.paimon, tb.Schema().Fields[0].Type.String())
			want := values(c.want)
			got, typ := readColumn(t, e, c.name+"$rt")
			require.Equal(t, want, got)
			require.True(t, arrow.TypeEqual(c.want.DataType(), typ), "%s read as %s", c.want.DataType(), typ)
			// Appending the same batch again is accepted too.
			n, err = ingestOne(e, c.name, false, rec)
			require.NoError(t, err)
			require.Equal(t, rec.NumRows(), n)
			want = append(want, want...)
			got, _ = readColumn(t, e, c.name+"$rt")
			require.Equal(t, want, got)
			// It tiers, and the lake reads back the same.
			res, err := tr.TierTable(ctx, DefaultDatabase, c.name)
			if c.name == "timestamp_ns" && err != nil && strings.Contains(err.Error(), "precision > 6") {
				t.Skipf("the lake does not write TIMESTAMP(7..9) yet: %v", err)
			}
			require.NoError(t, err)
			require.Equal(t, 2*rec.NumRows(), res.Rows)
			got, _ = readColumn(t, e, c.name)
			require.Equal(t, want, got)
		})
	}
}

// TestIngestRefusesTypesWithoutPaimonCounterpartUpFront: a type no
// Paimon type holds exactly is refused before any table exists, naming
// the column and the type.
func TestIngestRefusesTypesWithoutPaimonCounterpartUpFront(t *testing.T) {
	e := newTestEngine(t)
	for _, c := range []struct {
		name string
		typ  arrow.DataType
		want string
	}{
		{"decimal256_wide", &arrow.Decimal256Type{Precision: 50, Scale: 2}, `decimal256(50, 2) has no Paimon counterpart: Paimon decimals hold at most 38 digits`},
		{"nulls", arrow.Null, `Arrow type null (a column of nulls only) has no Paimon counterpart`},
		{"duration", arrow.FixedWidthTypes.Duration_s, `duration[s] has no Paimon counterpart`},
		{"list_of_duration", arrow.ListOf(arrow.FixedWidthTypes.Duration_ms), `list element: Arrow type duration[ms]`},
		{"_rowkind", arrow.BinaryTypes.String, `the batch has a _rowkind column, but ingest creates append tables`},
	} {
		col := "c"
		if c.name == "_rowkind" {
			col = c.name
		}
		sc := arrow.NewSchema([]arrow.Field{{Name: col, Type: c.typ, Nullable: true}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		b.Field(0).AppendNull()
		rec := b.NewRecordBatch()
		b.Release()
		_, err := ingestOne(e, c.name, true, rec)
		rec.Release()
		require.ErrorIs(t, err, engine.ErrInvalid, c.name)
		require.ErrorContains(t, err, "create default."+c.name+" from ingest", c.name)
		require.ErrorContains(t, err, c.want, c.name)
		_, err = e.ls.Table(t.Context(), DefaultDatabase, c.name)
		require.Error(t, err, "%s: no table is left behind", c.name)
	}
}

// TestIngestCreateThatFailsLeavesNoTable: a first batch the new table
// would refuse (a date64 with a time of day, a null in a non-nullable
// field) is refused before the table is created.
func TestIngestCreateThatFailsLeavesNoTable(t *testing.T) {
	e := newTestEngine(t)
	rec := oneColumn(arrow.FixedWidthTypes.Date64, func(b array.Builder) { b.(*array.Date64Builder).Append(86400000 + 1) })
	defer rec.Release()
	_, err := ingestOne(e, "d64", true, rec)
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, `column "c"`)
	_, err = e.ls.Table(t.Context(), DefaultDatabase, "d64")
	require.Error(t, err, "no table is left behind")

	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(0).AppendNull()
	bad := b.NewRecordBatch()
	b.Release()
	defer bad.Release()
	_, err = ingestOne(e, "nn", true, bad)
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, `column "id" is NOT NULL`)
	_, err = e.ls.Table(t.Context(), DefaultDatabase, "nn")
	require.Error(t, err, "no table is left behind")

	// Paimon's TIME holds milliseconds: a time64 value with a finer part
	// is refused, never cut, and the table is not created.
	fine := oneColumn(arrow.FixedWidthTypes.Time64us, func(b array.Builder) { b.(*array.Time64Builder).Append(45296789012) })
	defer fine.Release()
	_, err = ingestOne(e, "t64", true, fine)
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, `column "c"`)
	require.ErrorContains(t, err, "Paimon stores TIME as milliseconds")
	_, err = e.ls.Table(t.Context(), DefaultDatabase, "t64")
	require.Error(t, err, "no table is left behind")
}
