package lakestream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

// Schema changes that another engine (Java Paimon's ALTER TABLE) commits to
// the lake while rows wait in the log: the next statement sees them, and
// log rows written under an older schema are read (t$rt) and tiered under
// the new one.

// alterExternally writes the table's next schema file the way Java Paimon's
// SchemaManager does, behind flightd's back.
func alterExternally(t *testing.T, e *env, name string, change func(ts *paimontype.TableSchema)) {
	t.Helper()
	tb, err := e.cat.GetTable(t.Context(), "db", name)
	require.NoError(t, err)
	ns := *tb.Schema()
	ns.Fields = append([]paimontype.DataField(nil), ns.Fields...)
	change(&ns)
	ns.ID++
	ns.TimeMillis = time.Now().UnixMilli()
	data, err := ns.MarshalJSON()
	require.NoError(t, err)
	path := filepath.Join(tb.Path(), "schema", fmt.Sprintf("schema-%d", ns.ID))
	require.NoError(t, e.cat.FileIO().CreateExclusive(context.Background(), path, data))
}

func mustParseType(t *testing.T, s string) paimontype.DataType {
	t.Helper()
	dt, err := paimontype.ParseType(s)
	require.NoError(t, err)
	return dt
}

func addColumn(t *testing.T, name, typ string) func(ts *paimontype.TableSchema) {
	dt := mustParseType(t, typ)
	return func(ts *paimontype.TableSchema) {
		ts.HighestFieldID++
		ts.Fields = append(ts.Fields, paimontype.DataField{ID: ts.HighestFieldID, Name: name, Type: dt})
	}
}

func fieldIndex(ts *paimontype.TableSchema, name string) int {
	return slices.IndexFunc(ts.Fields, func(f paimontype.DataField) bool { return f.Name == name })
}

// scanRows renders every row of db.name (t$rt with realtime) as
// "col=value|..." in the reader's column order, sorted, and returns the
// column names too.
func scanRows(t *testing.T, e *env, name string, realtime bool) ([]string, []string) {
	t.Helper()
	r, err := e.ls.Scan(context.Background(), "db", name, realtime)
	require.NoError(t, err)
	defer r.Release()
	var cols []string
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	rows := []string{}
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, rec.NumCols())
			for j := range vals {
				vals[j] = rec.ColumnName(j) + "=" + render(rec.Column(j), i)
			}
			rows = append(rows, strings.Join(vals, "|"))
		}
	}
	require.NoError(t, r.Err())
	sort.Strings(rows)
	return rows, cols
}

func render(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "null"
	}
	switch a := col.(type) {
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.String:
		return a.Value(i)
	}
	return col.ValueStr(i)
}

// writeRows writes rows given as column name -> value (int64, string or nil)
// with the Arrow types named in types (INT, BIGINT, STRING), in order cols.
func writeRows(t *testing.T, e *env, name string, cols, types []string, rows []map[string]any) error {
	t.Helper()
	var fields []arrow.Field
	for i, c := range cols {
		dt := map[string]arrow.DataType{"INT": arrow.PrimitiveTypes.Int32, "BIGINT": arrow.PrimitiveTypes.Int64, "STRING": arrow.BinaryTypes.String}[types[i]]
		fields = append(fields, arrow.Field{Name: c, Type: dt, Nullable: c != "id"})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, r := range rows {
		for i, c := range cols {
			v := r[c]
			switch fb := b.Field(i).(type) {
			case *array.Int32Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(int32(v.(int64)))
				}
			case *array.Int64Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(int64))
				}
			case *array.StringBuilder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(string))
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := e.ls.Write(context.Background(), "db", name, rec)
	return err
}

