package lake

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
)

// buildAny builds a record of the table's columns from rows of values by column name (missing:
// null); int64 values fill INT and BIGINT columns, strings STRING columns.
func buildAny(t *testing.T, tb *Table, rows []map[string]any) arrow.RecordBatch {
	t.Helper()
	sc := tb.Schema().ArrowSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, f := range sc.Fields() {
			v, ok := r[f.Name]
			if !ok || v == nil {
				b.Field(i).AppendNull()
				continue
			}
			switch fb := b.Field(i).(type) {
			case *array.Int32Builder:
				fb.Append(int32(v.(int64)))
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			default:
				t.Fatalf("buildAny: column %s of type %s", f.Name, f.Type)
			}
		}
	}
	return b.NewRecordBatch()
}

func commitAny(t *testing.T, tb *Table, rows []map[string]any) *Snapshot {
	t.Helper()
	ctx := context.Background()
	rec := buildAny(t, tb, rows)
	defer rec.Release()
	prev, err := tb.latestSnapshotID(ctx)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	var kinds []RowKind
	var seqs []int64
	if tb.Schema().HasPrimaryKey() {
		for i := range rows {
			kinds = append(kinds, Insert)
			seqs = append(seqs, int64(i))
		}
	}
	require.NoError(t, w.Write(ctx, 0, rec, kinds, seqs))
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: prev + 1, ExpectedLatest: prev})
	require.NoError(t, err)
	return s
}

// evolve writes the next schema file as Java's SchemaManager would for these changes.
func evolve(t *testing.T, c *Catalog, name string, change func(ts *paimontype.TableSchema)) *Table {
	t.Helper()
	tb, err := c.GetTable(t.Context(), "db", name)
	require.NoError(t, err)
	ns := *tb.Schema()
	ns.Fields = append([]paimontype.DataField(nil), ns.Fields...)
	change(&ns)
	ns.ID++
	data, err := ns.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, c.fio.CreateExclusive(context.Background(), schemaPath(tb.Path(), ns.ID), data))
	tb, err = c.GetTable(t.Context(), "db", name)
	require.NoError(t, err)
	require.Equal(t, ns.ID, tb.Schema().ID)
	return tb
}

func TestSchemaEvolutionRead(t *testing.T) {
	for _, pk := range []bool{false, true} {
		name := map[bool]string{false: "ap", true: "pk"}[pk]
		t.Run(name, func(t *testing.T) {
			c := newTestCatalog(t)
			s := paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: paimontype.DataType{Root: paimontype.TypeBigInt}}, {Name: "a", Type: paimontype.DataType{Root: paimontype.TypeInt}},
				{Name: "b", Type: paimontype.DataType{Root: paimontype.TypeVarChar, Length: paimontype.MaxLength}}, {Name: "d", Type: paimontype.DataType{Root: paimontype.TypeInt}}},
				Options: map[string]string{"bucket": "1"}}
			if pk {
				s.PrimaryKeys = []string{"id"}
			} else {
				s.Options = nil
			}
			tb, err := c.CreateTable(t.Context(), "db", name, s, false)
			require.NoError(t, err)
			commitAny(t, tb, []map[string]any{{"id": int64(1), "a": int64(-5), "b": "one", "d": int64(10)},
				{"id": int64(2), "a": int64(2000000000), "b": nil, "d": int64(20)}})

			// a INT -> BIGINT, b renamed to b2, d dropped and re-added as STRING (a new id), e added.
			tb = evolve(t, c, name, func(ts *paimontype.TableSchema) {
				ts.Fields[1].Type = paimontype.DataType{Root: paimontype.TypeBigInt}
				ts.Fields[2].Name = "b2"
				ts.Fields = append(ts.Fields[:3],
					paimontype.DataField{ID: ts.HighestFieldID + 1, Name: "e", Type: paimontype.DataType{Root: paimontype.TypeVarChar, Length: paimontype.MaxLength}},
					paimontype.DataField{ID: ts.HighestFieldID + 2, Name: "d", Type: paimontype.DataType{Root: paimontype.TypeVarChar, Length: paimontype.MaxLength}})
				ts.HighestFieldID += 2
			})
			snap := commitAny(t, tb, []map[string]any{{"id": int64(3), "a": int64(1) << 40, "b2": "three", "e": "e3", "d": "d3"},
				{"id": int64(2), "a": int64(22), "b2": "two", "e": nil, "d": "d2"}})
			want := []string{"1,-5,one,null,null", "2,2000000000,null,null,null", "2,22,two,null,d2", "3,1099511627776,three,e3,d3"}
			if pk {
				want = []string{"1,-5,one,null,null", "2,22,two,null,d2", "3,1099511627776,three,e3,d3"}
			}
			require.Equal(t, want, scanAll(t, tb, snap, nil))
			wantB2 := []string{"null", "one", "three", "two"}
			if pk {
				wantB2 = wantB2[1:]
			}
			require.Equal(t, wantB2, scanAll(t, tb, snap, []string{"b2"}))

			// The old files' statistics name and type their columns by schema 0: no pruning on them.
			rr, err := tb.Scan(context.Background(), snap, ScanOptions{Filter: []expr.Predicate{{Column: "a", Op: expr.OpEq, Values: []any{int64(-5)}}}})
			require.NoError(t, err)
			n := 0
			for rr.Next() {
				n += int(rr.RecordBatch().NumRows())
			}
			require.NoError(t, rr.Err())
			rr.Release()
			require.Positive(t, n, "the file holding a = -5 was pruned")

			// A file of a schema that does not exist is an error naming the table and the file.
			require.NoError(t, c.fio.Remove(context.Background(), schemaPath(tb.Path(), 0)))
			tb2, err := c.GetTable(t.Context(), "db", name)
			require.NoError(t, err)
			rr, err = tb2.Scan(context.Background(), snap, ScanOptions{})
			require.NoError(t, err)
			for rr.Next() {
			}
			require.ErrorContains(t, rr.Err(), "db."+name)
			require.ErrorContains(t, rr.Err(), "schema-0")
			rr.Release()
		})
	}
}

