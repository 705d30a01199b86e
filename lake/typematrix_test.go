package lake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/bufpool"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// matrixType is one Paimon type of the type matrix and its edge values,
// appended to a builder of the type's Arrow type (nil: null). JSON values
// (for nested types) go through array.FromJSON.
type matrixType struct {
	typ    string
	values []any
	json   string
}

// matrixTypes lists every Paimon type and precision the lake writes, with
// edge values: NULL, extremes, empty, unicode, NaN, ±Inf, -0.0.
func matrixTypes() []matrixType {
	f32 := []any{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), float32(0),
		float32(math.MaxFloat32), float32(-math.MaxFloat32), float32(math.SmallestNonzeroFloat32), nil}
	f64 := []any{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0.0, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, nil}
	strs := []any{"", "a", "é€😀\U0010FFFF", "\x00nul", strings.Repeat("long", 100), nil, "zzzz"}
	out := []matrixType{
		{typ: "BOOLEAN", values: []any{true, false, nil}},
		{typ: "TINYINT", values: []any{int8(math.MinInt8), int8(math.MaxInt8), int8(0), nil}},
		{typ: "SMALLINT", values: []any{int16(math.MinInt16), int16(math.MaxInt16), int16(0), nil}},
		{typ: "INT", values: []any{int32(math.MinInt32), int32(math.MaxInt32), int32(0), nil}},
		{typ: "BIGINT", values: []any{int64(math.MinInt64), int64(math.MaxInt64), int64(0), nil}},
		{typ: "FLOAT", values: f32},
		{typ: "DOUBLE", values: f64},
		{typ: "CHAR(5)", values: []any{"abcde", "é€😀ab", "", nil}},
		{typ: "VARCHAR(10)", values: []any{"", "é€😀", "\x00", nil, "0123456789"}},
		{typ: "STRING", values: strs},
		{typ: "BINARY(4)", values: []any{[]byte{0, 0, 0, 0}, []byte{0xff, 0xff, 0xff, 0xff}, []byte{1, 2, 3, 4}, nil}},
		{typ: "VARBINARY(8)", values: []any{[]byte{}, []byte{0xff}, []byte{0, 0x80}, nil}},
		{typ: "BYTES", values: []any{[]byte{}, []byte("é€"), []byte{0xff, 0, 0xff}, nil}},
		{typ: "DATE", values: []any{arrow.Date32(-719162), arrow.Date32(2932896), arrow.Date32(0), nil}},
		{typ: "ARRAY<INT>", json: `[[1, null, 3], [], null, [2147483647]]`},
		{typ: "ARRAY<STRING>", json: `[["a", "é€"], [null], null, [""]]`},
		{typ: "MAP<STRING, INT>", json: `[[{"key": "a", "value": 1}, {"key": "é", "value": null}], [], null]`},
		{typ: "ROW<a INT, b STRING>", json: `[{"a": 1, "b": "x"}, {"a": null, "b": null}, null]`},
		{typ: "ARRAY<ROW<a BIGINT, b ARRAY<STRING>>>", json: `[[{"a": 1, "b": ["x", null]}], [null], null, []]`},
		{typ: "MAP<INT, ARRAY<DOUBLE>>", json: `[[{"key": 1, "value": [1.5, null]}], null, []]`},
	}
	for _, p := range []int{0, 3, 6, 9} {
		out = append(out, matrixType{typ: fmt.Sprintf("TIME(%d)", p),
			values: []any{arrow.Time32(0), arrow.Time32(86399999), arrow.Time32(12345), nil}})
	}
	for _, ps := range [][2]int{{1, 0}, {9, 2}, {10, 0}, {18, 9}, {19, 0}, {28, 10}, {38, 0}, {38, 38}} {
		p, s := ps[0], ps[1]
		maxU := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil), big.NewInt(1))
		out = append(out, matrixType{typ: fmt.Sprintf("DECIMAL(%d, %d)", p, s), values: []any{
			decimal128.FromBigInt(maxU), decimal128.FromBigInt(new(big.Int).Neg(maxU)), decimal128.FromI64(0),
			decimal128.FromI64(1), nil}})
	}
	for _, ltz := range []bool{false, true} {
		for p := 0; p <= 9; p++ {
			typ := fmt.Sprintf("TIMESTAMP(%d)", p)
			if ltz {
				typ += " WITH LOCAL TIME ZONE"
			}
			// values in the Arrow unit of the precision: ms (p<=3), us (p<=6), ns
			unitsPerSec := int64(1000)
			switch {
			case p > 6:
				unitsPerSec = 1e9
			case p > 3:
				unitsPerSec = 1e6
			}
			frac := int64(0) // the finest fraction the precision holds, in the unit
			if p > 0 {
				frac = unitsPerSec / int64(math.Pow10(p))
			}
			vals := []any{arrow.Timestamp(0), arrow.Timestamp(-1 * unitsPerSec), arrow.Timestamp(-frac),
				arrow.Timestamp(1700000000*unitsPerSec + 7*frac), nil}
			if p <= 6 { // 0001-01-01 and 9999-12-31 23:59:59 fit ms and us
				vals = append(vals, arrow.Timestamp(-62135596800*unitsPerSec), arrow.Timestamp(253402300799*unitsPerSec))
			} else { // the ends of the nanosecond range
				vals = append(vals, arrow.Timestamp(math.MinInt64+1), arrow.Timestamp(math.MaxInt64))
			}
			out = append(out, matrixType{typ: typ, values: vals})
		}
	}
	return out
}