// TestExternalAddColumnWhileRowsWaitInLogStillTiers: rows written with 2
// columns wait in the log when another engine adds a third. Tiering used to
// fail for good ("record has 2 columns, table has 3") and t$rt to panic
// after a restart; now t$rt shows the new column null for the old rows,
// tiering moves them, and t after tiering equals t$rt before.
func TestExternalAddColumnWhileRowsWaitInLogStillTiers(t *testing.T) {
	for _, buckets := range []int{0, 2} {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) {
			ctx := context.Background()
			e := openEnv(t, t.TempDir(), 1000)
			createTable(t, e, "t", buckets)
			rec := dataBatch([]int64{1, 2, 3}, []string{"a", "b", "c"})
			_, err := e.ls.Write(ctx, "db", "t", rec)
			rec.Release()
			require.NoError(t, err)

			alterExternally(t, e, "t", addColumn(t, "n", "INT"))
			rt, cols := scanRows(t, e, "t", true)
			require.Equal(t, []string{"id", "v", "n"}, cols, "the next statement sees the new column")
			require.Equal(t, []string{"id=1|v=a|n=null", "id=2|v=b|n=null", "id=3|v=c|n=null"}, rt)
			require.NoError(t, writeRows(t, e, "t", []string{"id", "v", "n"}, []string{"BIGINT", "STRING", "INT"},
				[]map[string]any{{"id": int64(4), "v": "d", "n": int64(7)}}))

			// After a restart the log entries are decoded again: no panic.
			e = e.reopen(t, 1000)
			rt, _ = scanRows(t, e, "t", true)
			require.Equal(t, []string{"id=1|v=a|n=null", "id=2|v=b|n=null", "id=3|v=c|n=null", "id=4|v=d|n=7"}, rt)

			res, err := e.tr.TierTable(ctx, "db", "t")
			require.NoError(t, err)
			require.Equal(t, int64(4), res.Rows)
			lakeRows, _ := scanRows(t, e, "t", false)
			require.Equal(t, rt, lakeRows, "t after tiering equals t$rt before")
			after, _ := scanRows(t, e, "t", true)
			require.Equal(t, rt, after)
		})
	}
}

// TestExternallyWidenedColumnTakesBigValuesWithoutRestart: INT widened to
// BIGINT by another engine; a value beyond INT's range used to be refused
// until a restart (the schema was cached for the life of the process).
func TestExternallyWidenedColumnTakesBigValuesWithoutRestart(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 1000)
	require.NoError(t, e.ls.CreateDatabase(ctx, "db", true))
	require.NoError(t, e.ls.CreateTable(ctx, "db", "w", paimontype.Schema{Columns: []paimontype.Column{
		{Name: "id", Type: mustParseType(t, "BIGINT")}, {Name: "n", Type: mustParseType(t, "INT")}}, PrimaryKeys: []string{"id"}}, false))
	require.NoError(t, writeRows(t, e, "w", []string{"id", "n"}, []string{"BIGINT", "INT"}, []map[string]any{{"id": int64(1), "n": int64(-5)}}))
	err := writeRows(t, e, "w", []string{"id", "n"}, []string{"BIGINT", "BIGINT"}, []map[string]any{{"id": int64(2), "n": int64(5000000000)}})
	require.ErrorIs(t, err, lakestream.ErrInvalidBatch, "INT does not hold 5000000000")

	alterExternally(t, e, "w", func(ts *paimontype.TableSchema) { ts.Fields[1].Type = mustParseType(t, "BIGINT") })
	sc, err := e.ls.ArrowSchema(ctx, "db", "w")
	require.NoError(t, err)
	require.Equal(t, arrow.PrimitiveTypes.Int64, sc.Field(1).Type)
	require.NoError(t, writeRows(t, e, "w", []string{"id", "n"}, []string{"BIGINT", "BIGINT"}, []map[string]any{{"id": int64(2), "n": int64(5000000000)}}))
	want := []string{"id=1|n=-5", "id=2|n=5000000000"}
	rt, _ := scanRows(t, e, "w", true)
	require.Equal(t, want, rt)
	_, err = e.tr.TierTable(ctx, "db", "w")
	require.NoError(t, err)
	got, _ := scanRows(t, e, "w", false)
	require.Equal(t, want, got)
}

