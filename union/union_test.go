package union

import (
	"context"
	"flag"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized union test (0 = time based)")

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k2", Type: arrow.BinaryTypes.String},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

type row struct {
	id int64
	k2 string
	v  int64
}

type op struct {
	row  row
	kind byte
}

func build(mem memory.Allocator, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.k2)
		b.Field(2).(*array.Int64Builder).Append(r.v)
	}
	return b.NewRecordBatch()
}

func drain(t *testing.T, r array.RecordReader) []row {
	t.Helper()
	defer r.Release()
	var out []row
	for r.Next() {
		rec := r.RecordBatch()
		require.True(t, rec.Schema().Equal(testSchema))
		ids := rec.Column(0).(*array.Int64)
		k2 := rec.Column(1).(*array.String)
		vs := rec.Column(2).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, row{ids.Value(i), k2.Value(i), vs.Value(i)})
		}
	}
	require.NoError(t, r.Err())
	sortRows(out)
	return out
}

func sortRows(rs []row) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].id != rs[j].id {
			return rs[i].id < rs[j].id
		}
		return rs[i].k2 < rs[j].k2
	})
}

type key struct {
	id int64
	k2 string
}

func apply(model map[key]row, ops []op) {
	for _, o := range ops {
		k := key{o.row.id, o.row.k2}
		if o.kind == KindDelete || o.kind == KindUpdateBefore {
			delete(model, k)
		} else {
			model[k] = o.row
		}
	}
}

func rowsOf(model map[key]row) []row {
	out := make([]row, 0, len(model))
	for _, r := range model {
		out = append(out, r)
	}
	sortRows(out)
	return out
}

// TestPrimaryKeyModel applies random upserts and deletes to a map model and
// splits the same operations between a lake (the model state at a random
// cut) and log batches of random sizes. The union must equal the model.
func TestPrimaryKeyModel(t *testing.T) {
	t.Run("key=id,k2", func(t *testing.T) { testPrimaryKeyModel(t, []int{0, 1}) })
	t.Run("key=id", func(t *testing.T) { testPrimaryKeyModel(t, []int{0}) })
}

func testPrimaryKeyModel(t *testing.T, pk []int) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for iter := 0; iter < 200; iter++ {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		nkeys := 1 + rng.IntN(30)
		ops := make([]op, rng.IntN(120))
		for i := range ops {
			r := row{int64(rng.IntN(nkeys)), []string{"a", "b", ""}[rng.IntN(3)], rng.Int64N(1000)}
			if len(pk) == 1 {
				r.k2 = "a" // the key is id alone
			}
			kind := []byte{KindInsert, KindUpdateAfter, KindDelete, KindUpdateBefore, KindInsert}[rng.IntN(5)]
			ops[i] = op{r, kind}
		}
		cut := rng.IntN(len(ops) + 1)
		lakeModel := map[key]row{}
		apply(lakeModel, ops[:cut])
		lakeRows := rowsOf(lakeModel)
		rng.Shuffle(len(lakeRows), func(i, j int) { lakeRows[i], lakeRows[j] = lakeRows[j], lakeRows[i] })
		var lakeBatches []arrow.RecordBatch
		for len(lakeRows) > 0 {
			n := 1 + rng.IntN(len(lakeRows))
			lakeBatches = append(lakeBatches, build(mem, lakeRows[:n]))
			lakeRows = lakeRows[n:]
		}
		lake, err := array.NewRecordReader(testSchema, lakeBatches)
		require.NoError(t, err)
		releaseBatches(lakeBatches)
		var log []LogBatch
		rest := ops[cut:]
		for len(rest) > 0 {
			n := 1 + rng.IntN(len(rest))
			rows := make([]row, n)
			kinds := make([]byte, n)
			for i, o := range rest[:n] {
				rows[i], kinds[i] = o.row, o.kind
			}
			log = append(log, LogBatch{Rec: build(mem, rows), Kinds: kinds})
			rest = rest[n:]
		}
		model := map[key]row{}
		apply(model, ops)
		r, err := PrimaryKey(context.Background(), mem, testSchema, pk, lake, log)
		require.NoError(t, err)
		got := drain(t, r)
		want := rowsOf(model)
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, got, "seed %d iteration %d", seed, iter)
		mem.AssertSize(t, 0)
	}
}

func TestAppendConcatenates(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	l1 := build(mem, []row{{1, "a", 1}, {1, "a", 1}})
	lake, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{l1})
	require.NoError(t, err)
	l1.Release()
	log := []LogBatch{{Rec: build(mem, []row{{1, "a", 1}})}, {Rec: build(mem, []row{{2, "b", 2}})}}
	r, err := Append(testSchema, lake, log)
	require.NoError(t, err)
	require.Equal(t, []row{{1, "a", 1}, {1, "a", 1}, {1, "a", 1}, {2, "b", 2}}, drain(t, r))
}

func TestPrimaryKeyRejectsUnsupportedKeyType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.ListBuilder).Append(true)
	rec := b.NewRecordBatch()
	b.Release()
	_, err := PrimaryKey(context.Background(), mem, schema, []int{0}, nil, []LogBatch{{Rec: rec}})
	require.ErrorContains(t, err, `key column "l"`)
}

// TestRowsOfAnotherSchemaAreAnErrorNotAPanic: log rows (or lake rows) with
// fewer columns, or other types, than the table's schema, as rows written
// before another engine added a column or widened a type, fail the read
// with an error naming the mismatch; the reader used to panic ("number of
// columns/fields mismatch").
func TestRowsOfAnotherSchemaAreAnErrorNotAPanic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	wider := arrow.NewSchema(append(testSchema.Fields(), arrow.Field{Name: "added", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), nil)
	widened := arrow.NewSchema([]arrow.Field{testSchema.Field(0), testSchema.Field(1), {Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	for _, schema := range []*arrow.Schema{wider, widened} {
		_, err := Append(schema, nil, []LogBatch{{Rec: build(mem, []row{{1, "a", 1}})}})
		require.ErrorContains(t, err, "log batch 0")
		_, err = PrimaryKey(context.Background(), mem, schema, []int{0}, nil, []LogBatch{{Rec: build(mem, []row{{1, "a", 1}})}})
		require.ErrorContains(t, err, "log batch 0")

		l := build(mem, []row{{1, "a", 1}})
		lake, err := array.NewRecordReader(testSchema, []arrow.RecordBatch{l})
		require.NoError(t, err)
		l.Release()
		r, err := Append(schema, lake, nil)
		require.NoError(t, err)
		require.False(t, r.Next())
		require.ErrorContains(t, r.Err(), "lake batch")
		r.Release()
	}
}