func appendMatrixValue(t *testing.T, b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Int8Builder:
		bb.Append(v.(int8))
	case *array.Int16Builder:
		bb.Append(v.(int16))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.Date32Builder:
		bb.Append(v.(arrow.Date32))
	case *array.Time32Builder:
		bb.Append(v.(arrow.Time32))
	case *array.TimestampBuilder:
		bb.Append(v.(arrow.Timestamp))
	case *array.Decimal128Builder:
		bb.Append(v.(decimal128.Num))
	default:
		t.Fatalf("no value appender for %T", b)
	}
}

// matrixColumn builds the column of mt with n rows (its values repeated).
func matrixColumn(t *testing.T, mt matrixType, dt arrow.DataType, n int) arrow.Array {
	mem := memory.DefaultAllocator
	if mt.json != "" {
		one, _, err := array.FromJSON(mem, dt, strings.NewReader(mt.json))
		require.NoError(t, err, mt.typ)
		defer one.Release()
		parts := make([]arrow.Array, 0, n)
		for len(parts)*one.Len() < n {
			parts = append(parts, one)
		}
		all, err := array.Concatenate(parts, mem)
		require.NoError(t, err)
		defer all.Release()
		return array.NewSlice(all, 0, int64(n))
	}
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i := 0; i < n; i++ {
		appendMatrixValue(t, b, mt.values[i%len(mt.values)])
	}
	return b.NewArray()
}

// cellStrings renders a column exactly: floats by their bits (NaN, -0.0),
// everything else by ValueStr (timestamps to the nanosecond, binary as
// base64, nested values as JSON).
func cellStrings(arr arrow.Array) []string {
	out := make([]string, arr.Len())
	for i := range out {
		switch {
		case arr.IsNull(i):
			out[i] = "null"
		case arr.DataType().ID() == arrow.FLOAT32:
			out[i] = fmt.Sprintf("%08x", math.Float32bits(arr.(*array.Float32).Value(i)))
		case arr.DataType().ID() == arrow.FLOAT64:
			out[i] = fmt.Sprintf("%016x", math.Float64bits(arr.(*array.Float64).Value(i)))
		case arr.DataType().ID() == arrow.TIMESTAMP:
			ts := arr.DataType().(*arrow.TimestampType)
			v := int64(arr.(*array.Timestamp).Value(i))
			out[i] = fmt.Sprint(v * map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}[ts.Unit])
		default:
			// A copy: a string column's ValueStr is its buffer, which a
			// pooled scan reuses once the batch is released.
			out[i] = strings.Clone(arr.ValueStr(i))
		}
	}
	return out
}

