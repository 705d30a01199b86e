package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/flightd/flightd/internal/testserver"
)

// TestWireBigResultsArriveThroughADBC: 64 strings of 512 KiB were sent as
// one 32 MiB message, and the ADBC driver (16 MiB receive limit) refused
// it. Plain scans, DuckDB results and metadata now all arrive.
func TestWireBigResultsArriveThroughADBC(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	c.mustExec("CREATE TABLE big (i BIGINT, s STRING)")
	sc := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for i := range 64 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat(string(rune('a'+i%26)), 512<<10))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	// The client's send limit is 16 MiB too: 8 batches of 4 MiB.
	for i := int64(0); i < 64; i += 8 {
		part := rec.NewSlice(i, i+8)
		n, err := c.ingest("default", "big", adbc.OptionValueIngestModeAppend, part)
		part.Release()
		require.NoError(t, err)
		require.EqualValues(t, 8, n)
	}
	for _, q := range []string{
		`SELECT i, s FROM "big$rt"`,                          // a plain scan, without DuckDB
		`SELECT i, s || '' AS s FROM "big$rt" ORDER BY i`,    // through DuckDB
		`SELECT i, s FROM "big$rt" WHERE length(s) > 0`,      // DuckDB with a filter
		`SELECT i, repeat(s, 2) AS s FROM "big$rt" LIMIT 40`, // values DuckDB makes
	} {
		rows, err := c.query(q)
		require.NoError(t, err, q)
		require.GreaterOrEqual(t, len(rows), 40, q)
		for _, r := range rows {
			require.GreaterOrEqual(t, len(r[1]), 512<<10, q)
		}
	}
	// A value larger than the bound arrives in a batch of its own (to a
	// client that accepts such a message).
	cl := sqlClient(t, srv)
	info, err := cl.Execute(context.Background(), `SELECT i, CASE WHEN i = 1 THEN repeat('x', 20000000) ELSE 'y' END AS s FROM range(3) AS r(i) ORDER BY i`)
	require.NoError(t, err)
	r, err := cl.DoGet(context.Background(), info.Endpoint[0].Ticket, grpc.MaxCallRecvMsgSize(64<<20))
	require.NoError(t, err)
	var lens []int
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			if v := rec.Column(1).(*array.String).Value(i); len(v) > 1 {
				require.EqualValues(t, 1, rec.NumRows(), "the big value is alone in its batch")
			}
			lens = append(lens, len(rec.Column(1).(*array.String).Value(i)))
		}
	}
	require.NoError(t, r.Err())
	r.Release()
	require.Equal(t, []int{1, 20000000, 1}, lens)
	// Metadata through the same path.
	st, err := c.conn.GetTableSchema(context.Background(), nil, ptrTo("default"), "big")
	require.NoError(t, err)
	require.Equal(t, 2, st.NumFields())
}

func ptrTo[T any](v T) *T { return &v }

// TestWireInsertWithTooManyValuesIsRefused: the extra values of an INSERT
// were dropped silently; now the statement is refused, naming the table,
// its column count and the row, and writes nothing.
func TestWireInsertWithTooManyValuesIsRefused(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	c.mustExec("CREATE TABLE t3 (a INT, b INT, s STRING)")
	_, err := c.exec(`INSERT INTO t3 VALUES (7,7,'s7','x7','SURPLUS',42)`)
	require.Error(t, err)
	var ae adbc.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, adbc.StatusInvalidArgument, ae.Code, "%v", err)
	require.ErrorContains(t, err, `INSERT INTO default.t3: the table has 3 columns but VALUES row 1 (7,7,'s7','x7','SURPLUS',42) has 6 values`)
	_, err = c.exec(`INSERT INTO t3 (a, b) VALUES (1, 2, 3)`)
	require.ErrorContains(t, err, "the column list names 2 columns")
	_, err = c.exec(`INSERT INTO t3 VALUES (1, 2)`)
	require.ErrorContains(t, err, "has 2 values")
	require.Equal(t, "0", c.scalar(`SELECT count(*) FROM "t3$rt"`))
}

// TestWireIngestTypes: bulk ingest (mode create, then append) of Arrow
// types that had no Paimon counterpart, or one that refused the batch it
// was created from, through the ADBC driver.
func TestWireIngestTypes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.LargeString, Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "t32", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	b.Field(0).(*array.Uint64Builder).Append(18446744073709551615)
	b.Field(1).(*array.TimestampBuilder).Append(1700000000123456789)
	lb := b.Field(2).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	sb := b.Field(3).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.LargeStringBuilder).Append("nested")
	mb := b.Field(4).(*array.MapBuilder)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().(*array.Float64Builder).Append(0.5)
	b.Field(5).(*array.Time32Builder).Append(45296789)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	n, err := c.ingest("default", "types", adbc.OptionValueIngestModeCreate, rec)
	require.NoError(t, err, "the batch a table is created from is accepted")
	require.EqualValues(t, 1, n)
	n, err = c.ingest("default", "types", adbc.OptionValueIngestModeAppend, rec)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	rows := c.mustQuery(`SELECT CAST(u AS VARCHAR), CAST(epoch_ns(ts) AS VARCHAR), CAST(l AS VARCHAR), st.x, m['k'], CAST(t32 AS VARCHAR) FROM "types$rt"`)
	want := []string{"18446744073709551615", "1700000000123456789", "[1, 2, 3]", "nested", "0.5", "12:34:56.789"}
	require.Equal(t, [][]string{want, want}, rows)

	// Paimon's TIME holds milliseconds: a time64[us] value with a finer
	// part is refused, never cut, and no table is left.
	tsc := arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true}}, nil)
	tb := array.NewRecordBuilder(mem, tsc)
	tb.Field(0).(*array.Time64Builder).Append(45296789012)
	trec := tb.NewRecordBatch()
	tb.Release()
	defer trec.Release()
	_, err = c.ingest("default", "times", adbc.OptionValueIngestModeCreate, trec)
	require.Error(t, err)
	require.ErrorContains(t, err, `column "t": cannot write time64[us] into time32[ms]`)
	require.ErrorContains(t, err, "Paimon stores TIME as milliseconds")
	_, err = c.query(`SELECT * FROM times`)
	require.ErrorContains(t, err, "does not exist", "a refused create leaves no table")
}
