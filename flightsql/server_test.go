package flightsql

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// fakeEngine answers "SELECT n" with n rows of one int64 column and
// remembers updates and ingests.
type fakeEngine struct {
	mu       sync.Mutex
	updates  []string
	ingested int64
}

var numSchema = arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)

// fakeStatement is a statement as fakeEngine reads it: a query when it
// starts with SELECT, a session's statement with USE or SET, else an
// update.
type fakeStatement struct{ sql string }

func (f fakeStatement) SQL() string { return f.sql }

func (f fakeStatement) Kind() engine.Kind {
	switch word, _, _ := strings.Cut(f.sql, " "); word {
	case "SELECT":
		return engine.KindQuery
	case "USE", "SET":
		return engine.KindSession
	}
	return engine.KindUpdate
}

func (f *fakeEngine) Analyze(sql string) engine.Statement { return fakeStatement{sql} }

// Bind runs the statement once per row of params, its text as it is, and
// once without values.
func (f *fakeEngine) Bind(st engine.Statement, params arrow.RecordBatch) ([]string, error) {
	if params == nil || params.NumCols() == 0 {
		return []string{st.SQL()}, nil
	}
	out := make([]string, params.NumRows())
	for i := range out {
		out[i] = st.SQL()
	}
	return out, nil
}

func (f *fakeEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	sql := st.SQL()
	switch {
	case strings.HasPrefix(sql, "SELECT FAILING"):
		return engine.Result{Schema: numSchema, Reader: &failingReader{}}, nil
	case strings.HasPrefix(sql, "SELECT"):
		b := array.NewRecordBuilder(memory.DefaultAllocator, numSchema)
		defer b.Release()
		for i := 0; i < len(sql); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		r, _ := array.NewRecordReader(numSchema, []arrow.RecordBatch{rec})
		return engine.Result{Schema: numSchema, Reader: r}, nil
	case strings.HasPrefix(sql, "BAD"):
		return engine.Result{}, errors.Join(engine.ErrInvalid, errors.New("bad statement"))
	case strings.HasPrefix(sql, "MISSING"):
		return engine.Result{}, errors.Join(engine.ErrNotFound, errors.New("table x does not exist"))
	}
	f.mu.Lock()
	f.updates = append(f.updates, sql)
	f.mu.Unlock()
	return engine.Result{Update: true, Affected: 3}, nil
}

func (f *fakeEngine) Prepare(ctx context.Context, st engine.Statement) (engine.Prepared, error) {
	sql := st.SQL()
	if strings.HasPrefix(sql, "SELECT") {
		return engine.Prepared{DatasetSchema: numSchema}, nil
	}
	return engine.Prepared{Update: true}, nil
}

func (f *fakeEngine) Ingest(ctx context.Context, db, table string, create bool, r array.RecordReader) (int64, error) {
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	f.mu.Lock()
	f.ingested += n
	f.mu.Unlock()
	return n, r.Err()
}

func (f *fakeEngine) InsertParams(ctx context.Context, st engine.Statement, params arrow.RecordBatch) (int64, bool, error) {
	return 0, false, nil
}

// Partition splits "SELECT PARTS" into three parts of three rows each.
func (f *fakeEngine) Partition(ctx context.Context, st engine.Statement, max int) ([]string, int64, error) {
	sql := st.SQL()
	if !strings.HasPrefix(sql, "SELECT PARTS") {
		return nil, -1, nil
	}
	return []string{"p0", "p1", "p2"}[:min(3, max)], 9, nil
}

// ShortWork: statements starting "SELECT SHORT" or "INSERT" are short.
func (f *fakeEngine) ShortWork(ctx context.Context, st engine.Statement) bool {
	sql := st.SQL()
	return strings.HasPrefix(sql, "SELECT SHORT") || strings.HasPrefix(sql, "INSERT")
}

func (f *fakeEngine) Databases(ctx context.Context) ([]string, error) {
	return []string{"default", "shop"}, nil
}

func (f *fakeEngine) Tables(ctx context.Context, db string) ([]engine.TableInfo, error) {
	if db != "shop" {
		return nil, nil
	}
	return []engine.TableInfo{
		{Database: "shop", Name: "orders", Type: "TABLE", Schema: numSchema},
		{Database: "shop", Name: "orders$rt", Type: "VIEW", Schema: numSchema},
	}, nil
}

func startTest(t *testing.T) (*flightsql.Client, *fakeEngine) {
	t.Helper()
	return startTestWith(t, Options{Version: "test"})
}