// TestTypeMatrixRoundTrip writes every Paimon type and precision with edge
// values to Parquet (an append table, one column per type), and checks that
// a scan gives back exactly what was written, after two commits and after
// compaction; that each file's statistics bound its values and decode
// (BinaryRow min/max per type); that each column is laid out in Parquet as
// Java's ParquetSchemaConverter lays it out; and, when $LAKE_PYPAIMON is set,
// that pypaimon reads the same values.
func TestTypeMatrixRoundTrip(t *testing.T) {
	ctx := context.Background()
	types := matrixTypes()
	cols := []paimontype.Column{{Name: "id", Type: mustType(t, "INT NOT NULL")}}
	for i, mt := range types {
		cols = append(cols, paimontype.Column{Name: fmt.Sprintf("c%d", i), Type: mustType(t, mt.typ)})
	}
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "types", paimontype.Schema{Columns: cols, Options: map[string]string{"metadata.stats-mode": "full"}}, false)
	require.NoError(t, err)
	const n = 12
	sc := tb.Schema().ArrowSchema()
	arrs := []arrow.Array{}
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	for i := 0; i < n; i++ {
		ib.Append(int32(i))
	}
	arrs = append(arrs, ib.NewArray())
	ib.Release()
	for i, mt := range types {
		arrs = append(arrs, matrixColumn(t, mt, sc.Field(i+1).Type, n))
	}
	rec := array.NewRecordBatch(sc, arrs, n)
	defer rec.Release()
	want := map[string][]string{}
	for i, f := range sc.Fields() {
		want[f.Name] = cellStrings(rec.Column(i))
	}

	var latest int64
	for k := 0; k < 2; k++ {
		w := tb.NewWrite(ctx)
		require.NoError(t, w.Write(ctx, 0, rec, nil, nil), "write")
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(k + 1), ExpectedLatest: latest})
		require.NoError(t, err, "commit")
		latest = s.ID
	}
	check := func(what string, s *Snapshot) {
		t.Helper()
		rr, err := tb.Scan(ctx, s, ScanOptions{})
		require.NoError(t, err)
		defer rr.Release()
		got := map[string][]string{}
		for rr.Next() {
			r := rr.RecordBatch()
			for i, f := range r.Schema().Fields() {
				got[f.Name] = append(got[f.Name], cellStrings(r.Column(i))...)
			}
		}
		require.NoError(t, rr.Err())
		for i, f := range sc.Fields() {
			typ := "INT"
			if i > 0 {
				typ = types[i-1].typ
			}
			require.Equal(t, append(append([]string{}, want[f.Name]...), want[f.Name]...), got[f.Name], "%s: column %s %s", what, f.Name, typ)
		}
		checkMatrixStats(t, tb, s, rec)
	}
	s, err := tb.Snapshot(ctx, latest)
	require.NoError(t, err)
	check("after two commits", s)
	checkParquetLayout(t, tb, s, types)
	cs, err := tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: latest, MinFiles: 2})
	require.NoError(t, err)
	require.NotNil(t, cs)
	check("after compaction", cs)

	javaReadsMatrix(t, c.Warehouse(), tb, rec)
	py := os.Getenv("LAKE_PYPAIMON")
	if py == "" {
		t.Log("LAKE_PYPAIMON not set: pypaimon read skipped")
		return
	}
	// pypaimon reads the table and writes what it read to Parquet, which is
	// compared here cell by cell.
	out := filepath.Join(t.TempDir(), "pypaimon.parquet")
	script := `
import sys
import pyarrow.parquet as pq
from pypaimon import CatalogFactory
cat = CatalogFactory.create({"warehouse": sys.argv[1]})
tb = cat.get_table("db.types")
rb = tb.new_read_builder()
t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
t = t.sort_by("id")
pq.write_table(t, sys.argv[2], version="2.6")
`
	o, err := exec.Command(py, "-c", script, c.Warehouse(), out).CombinedOutput()
	require.NoError(t, err, string(o))
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	require.NoError(t, err)
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(ctx)
	require.NoError(t, err)
	defer tbl.Release()
	var mismatched []string
	for i, f := range sc.Fields() {
		idx := tbl.Schema().FieldIndices(f.Name)
		require.Len(t, idx, 1, f.Name)
		var got []string
		for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
			got = append(got, cellStrings(ch)...)
		}
		// sorted by id: each row twice
		var exp []string
		for _, v := range want[f.Name] {
			exp = append(exp, v, v)
		}
		typ := "INT"
		if i > 0 {
			typ = types[i-1].typ
		}
		if fmt.Sprint(exp) != fmt.Sprint(got) {
			mismatched = append(mismatched, fmt.Sprintf("%s (pypaimon %s): want %v, got %v", typ, tbl.Column(idx[0]).DataType(), exp, got))
		}
	}
	require.Empty(t, mismatched, "pypaimon reads these columns differently")
}

