package flightsql

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/flightd/flightd/engine"
)

// bigEngine answers "SELECT big" with 64 strings of 512 KiB (32 MiB in one
// batch) and "SELECT huge" with one batch of a 1 KiB and a 6 MiB string.
type bigEngine struct{ fakeEngine }

var strSchema = arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)

func (b *bigEngine) Prepare(ctx context.Context, st engine.Statement) (engine.Prepared, error) {
	return engine.Prepared{DatasetSchema: strSchema}, nil
}

func (b *bigEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	sql := st.SQL()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, strSchema)
	defer bld.Release()
	sb := bld.Field(0).(*array.StringBuilder)
	switch sql {
	case "SELECT big":
		for i := range 64 {
			sb.Append(strings.Repeat(string(rune('a'+i%26)), 512<<10))
		}
	case "SELECT huge":
		sb.Append(strings.Repeat("x", 1<<10))
		sb.Append(strings.Repeat("y", 6<<20))
		sb.AppendNull()
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(strSchema, []arrow.RecordBatch{rec})
	return engine.Result{Schema: strSchema, Reader: r}, nil
}

func TestBigResultArrivesUnderTheClientsMessageLimit(t *testing.T) {
	// 64 strings of 512 KiB were one 32 MiB message, which a client with
	// gRPC's usual 16 MiB receive limit refused.
	cl, _ := startWith(t, &bigEngine{}, Options{})
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT big")
	require.NoError(t, err)
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket, grpc.MaxCallRecvMsgSize(16<<20))
	require.NoError(t, err)
	defer r.Release()
	var rows, batches int64
	for r.Next() {
		rec := r.RecordBatch()
		require.LessOrEqual(t, ipcBodySize(t, rec), int64(DefaultMaxBatchBytes))
		for i := 0; i < int(rec.NumRows()); i++ {
			require.Equal(t, strings.Repeat(string(rune('a'+int(rows)%26)), 512<<10), rec.Column(0).(*array.String).Value(i))
			rows++
		}
		batches++
	}
	require.NoError(t, r.Err())
	require.EqualValues(t, 64, rows)
	require.GreaterOrEqual(t, batches, int64(8))
}

func TestAValueLargerThanTheBoundArrivesAlone(t *testing.T) {
	cl, _ := startWith(t, &bigEngine{}, Options{MaxBatchBytes: 1 << 20})
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT huge")
	require.NoError(t, err)
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket, grpc.MaxCallRecvMsgSize(16<<20))
	require.NoError(t, err)
	defer r.Release()
	var sizes []int64
	var got []string
	for r.Next() {
		rec := r.RecordBatch()
		sizes = append(sizes, rec.NumRows())
		for i := 0; i < int(rec.NumRows()); i++ {
			if rec.Column(0).IsNull(i) {
				got = append(got, "<null>")
			} else {
				got = append(got, rec.Column(0).(*array.String).Value(i)[:1])
			}
		}
	}
	require.NoError(t, r.Err())
	require.Equal(t, []string{"x", "y", "<null>"}, got)
	require.Equal(t, []int64{1, 1, 1}, sizes, "the 6 MiB value is a batch of its own")
}

// ipcBodySize is the size of rec written as one IPC record batch message.
func ipcBodySize(t *testing.T, rec arrow.RecordBatch) int64 {
	t.Helper()
	var schemaOnly, full bytes.Buffer
	w := ipc.NewWriter(&schemaOnly, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Close())
	w = ipc.NewWriter(&full, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return int64(full.Len() - schemaOnly.Len())
}

// TestSplitBatchKeepsRowsAndBound: random nested batches cut at random
// bounds give back every row in order, and each slice written as an IPC
// message is within the bound (plus the message's own header), unless it
// is one row.
func TestSplitBatchKeepsRowsAndBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "fl", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.Binary, Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	str := func() string { return strings.Repeat("z", rng.IntN(3000)) }
	for round := range 40 {
		b := array.NewRecordBuilder(mem, sc)
		n := rng.IntN(400) + 1
		for range n {
			if rng.IntN(10) == 0 {
				for _, f := range b.Fields() {
					f.AppendNull()
				}
				continue
			}
			b.Field(0).(*array.Int64Builder).Append(rng.Int64())
			b.Field(1).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
			b.Field(2).(*array.StringBuilder).Append(str())
			b.Field(3).(*array.LargeStringBuilder).Append(str())
			b.Field(4).(*array.StringViewBuilder).Append(str())
			lb := b.Field(5).(*array.ListBuilder)
			lb.Append(true)
			for range rng.IntN(4) {
				lb.ValueBuilder().(*array.StringBuilder).Append(str())
			}
			fb := b.Field(6).(*array.FixedSizeListBuilder)
			fb.Append(true)
			fb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
			stb := b.Field(7).(*array.StructBuilder)
			stb.Append(true)
			stb.FieldBuilder(0).(*array.BinaryBuilder).Append([]byte(str()))
			mb := b.Field(8).(*array.MapBuilder)
			mb.Append(true)
			for k := range rng.IntN(3) {
				mb.KeyBuilder().(*array.StringBuilder).Append(str() + string(rune('a'+k)))
				mb.ItemBuilder().(*array.Int64Builder).Append(int64(k))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		// Sometimes split a slice: offsets into shared buffers.
		in := rec
		if round%3 == 0 && n > 4 {
			in = rec.NewSlice(int64(n/4), int64(n))
		} else {
			in.Retain()
		}
		max := int64(rng.IntN(256<<10) + 1<<10)
		if round%2 == 1 {
			// Fixed-width columns only: cut by a constant row cost.
			fixedOnly := array.NewRecordBatch(arrow.NewSchema(sc.Fields()[:2], nil), in.Columns()[:2], in.NumRows())
			in.Release()
			in = fixedOnly
			max = int64(rng.IntN(4<<10) + 64)
		}
		parts := splitBatch(in, max)
		var total int64
		for _, p := range parts {
			require.Positive(t, p.NumRows())
			if p.NumRows() > 1 {
				require.LessOrEqual(t, ipcBodySize(t, p), max+4<<10, "round %d: a slice of %d rows", round, p.NumRows())
			}
			for c := 0; c < int(p.NumCols()); c++ {
				want := array.NewSlice(in.Column(c), total, total+p.NumRows())
				require.True(t, array.Equal(want, p.Column(c)), "round %d column %d", round, c)
				want.Release()
			}
			total += p.NumRows()
			p.Release()
		}
		require.Equal(t, in.NumRows(), total)
		in.Release()
		rec.Release()
	}
}

// TestFlightInfoSizesWhereKnown: FlightInfo carries total_records where
// the server knows it before the DoGet (fixed metadata lists, an update's
// one row), and -1 where it does not (a query, which has not run).
func TestFlightInfoSizesWhereKnown(t *testing.T) {
	cl, _ := startWith(t, &countingEngine{}, Options{})
	ctx := context.Background()
	info, err := cl.GetCatalogs(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, info.TotalRecords)
	info, err = cl.GetTableTypes(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(engine.TableTypes), info.TotalRecords)
	n, err := doGet(ctx, cl, info)
	require.NoError(t, err)
	require.EqualValues(t, len(engine.TableTypes), n)
	info, err = cl.Execute(ctx, "SELECT 1")
	require.NoError(t, err)
	require.EqualValues(t, -1, info.TotalRecords)
	require.EqualValues(t, -1, info.TotalBytes)
	info, err = cl.Execute(ctx, "INSERT INTO t VALUES (1)")
	require.NoError(t, err)
	require.EqualValues(t, 1, info.TotalRecords)
	require.EqualValues(t, 8, info.TotalBytes)
}