// TestLogEntriesWithoutSchemaIDReadAfterSchemaChange: entries written before
// log entries recorded their schema (logcodec version 2) are matched to the
// schema whose columns they carry, and evolved like the others.
func TestLogEntriesWithoutSchemaIDReadAfterSchemaChange(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 1000)
	createTable(t, e, "old", 0)
	tb, err := e.ls.Table(ctx, "db", "old")
	require.NoError(t, err)
	sc := tb.Schema().ArrowSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	p, err := logcodec.Encode(rec, nil, 0)
	rec.Release()
	require.NoError(t, err)
	v2 := append([]byte{2, p[1]}, append(append([]byte(nil), p[2:10]...), p[18:]...)...)
	_, err = e.log.Append(ctx, []logstore.Entry{{Bucket: logstore.Bucket{Table: lakestream.TableID(tb), Bucket: 0}, Rows: 2, Payload: v2}})
	require.NoError(t, err)

	alterExternally(t, e, "old", func(ts *paimontype.TableSchema) { ts.Fields[1].Name = "v2" })
	alterExternally(t, e, "old", addColumn(t, "z", "STRING"))
	want := []string{"id=1|v2=x|z=null", "id=2|v2=y|z=null"}
	rt, _ := scanRows(t, e, "old", true)
	require.Equal(t, want, rt)
	_, err = e.tr.TierTable(ctx, "db", "old")
	require.NoError(t, err)
	got, _ := scanRows(t, e, "old", false)
	require.Equal(t, want, got)
}

// schemaModel is the table's columns as the model sees them.
type modelCol struct {
	id   int
	name string
	typ  string // INT, BIGINT, STRING
}

// TestSchemaChangesWhileRowsWaitInLogModel: writes, schema changes by
// another engine (add, rename, widen, drop, in random order), tiering
// rounds and restarts, interleaved at random; after every step t$rt equals
// a model that keeps values by field id, and once drained t equals it too.
func TestSchemaChangesWhileRowsWaitInLogModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for _, buckets := range []int{0, 3} {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) {
			for run := uint64(0); run < 4; run++ {
				s := seed + run
				rng := rand.New(rand.NewPCG(s, 7))
				schemaModelRun(t, rng, buckets, fmt.Sprintf("seed %d", s))
			}
		})
	}
}