// checkMatrixStats: every data file's value statistics decode and bound its
// non-null values, and its null counts are right.
func checkMatrixStats(t *testing.T, tb *Table, s *Snapshot, rec arrow.RecordBatch) {
	t.Helper()
	entries, _, err := tb.dataFiles(context.Background(), s)
	require.NoError(t, err)
	ts := tb.Schema()
	for _, e := range entries {
		names := e.File.ValueStatsCols
		if names == nil {
			for _, f := range ts.Fields {
				names = append(names, f.Name)
			}
		}
		var types []paimontype.DataType
		for _, nm := range names {
			types = append(types, ts.Fields[ts.FieldIndex(nm)].Type)
		}
		mins, err := decodeStatsRow(types, e.File.ValueStats.MinValues)
		require.NoError(t, err)
		maxs, err := decodeStatsRow(types, e.File.ValueStats.MaxValues)
		require.NoError(t, err)
		require.Len(t, mins, len(names))
		for i, nm := range names {
			fi := ts.FieldIndex(nm)
			col := rec.Column(fi)
			nulls := int64(col.NullN()) * (e.File.RowCount / rec.NumRows())
			require.Equal(t, nulls, *e.File.ValueStats.NullCounts[i], "null count of %s %s", nm, types[i])
			if types[i].Root == paimontype.TypeBinary || types[i].Root == paimontype.TypeVarBinary {
				require.Nil(t, mins[i], "%s: no bounds for binary", types[i])
				continue
			}
			require.NotNil(t, mins[i], "min of %s %s", nm, types[i])
			require.NotNil(t, maxs[i], "max of %s %s", nm, types[i])
			minHit, maxHit := false, false
			for r := 0; r < col.Len(); r++ {
				v := valueAt(col, r, types[i])
				if v == nil {
					continue
				}
				require.LessOrEqual(t, compareValues(mins[i], v), 0, "%s: min %v above %v", types[i], mins[i], v)
				require.GreaterOrEqual(t, compareValues(maxs[i], v), 0, "%s: max %v below %v", types[i], maxs[i], v)
				minHit = minHit || compareValues(mins[i], v) == 0
				maxHit = maxHit || compareValues(maxs[i], v) == 0
			}
			require.True(t, minHit && maxHit, "%s: bounds %v..%v are values of the file", types[i], mins[i], maxs[i])
		}
	}
}

// checkParquetLayout: each column's Parquet physical and logical type are
// those Java's ParquetSchemaConverter gives its Paimon type.
func checkParquetLayout(t *testing.T, tb *Table, s *Snapshot, types []matrixType) {
	t.Helper()
	ctx := context.Background()
	entries, _, err := tb.dataFiles(ctx, s)
	require.NoError(t, err)
	pf, err := openParquet(ctx, tb.fio, tb.dataFilePath(nil, nil, entries[0].Bucket, entries[0].File.FileName), memory.DefaultAllocator)
	require.NoError(t, err)
	defer pf.Close()
	sch := pf.pr.MetaData().Schema
	var wrong []string
	for i, mt := range types {
		dt := mustType(t, mt.typ)
		if dt.IsComposite() {
			continue
		}
		leaves := pf.fieldLeaves(fmt.Sprintf("c%d", i))
		require.Len(t, leaves, 1)
		col := sch.Column(leaves[0])
		phys, logical := col.PhysicalType().String(), col.LogicalType().String()
		var wantPhys, wantLogical string
		switch dt.Root {
		case paimontype.TypeBoolean:
			wantPhys, wantLogical = "BOOLEAN", "None"
		case paimontype.TypeTinyInt:
			wantPhys, wantLogical = "INT32", "Int(bitWidth=8, isSigned=true)"
		case paimontype.TypeSmallInt:
			wantPhys, wantLogical = "INT32", "Int(bitWidth=16, isSigned=true)"
		case paimontype.TypeInt: // Java writes no annotation; pqarrow writes INT(32), which Java reads as INT
			wantPhys, wantLogical = "INT32", "Int(bitWidth=32, isSigned=true)"
		case paimontype.TypeBigInt: // as INT: Java reads INT(64) as BIGINT
			wantPhys, wantLogical = "INT64", "Int(bitWidth=64, isSigned=true)"
		case paimontype.TypeFloat:
			wantPhys, wantLogical = "FLOAT", "None"
		case paimontype.TypeDouble:
			wantPhys, wantLogical = "DOUBLE", "None"
		case paimontype.TypeChar, paimontype.TypeVarChar:
			wantPhys, wantLogical = "BYTE_ARRAY", "String"
		case paimontype.TypeBinary, paimontype.TypeVarBinary:
			wantPhys, wantLogical = "BYTE_ARRAY", "None"
		case paimontype.TypeDate:
			wantPhys, wantLogical = "INT32", "Date"
		case paimontype.TypeTime:
			// Java annotates isAdjustedToUTC=true; pqarrow always writes false
			// for time32. Paimon readers (Java, pypaimon) read the int32
			// millis either way; the flag is not meaningful for a time of day.
			wantPhys, wantLogical = "INT32", "Time(isAdjustedToUTC=false, timeUnit=milliseconds)"
		case paimontype.TypeDecimal:
			wantPhys = "FIXED_LEN_BYTE_ARRAY"
			switch {
			case dt.Precision <= 9:
				wantPhys = "INT32"
			case dt.Precision <= 18:
				wantPhys = "INT64"
			}
			wantLogical = fmt.Sprintf("Decimal(precision=%d, scale=%d)", dt.Precision, dt.Scale)
		case paimontype.TypeTimestamp, paimontype.TypeTimestampLTZ:
			utc := dt.Root == paimontype.TypeTimestampLTZ
			switch {
			case dt.Precision <= 3:
				wantPhys, wantLogical = "INT64", fmt.Sprintf("Timestamp(isAdjustedToUTC=%t, timeUnit=milliseconds, is_from_converted_type=false, force_set_converted_type=false)", utc)
			case dt.Precision <= 6:
				wantPhys, wantLogical = "INT64", fmt.Sprintf("Timestamp(isAdjustedToUTC=%t, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)", utc)
			default:
				wantPhys, wantLogical = "INT96", "None"
			}
		}
		if dt.Root == paimontype.TypeDecimal && wantPhys == "FIXED_LEN_BYTE_ARRAY" && decimalFLBALen(dt.Precision) != col.TypeLength() {
			wrong = append(wrong, fmt.Sprintf("%s: fixed length %d, Java's %d", mt.typ, col.TypeLength(), decimalFLBALen(dt.Precision)))
		}
		if wantPhys != phys || wantLogical != logical {
			wrong = append(wrong, fmt.Sprintf("%s: %s %s, Java's %s %s", mt.typ, phys, logical, wantPhys, wantLogical))
		}
	}
	require.Empty(t, wrong, "Parquet layout differs from Java's")
}