func TestEvolveNestedRow(t *testing.T) {
	mem := memory.DefaultAllocator
	ctx := context.Background()
	from, err := paimontype.ParseType("ROW<x INT, y STRING>")
	require.NoError(t, err)
	next := 10
	from = paimontype.AssignNestedIDs(from, &next) // x=10, y=11
	// x renamed and widened, y dropped, z added, then the array around it.
	to := paimontype.DataType{Root: paimontype.TypeRow, Fields: []paimontype.DataField{
		{ID: 12, Name: "z", Type: paimontype.DataType{Root: paimontype.TypeVarChar, Length: paimontype.MaxLength}},
		{ID: 10, Name: "x2", Type: paimontype.DataType{Root: paimontype.TypeBigInt}},
	}}
	fromArr := paimontype.DataType{Root: paimontype.TypeArray, Elem: &from}
	toArr := paimontype.DataType{Root: paimontype.TypeArray, Elem: &to}
	b := array.NewListBuilder(mem, from.ArrowType())
	defer b.Release()
	sb := b.ValueBuilder().(*array.StructBuilder)
	b.Append(true)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).Append(7)
	sb.FieldBuilder(1).(*array.StringBuilder).Append("gone")
	sb.AppendNull()
	sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
	sb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
	b.AppendNull()
	b.Append(true)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
	sb.FieldBuilder(1).(*array.StringBuilder).Append("y")
	in := b.NewArray()
	defer in.Release()
	sliced := array.NewSlice(in, 1, 3) // a slice: offsets must be honoured
	defer sliced.Release()
	for _, tc := range []struct {
		arr  arrow.Array
		want string
	}{
		{in, `[{"x2":7,"z":null},null] | (null) | [{"x2":null,"z":null}]`},
		{sliced, `(null) | [{"x2":null,"z":null}]`},
	} {
		out, err := evolveArray(ctx, tc.arr, fromArr, toArr, mem)
		require.NoError(t, err)
		require.True(t, arrow.TypeEqual(out.DataType(), toArr.ArrowType()), "%s", out.DataType())
		var rows []string
		for i := 0; i < out.Len(); i++ {
			rows = append(rows, out.ValueStr(i))
		}
		require.Equal(t, tc.want, strings.Join(rows, " | "))
		out.Release()
	}
}

func TestConformArray(t *testing.T) {
	mem := memory.DefaultAllocator
	ctx := context.Background()
	// A list of structs whose names differ from the target's (positional), holding a map with
	// other entry names and a nullable key, an INT leaf read as BIGINT.
	srcMap := arrow.MapOfWithMetadata(arrow.BinaryTypes.String, arrow.Metadata{}, arrow.PrimitiveTypes.Int32, arrow.Metadata{})
	src := arrow.ListOfField(arrow.Field{Name: "item", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: srcMap, Nullable: true})})
	dst, err := paimontype.ParseType("ARRAY<ROW<x BIGINT, y MAP<STRING, BIGINT>>>")
	require.NoError(t, err)
	b := array.NewListBuilder(mem, src.Elem())
	defer b.Release()
	sb := b.ValueBuilder().(*array.StructBuilder)
	mb := sb.FieldBuilder(1).(*array.MapBuilder)
	b.Append(true)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).Append(-3)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().(*array.Int32Builder).AppendNull()
	b.AppendNull()
	b.Append(true)
	sb.AppendNull()
	sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
	mb.AppendNull()
	in := b.NewArray()
	defer in.Release()
	out, err := conformArray(ctx, in, dst.ArrowType(), mem)
	require.NoError(t, err)
	defer out.Release()
	require.True(t, arrow.TypeEqual(out.DataType(), dst.ArrowType()), "%s", out.DataType())
	var rows []string
	for i := 0; i < out.Len(); i++ {
		rows = append(rows, out.ValueStr(i))
	}
	require.Equal(t, `[{"x":-3,"y":[{"key":"k","value":null}]}] | (null) | [null]`, strings.Join(rows, " | "))

	_, err = conformArray(ctx, in, arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64})), mem)
	require.ErrorContains(t, err, "struct with 1 fields")
}