func startTestWith(t *testing.T, opts Options) (*flightsql.Client, *fakeEngine) {
	t.Helper()
	eng := &fakeEngine{}
	srv, err := New(eng, opts)
	require.NoError(t, err)
	fs := flight.NewServerWithMiddleware(nil)
	fs.RegisterFlightService(srv.FlightServer())
	require.NoError(t, fs.Init("127.0.0.1:0"))
	go func() { _ = fs.Serve() }()
	t.Cleanup(func() { fs.Shutdown(); srv.Close() })
	cl, err := flightsql.NewClient(fs.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl, eng
}

func readAll(t *testing.T, cl *flightsql.Client, info *flight.FlightInfo) (int64, *arrow.Schema) {
	t.Helper()
	var n int64
	var sc *arrow.Schema
	for _, ep := range info.Endpoint {
		r, err := cl.DoGet(context.Background(), ep.Ticket)
		require.NoError(t, err)
		sc = r.Schema()
		for r.Next() {
			n += r.RecordBatch().NumRows()
		}
		require.NoError(t, r.Err())
		r.Release()
	}
	return n, sc
}

func TestStatementQueryCarriesSchemaAndRows(t *testing.T) {
	cl, _ := startTest(t)
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT 1234")
	require.NoError(t, err)
	sc, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	require.NoError(t, err)
	require.True(t, sc.Equal(resultSchema(numSchema)), "the result schema, with its column metadata")
	n, _ := readAll(t, cl, info)
	require.EqualValues(t, len("SELECT 1234"), n)
	// The ticket runs again when its parked result was already taken.
	n, _ = readAll(t, cl, info)
	require.EqualValues(t, len("SELECT 1234"), n)
}

func TestUpdatesAndErrors(t *testing.T) {
	cl, eng := startTest(t)
	ctx := context.Background()
	n, err := cl.ExecuteUpdate(ctx, "CREATE TABLE x (a INT)")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	require.Equal(t, []string{"CREATE TABLE x (a INT)"}, eng.updates)
	// DDL through a statement query returns rows_affected.
	info, err := cl.Execute(ctx, "INSERT INTO x VALUES (1)")
	require.NoError(t, err)
	rows, sc := readAll(t, cl, info)
	require.EqualValues(t, 1, rows)
	require.Equal(t, "rows_affected", sc.Field(0).Name)

	_, err = cl.Execute(ctx, "BAD")
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = cl.Execute(ctx, "MISSING")
	require.Equal(t, codes.NotFound, status.Code(err))
	require.ErrorContains(t, err, "does not exist")
}

func TestPreparedStatements(t *testing.T) {
	cl, _ := startTest(t)
	ctx := context.Background()
	ps, err := cl.Prepare(ctx, "SELECT 12")
	require.NoError(t, err)
	require.True(t, ps.DatasetSchema().Equal(resultSchema(numSchema)), "JDBC needs a dataset schema for queries")
	info, err := ps.Execute(ctx)
	require.NoError(t, err)
	n, _ := readAll(t, cl, info)
	require.EqualValues(t, len("SELECT 12"), n)
	require.NoError(t, ps.Close(ctx))

	up, err := cl.Prepare(ctx, "CREATE DATABASE d")
	require.NoError(t, err)
	cnt, err := up.ExecuteUpdate(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, cnt)
	require.NoError(t, up.Close(ctx))
}

func TestClosingAnUnknownHandleSucceeds(t *testing.T) {
	srv, err := New(&fakeEngine{}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	// ADBC returns a Close error to its caller, so an expired handle must close cleanly.
	require.NoError(t, srv.ClosePreparedStatement(context.Background(), closeReq("no-such-handle")))
}

type closeReq string

func (c closeReq) GetPreparedStatementHandle() []byte { return []byte(c) }

func TestIngestAndMetadata(t *testing.T) {
	cl, eng := startTest(t)
	ctx := context.Background()
	b := array.NewRecordBuilder(memory.DefaultAllocator, numSchema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	rdr, _ := array.NewRecordReader(numSchema, []arrow.RecordBatch{rec})
	rec.Release()
	n, err := cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{
		Table:                  "orders",
		Schema:                 ptr("shop"),
		TableDefinitionOptions: &flightsql.TableDefinitionOptions{IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend},
	})
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	require.EqualValues(t, 4, eng.ingested)

	info, err := cl.GetTables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: ptr("sh%"), IncludeSchema: true})
	require.NoError(t, err)
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	require.NoError(t, err)
	defer r.Release()
	var names []string
	for r.Next() {
		col := r.RecordBatch().Column(2).(*array.String)
		for i := 0; i < col.Len(); i++ {
			names = append(names, col.Value(i))
		}
	}
	require.Equal(t, []string{"orders", "orders$rt"}, names)

	si, err := cl.GetSqlInfo(ctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerReadOnly})
	require.NoError(t, err)
	rows, _ := readAll(t, cl, si)
	require.EqualValues(t, 2, rows)
}

func ptr[T any](v T) *T { return &v }

// panicEngine fails every statement with a panic.
type panicEngine struct{ fakeEngine }

func (p *panicEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	panic("boom")
}

func (p *panicEngine) Prepare(ctx context.Context, st engine.Statement) (engine.Prepared, error) {
	panic("boom")
}