// decimalFLBALen is Java's computeMinBytesForDecimalPrecision.
func decimalFLBALen(p int) int {
	n := 1
	for math.Pow(2, float64(8*n-1)) < math.Pow10(p) {
		n++
	}
	return n
}

// TestTypeMatrixAsPrimaryKey: every atomic type of the matrix as the
// primary key of a two-bucket table (BinaryRow key bytes, bucket hashing,
// _MIN_KEY/_MAX_KEY, key statistics): two commits of the same keys, the
// second wins, before and after compaction.
func TestTypeMatrixAsPrimaryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCatalog(t)
	for i, mt := range matrixTypes() {
		dt := mustType(t, mt.typ)
		if dt.IsComposite() {
			continue
		}
		t.Run(mt.typ, func(t *testing.T) {
			var keys []any
			seen := map[string]bool{}
			kt := dt.ArrowType()
			for _, v := range mt.values {
				if v == nil {
					continue
				}
				one := matrixColumn(t, matrixType{typ: mt.typ, values: []any{v}}, kt, 1)
				s := cellStrings(one)[0]
				one.Release()
				if !seen[s] {
					seen[s] = true
					keys = append(keys, v)
				}
			}
			tb, err := c.CreateTable(ctx, "db", fmt.Sprint("k", i), paimontype.Schema{Columns: []paimontype.Column{{Name: "k", Type: dt}, {Name: "v", Type: mustType(t, "INT")}},
				PrimaryKeys: []string{"k"}, Options: map[string]string{"bucket": "2"}}, false)
			require.NoError(t, err)
			sc := tb.Schema().ArrowSchema()
			var latest int64
			for round := int32(1); round <= 2; round++ {
				kc := matrixColumn(t, matrixType{typ: mt.typ, values: keys}, sc.Field(0).Type, len(keys))
				vb := array.NewInt32Builder(memory.DefaultAllocator)
				for range keys {
					vb.Append(round)
				}
				vc := vb.NewArray()
				vb.Release()
				rec := array.NewRecordBatch(sc, []arrow.Array{kc, vc}, int64(len(keys)))
				kc.Release()
				vc.Release()
				buckets, err := tb.Buckets(rec)
				require.NoError(t, err)
				w := tb.NewWrite(ctx)
				for b := int32(0); b < 2; b++ {
					var idx []int64
					for r, rb := range buckets {
						if rb == b {
							idx = append(idx, int64(r))
						}
					}
					if len(idx) == 0 {
						continue
					}
					sub, err := takeRecord(ctx, rec, idx, memory.DefaultAllocator)
					require.NoError(t, err)
					kinds := make([]RowKind, len(idx))
					require.NoError(t, w.Write(ctx, b, sub, kinds, idx))
					sub.Release()
				}
				rec.Release()
				s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(round), ExpectedLatest: latest})
				require.NoError(t, err)
				latest = s.ID
			}
			var want []string
			for s := range seen {
				want = append(want, s+"|2")
			}
			read := func(s *Snapshot) []string {
				rr, err := tb.Scan(ctx, s, ScanOptions{})
				require.NoError(t, err)
				defer rr.Release()
				var got []string
				for rr.Next() {
					r := rr.RecordBatch()
					ks, vs := cellStrings(r.Column(0)), cellStrings(r.Column(1))
					for j := range ks {
						got = append(got, ks[j]+"|"+vs[j])
					}
				}
				require.NoError(t, rr.Err())
				return got
			}
			s, err := tb.Snapshot(ctx, latest)
			require.NoError(t, err)
			require.ElementsMatch(t, want, read(s))
			cs, err := tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: latest, MinFiles: 2})
			require.NoError(t, err)
			require.NotNil(t, cs)
			require.ElementsMatch(t, want, read(cs))
		})
	}
}