func schemaModelRun(t *testing.T, rng *rand.Rand, buckets int, msg string) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 1000)
	createTable(t, e, "m", buckets)
	cols := []modelCol{{0, "id", "BIGINT"}, {1, "v", "STRING"}}
	highest := 1
	pkRows := map[int64]map[int]any{}
	var appendRows []map[int]any
	nextID := int64(0)
	names := 0
	var steps []string

	expect := func() []string {
		var src []map[int]any
		if buckets > 0 {
			for _, r := range pkRows {
				src = append(src, r)
			}
		} else {
			src = appendRows
		}
		out := []string{}
		for _, r := range src {
			vals := make([]string, len(cols))
			for i, c := range cols {
				v, ok := r[c.id]
				if !ok || v == nil {
					vals[i] = c.name + "=null"
				} else {
					vals[i] = c.name + "=" + fmt.Sprint(v)
				}
			}
			out = append(out, strings.Join(vals, "|"))
		}
		sort.Strings(out)
		return out
	}
	check := func(realtime bool) {
		got, gotCols := scanRows(t, e, "m", realtime)
		var wantCols []string
		for _, c := range cols {
			wantCols = append(wantCols, c.name)
		}
		require.Equal(t, wantCols, gotCols, "%s after %v", msg, steps)
		require.Equal(t, expect(), got, "%s after %v", msg, steps)
	}

	for step := 0; step < 40; step++ {
		switch p := rng.IntN(10); {
		case p < 5: // write
			n := 1 + rng.IntN(4)
			if rng.IntN(4) == 0 {
				n = 50 + rng.IntN(200)
			}
			var names, types []string
			for _, c := range cols {
				names, types = append(names, c.name), append(types, c.typ)
			}
			rows := make([]map[string]any, n)
			for i := range rows {
				id := nextID
				nextID++
				if buckets > 0 {
					id = int64(rng.IntN(30))
				}
				row := map[string]any{"id": id}
				mrow := map[int]any{0: id}
				for _, c := range cols[1:] {
					var v any
					switch {
					case rng.IntN(5) == 0:
					case c.typ == "STRING":
						v = fmt.Sprintf("s%d", rng.IntN(1000))
					case c.typ == "INT":
						v = int64(rng.Int32()) - 1<<30
					default:
						v = rng.Int64N(1<<40) - 1<<39
					}
					row[c.name], mrow[c.id] = v, v
				}
				rows[i] = row
				if buckets > 0 {
					pkRows[id] = mrow
				} else {
					appendRows = append(appendRows, mrow)
				}
			}
			require.NoError(t, writeRows(t, e, "m", names, types, rows), "%s after %v", msg, steps)
			steps = append(steps, fmt.Sprintf("write %d", n))
		case p < 7: // another engine changes the schema
			var kinds []string
			kinds = append(kinds, "add")
			if len(cols) > 1 {
				kinds = append(kinds, "rename")
			}
			if len(cols) > 2 {
				kinds = append(kinds, "drop")
			}
			if slices.ContainsFunc(cols, func(c modelCol) bool { return c.typ == "INT" }) {
				kinds = append(kinds, "widen")
			}
			kind := kinds[rng.IntN(len(kinds))]
			names++
			switch kind {
			case "add":
				typ := []string{"INT", "STRING"}[rng.IntN(2)]
				name := fmt.Sprintf("c%d", names)
				alterExternally(t, e, "m", addColumn(t, name, typ))
				highest++
				cols = append(cols, modelCol{highest, name, typ})
				steps = append(steps, "add "+name+" "+typ)
			case "rename":
				i := 1 + rng.IntN(len(cols)-1)
				name := fmt.Sprintf("r%d", names)
				old := cols[i].name
				alterExternally(t, e, "m", func(ts *paimontype.TableSchema) { ts.Fields[fieldIndex(ts, old)].Name = name })
				cols[i].name = name
				steps = append(steps, "rename "+old+" "+name)
			case "drop":
				i := 1 + rng.IntN(len(cols)-1)
				old := cols[i].name
				alterExternally(t, e, "m", func(ts *paimontype.TableSchema) {
					ts.Fields = slices.Delete(ts.Fields, fieldIndex(ts, old), fieldIndex(ts, old)+1)
				})
				cols = slices.Delete(cols, i, i+1)
				steps = append(steps, "drop "+old)
			case "widen":
				var ints []int
				for i, c := range cols {
					if c.typ == "INT" {
						ints = append(ints, i)
					}
				}
				i := ints[rng.IntN(len(ints))]
				old := cols[i].name
				alterExternally(t, e, "m", func(ts *paimontype.TableSchema) { ts.Fields[fieldIndex(ts, old)].Type = mustParseType(t, "BIGINT") })
				cols[i].typ = "BIGINT"
				steps = append(steps, "widen "+old)
			}
		case p < 9:
			_, err := e.tr.TierTable(ctx, "db", "m")
			require.NoError(t, err, "%s after %v", msg, steps)
			steps = append(steps, "tier")
		default:
			e = e.reopen(t, 1000)
			steps = append(steps, "restart")
		}
		check(true)
	}
	// The changelog reads the same log entries: under today's columns.
	cl, err := e.ls.Changelog(ctx, "db", "m")
	require.NoError(t, err, "%s after %v", msg, steps)
	require.Equal(t, 4+len(cols), cl.Schema().NumFields())
	for cl.Next() {
		require.Equal(t, int64(4+len(cols)), cl.RecordBatch().NumCols())
	}
	require.NoError(t, cl.Err(), "%s after %v", msg, steps)
	cl.Release()
	require.NoError(t, e.tr.Drain(ctx, "db", "m"), "%s after %v", msg, steps)
	check(false)
	check(true)
}

// TestScanPlannedOnOlderSchemaFailsCleanly: a statement that read the
// table's Arrow schema before another engine changed it, and scans after,
// gets ErrSchemaChanged, not columns its projection does not expect.
func TestScanPlannedOnOlderSchemaFailsCleanly(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 1000)
	createTable(t, e, "p", 2)
	planned, err := e.ls.ArrowSchema(ctx, "db", "p")
	require.NoError(t, err)
	alterExternally(t, e, "p", addColumn(t, "n", "INT"))
	_, err = e.ls.ScanWith(ctx, "db", "p", lakestream.ScanOptions{Realtime: true, Expect: planned})
	require.ErrorIs(t, err, lakestream.ErrSchemaChanged)
	now, err := e.ls.ArrowSchema(ctx, "db", "p")
	require.NoError(t, err)
	r, err := e.ls.ScanWith(ctx, "db", "p", lakestream.ScanOptions{Realtime: true, Expect: now})
	require.NoError(t, err)
	require.Equal(t, 3, r.Schema().NumFields())
	r.Release()
}