func TestPanicsBecomeErrorsAndTheServerKeepsServing(t *testing.T) {
	// One statement at a time: a panic must give its slot back.
	srv, err := New(&panicEngine{}, Options{MaxConcurrent: 1})
	require.NoError(t, err)
	defer srv.Close()
	fs := flight.NewServerWithMiddleware(nil, GRPCOptions(nil)...)
	fs.RegisterFlightService(srv.FlightServer())
	require.NoError(t, fs.Init("127.0.0.1:0"))
	go func() { _ = fs.Serve() }()
	t.Cleanup(fs.Shutdown)
	cl, err := flightsql.NewClient(fs.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cl.Close()
	for i := 0; i < 2; i++ {
		_, err = cl.Execute(context.Background(), "SELECT 1")
		require.Equal(t, codes.Internal, status.Code(err))
		require.ErrorContains(t, err, "boom")
		tkt, err := encodeTicket(ticket{sql: "SELECT 1"})
		require.NoError(t, err)
		r, err := cl.DoGet(context.Background(), &flight.Ticket{Ticket: tkt})
		if err == nil {
			for r.Next() {
			}
			err = r.Err()
			r.Release()
		}
		require.Equal(t, codes.Internal, status.Code(err))
	}
	_, err = cl.GetTableTypes(context.Background())
	require.NoError(t, err)
}

// failingReader fails on its first Next, as a scan of a damaged file does.
type failingReader struct{ array.RecordReader }

func (*failingReader) Schema() *arrow.Schema { return numSchema }
func (*failingReader) Next() bool            { return false }
func (*failingReader) Err() error {
	return errors.Join(engine.ErrInvalid, errors.New("decode bad_data/file-1.parquet"))
}
func (*failingReader) Release()                       {}
func (*failingReader) Retain()                        {}
func (*failingReader) RecordBatch() arrow.RecordBatch { return nil }

// TestStreamErrorNotReportedAsCancelled: a read that failed while
// streaming reached the client as "context canceled", since the
// statement's context was ended before its error was judged.
func TestStreamErrorNotReportedAsCancelled(t *testing.T) {
	cl, _ := startTestWith(t, Options{Version: "test", QueryTimeout: time.Hour})
	info, err := cl.Execute(context.Background(), "SELECT FAILING")
	require.NoError(t, err)
	r, err := cl.DoGet(context.Background(), info.Endpoint[0].Ticket)
	if err == nil {
		for r.Next() {
		}
		err = r.Err()
		r.Release()
	}
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "bad_data/file-1.parquet")
}

// TestListActionsNamesOnlyServedActions: ListActions advertised
// RenewFlightEndpoint, transactions and cancellation, which answered
// Unimplemented. Each action listed is answered (an empty request is
// refused as invalid, not as unknown).
func TestListActionsNamesOnlyServedActions(t *testing.T) {
	cl, _ := startTest(t)
	ctx := context.Background()
	st, err := cl.Client.ListActions(ctx, &flight.Empty{})
	require.NoError(t, err)
	var listed []string
	for {
		a, err := st.Recv()
		if err != nil {
			break
		}
		listed = append(listed, a.GetType())
	}
	require.ElementsMatch(t, []string{flightsql.CreatePreparedStatementActionType, flightsql.ClosePreparedStatementActionType,
		flight.CancelFlightInfoActionType, flightsql.CancelQueryActionType,
		flight.SetSessionOptionsActionType, flight.GetSessionOptionsActionType, flight.CloseSessionActionType}, listed)
	for _, a := range listed {
		rs, err := cl.Client.DoAction(ctx, &flight.Action{Type: a})
		if err == nil {
			_, err = rs.Recv()
		}
		require.NotEqual(t, codes.Unimplemented, status.Code(err), "%s: %v", a, err)
	}
}

// TestXdbcTypeInfoListsTableTypes: JDBC's getTypeInfo (DBeaver reads it on
// connecting) answered UNIMPLEMENTED; it lists the types CREATE TABLE
// takes, ordered by code, or those of one code.
func TestXdbcTypeInfoListsTableTypes(t *testing.T) {
	cl, _ := startTest(t)
	ctx := context.Background()
	names := func(code *int32) []string {
		info, err := cl.GetXdbcTypeInfo(ctx, code)
		require.NoError(t, err)
		r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		require.NoError(t, err)
		defer r.Release()
		var out []string
		last := int32(math.MinInt32)
		for r.Next() {
			rec := r.RecordBatch()
			for i := range int(rec.NumRows()) {
				c := rec.Column(1).(*array.Int32).Value(i)
				require.GreaterOrEqual(t, c, last, "ordered by code")
				last = c
				out = append(out, rec.Column(0).(*array.String).Value(i))
			}
		}
		require.NoError(t, r.Err())
		return out
	}
	all := names(nil)
	require.Subset(t, all, []string{"BIGINT", "DECIMAL", "STRING", "VARCHAR", "TIMESTAMP", "BOOLEAN", "DATE"})
	decimal := int32(3)
	require.Equal(t, []string{"DECIMAL"}, names(&decimal))
}