// javaReadsMatrix has Java Paimon (the PaimonCheck jar named by
// $LAKE_PAIMON_CHECK_JAR, integration/java) read the table and compares
// every atomic cell with the value written, rendered as PaimonCheck renders
// it (Java's toString forms); composite columns are compared by count only.
func javaReadsMatrix(t *testing.T, warehouse string, tb *Table, rec arrow.RecordBatch) {
	t.Helper()
	jar := os.Getenv("LAKE_PAIMON_CHECK_JAR")
	if jar == "" {
		t.Log("LAKE_PAIMON_CHECK_JAR not set: Java Paimon read skipped")
		return
	}
	out, err := exec.Command("java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar,
		"read", warehouse, "db."+tb.Name()).Output()
	require.NoError(t, err, string(out))
	ts := tb.Schema()
	var mismatched []string
	rows := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		var got map[string]any
		require.NoError(t, d.Decode(&got), line)
		rows++
		id, err := got["id"].(json.Number).Int64()
		require.NoError(t, err)
		for i, f := range ts.Fields {
			if f.Type.IsComposite() {
				continue
			}
			want := javaCell(rec.Column(i), int(id), f.Type)
			if g := fmt.Sprint(got[f.Name]); g != want {
				mismatched = append(mismatched, fmt.Sprintf("%s row %d: Java %q, written %q", f.Type, id, g, want))
			}
		}
	}
	require.Equal(t, 2*int(rec.NumRows()), rows, "rows Java reads")
	require.Empty(t, mismatched, "Java reads these cells differently")
}

// javaCell renders arr[row] as PaimonCheck prints a value of type dt.
func javaCell(arr arrow.Array, row int, dt paimontype.DataType) string {
	v := valueAt(arr, row, dt)
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case float32:
		return javaFloatString(float64(x), 32)
	case float64:
		return javaFloatString(x, 64)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case manifest.Decimal:
		return plainDecimal(x.Unscaled, x.Scale)
	case manifest.Timestamp:
		return time.UnixMilli(x.Millis).UTC().Add(time.Duration(x.NanoOfMilli)).Format("2006-01-02T15:04:05.999999999")
	case int32:
		switch dt.Root {
		case paimontype.TypeDate:
			return time.Unix(int64(x)*86400, 0).UTC().Format("2006-01-02")
		case paimontype.TypeTime:
			return time.UnixMilli(int64(x)).UTC().Format("15:04:05.999999999")
		}
	}
	return fmt.Sprint(v)
}

// TestPartitionPathsAsJava: partition directories as Java Paimon names them
// (legacy names: Java's toString of each internal value, escaped by
// escapePathName), for a partition of every atomic type with edge values
// (strings with NUL, '/', '=', '%', blanks; -0.0, NaN, infinities,
// Float.MIN_VALUE; decimals; dates; timestamps to the nanosecond). Java
// Paimon ($LAKE_PAIMON_CHECK_JAR) writes the same rows into the table that
// flightd wrote: it must find every row's directory already there.
func TestPartitionPathsAsJava(t *testing.T) {
	jar := os.Getenv("LAKE_PAIMON_CHECK_JAR")
	if jar == "" {
		t.Skip("LAKE_PAIMON_CHECK_JAR not set")
	}
	ctx := context.Background()
	parts := []matrixType{
		{typ: "STRING", values: []any{"a b", "x\x00y", "a/b=c", "ü€", "%41", "", "{}[]^\x7f#", " "}},
		{typ: "INT", values: []any{int32(-1), int32(0), int32(math.MaxInt32)}},
		{typ: "BIGINT", values: []any{int64(math.MinInt64), int64(7)}},
		{typ: "FLOAT", values: []any{float32(1.5), float32(math.Copysign(0, -1)), float32(1e10), float32(math.SmallestNonzeroFloat32), float32(math.NaN()), float32(math.Inf(1))}},
		{typ: "DOUBLE", values: []any{0.1, math.Copysign(0, -1), 1e-5, math.SmallestNonzeroFloat64, math.Inf(-1), 1e21}},
		{typ: "DECIMAL(10, 2)", values: []any{decimal128.FromI64(-1250), decimal128.FromI64(0)}},
		{typ: "DECIMAL(38, 10)", values: []any{decimal128.FromBigInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(37), nil)), decimal128.FromI64(5)}},
		{typ: "DATE", values: []any{arrow.Date32(-719162), arrow.Date32(0), arrow.Date32(19000)}},
		{typ: "TIMESTAMP(3)", values: []any{arrow.Timestamp(-1), arrow.Timestamp(1700000000123)}},
		{typ: "TIMESTAMP(9)", values: []any{arrow.Timestamp(1700000000123456789), arrow.Timestamp(-1)}},
		{typ: "TIMESTAMP(6) WITH LOCAL TIME ZONE", values: []any{arrow.Timestamp(0), arrow.Timestamp(1700000000123456)}},
		{typ: "BOOLEAN", values: []any{true, false}},
		{typ: "TIME(3)", values: []any{arrow.Time32(12345), arrow.Time32(0)}},
	}
	cols := []paimontype.Column{{Name: "id", Type: mustType(t, "INT")}}
	var keys []string
	for i, p := range parts {
		name := fmt.Sprintf("p%d", i)
		cols = append(cols, paimontype.Column{Name: name, Type: mustType(t, p.typ)})
		keys = append(keys, name)
	}
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "parts", paimontype.Schema{Columns: cols, PartitionKeys: keys}, false)
	require.NoError(t, err)
	const n = 8
	sc := tb.Schema().ArrowSchema()
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	for i := 0; i < n; i++ {
		ib.Append(int32(i))
	}
	arrs := []arrow.Array{ib.NewArray()}
	ib.Release()
	for i, p := range parts {
		arrs = append(arrs, matrixColumn(t, p, sc.Field(i+1).Type, n))
	}
	rec := array.NewRecordBatch(sc, arrs, n)
	defer rec.Release()
	w := tb.NewWrite(ctx)
	require.NoError(t, w.Write(ctx, 0, rec, nil, nil))
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	tableDir := filepath.Join(c.Warehouse(), "db.db", "parts")
	dirs := func() []string {
		var out []string
		require.NoError(t, filepath.WalkDir(tableDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "bucket-") {
				rel, _ := filepath.Rel(tableDir, filepath.Dir(p))
				out = append(out, rel)
			}
			return err
		}))
		slices.Sort(out)
		return out
	}
	ours := dirs()
	require.Len(t, ours, n)

	// the same rows, as Java's PaimonCheck write reads them
	var lines []string
	ts := tb.Schema()
	for r := 0; r < n; r++ {
		row := map[string]any{"id": 1000 + r}
		for i := range parts {
			f := ts.Fields[i+1]
			v := valueAt(rec.Column(i+1), r, f.Type)
			switch x := v.(type) {
			case bool, string:
				row[f.Name] = x
			case float32, float64:
				row[f.Name] = javaCell(rec.Column(i+1), r, f.Type) // NaN, Infinity as text
			default:
				row[f.Name] = javaCell(rec.Column(i+1), r, f.Type)
			}
		}
		b, err := json.Marshal(row)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	rows := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out, err := exec.Command("java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar,
		"write", c.Warehouse(), "db.parts", rows).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, ours, dirs(), "Java wrote the same rows into other partition directories")

	// flightd reads both writers' rows with their partition values
	s, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	rr, err := tb.Scan(ctx, s, ScanOptions{})
	require.NoError(t, err)
	defer rr.Release()
	byID := map[int32][]string{}
	for rr.Next() {
		r := rr.RecordBatch()
		for i := 0; i < int(r.NumRows()); i++ {
			id := r.Column(0).(*array.Int32).Value(i)
			var cells []string
			for k := 1; k < int(r.NumCols()); k++ {
				cells = append(cells, cellStrings(array.NewSlice(r.Column(k), int64(i), int64(i+1)))[0])
			}
			byID[id] = cells
		}
	}
	require.NoError(t, rr.Err())
	require.Len(t, byID, 2*n)
	for r := int32(0); r < n; r++ {
		require.Equal(t, byID[r], byID[1000+r], "row %d as flightd and Java wrote it", r)
	}
}

// TestPooledScanSendsNoStaleBytes scans every type of the matrix, in row
// groups large enough for the pool's size classes, through a pool whose
// buffers hold other bytes (0xab, or 0xdb under the race detector's
// poisoning): the values equal a scan with Go's allocator, and the slots
// under nulls of fixed-width columns, which the unzeroed reads do not
// write, do not hold an earlier buffer's bytes.
func TestPooledScanSendsNoStaleBytes(t *testing.T) {
	ctx := context.Background()
	// The flat types, one precision of each (nested columns and the other
	// precisions read as their neighbours do).
	var types []matrixType
	seen := map[string]bool{}
	for _, mt := range matrixTypes() {
		family, _, _ := strings.Cut(mt.typ, "(")
		if mt.json == "" && !seen[family] {
			seen[family] = true
			types = append(types, mt)
		}
	}
	cols := []paimontype.Column{{Name: "id", Type: mustType(t, "INT NOT NULL")}}
	for i, mt := range types {
		cols = append(cols, paimontype.Column{Name: fmt.Sprintf("c%d", i), Type: mustType(t, mt.typ)})
	}
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "types", paimontype.Schema{Columns: cols}, false)
	require.NoError(t, err)
	const n = 17_000 // an INT column of a row group is 68 KB, a pooled class
	sc := tb.Schema().ArrowSchema()
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	for i := 0; i < n; i++ {
		ib.Append(int32(i))
	}
	arrs := []arrow.Array{ib.NewArray()}
	ib.Release()
	for i, mt := range types {
		arrs = append(arrs, matrixColumn(t, mt, sc.Field(i+1).Type, n))
	}
	rec := array.NewRecordBatch(sc, arrs, n)
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	w := tb.NewWrite(ctx)
	require.NoError(t, w.Write(ctx, 0, rec, nil, nil))
	snap, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	scan := func(mem memory.Allocator) map[string][]string {
		rr, err := tb.ScanWith(ctx, snap, ScanOptions{}, ScanTuning{Allocator: mem})
		require.NoError(t, err)
		defer rr.Release()
		got := map[string][]string{}
		for rr.Next() {
			r := rr.RecordBatch()
			for i, f := range r.Schema().Fields() {
				col := r.Column(i)
				got[f.Name] = append(got[f.Name], cellStrings(col)...)
				if _, ok := col.DataType().(arrow.FixedWidthDataType); !ok || col.DataType().ID() == arrow.BOOL || col.NullN() == 0 {
					continue
				}
				width := col.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
				vals := col.Data().Buffers()[1].Bytes()
				for j := 0; j < col.Len(); j++ {
					at := (col.Data().Offset() + j) * width
					stale := func(b byte) bool { return b != 0xab && b != 0xdb }
					if col.IsNull(j) && !slices.ContainsFunc(vals[at:at+width], stale) {
						t.Fatalf("column %s (%s): row %d is null and its slot holds an earlier buffer's bytes %x", f.Name, col.DataType(), j, vals[at:at+width])
					}
				}
			}
		}
		require.NoError(t, rr.Err())
		return got
	}
	want := scan(memory.NewGoAllocator())
	pool := bufpool.New()
	for round := 0; round < 2; round++ {
		// Fill the pool with dirty buffers of every class a row group uses.
		var held [][]byte
		for size := 1 << 16; size <= 1<<19; size <<= 1 {
			for k := 0; k < 4; k++ {
				b := pool.Allocate(size)
				b[0] = 0xab
				for i := 1; i < len(b); i *= 2 {
					copy(b[i:], b[:i])
				}
				held = append(held, b)
			}
		}
		for _, b := range held {
			pool.Free(b)
		}
		got := scan(pool)
		for i, f := range sc.Fields() {
			typ := "INT"
			if i > 0 {
				typ = types[i-1].typ
			}
			require.Equal(t, want[f.Name], got[f.Name], "round %d: column %s %s", round, f.Name, typ)
		}
	}
}
