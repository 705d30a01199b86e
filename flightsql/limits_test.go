package flightsql

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
)

// countingEngine is fakeEngine that counts Execute calls, and answers
// "SELECT block" with a reader that blocks until its context ends and
// "SELECT forever" with batches without end.
type countingEngine struct {
	fakeEngine
	executes atomic.Int64
	started  chan struct{} // gets a value when a blocking statement runs
}

func (c *countingEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	sql := st.SQL()
	c.executes.Add(1)
	switch sql {
	case "SELECT block":
		if c.started != nil {
			c.started <- struct{}{}
		}
		<-ctx.Done()
		return engine.Result{}, errors.Join(engine.ErrInvalid, errors.New("INTERRUPT Error: Interrupted!"))
	case "SELECT forever":
		return engine.Result{Schema: numSchema, Reader: &endless{ctx: ctx}}, nil
	case "SELECT oom":
		return engine.Result{}, errors.Join(engine.ErrInvalid, errors.New("Out of Memory Error: failed to allocate data of size 2.0 MiB (1.0 GiB/1.0 GiB used)"))
	}
	return c.fakeEngine.Execute(ctx, st)
}

// endless yields one-row batches until its context ends.
type endless struct {
	ctx  context.Context
	rec  arrow.RecordBatch
	refs atomic.Int64
}

func (e *endless) Retain()               { e.refs.Add(1) }
func (e *endless) Release()              {}
func (e *endless) Schema() *arrow.Schema { return numSchema }
func (e *endless) Err() error            { return e.ctx.Err() }
func (e *endless) Record() arrow.RecordBatch {
	return e.rec
}
func (e *endless) RecordBatch() arrow.RecordBatch { return e.rec }
func (e *endless) Next() bool {
	if e.ctx.Err() != nil {
		return false
	}
	if e.rec != nil {
		e.rec.Release()
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, numSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	e.rec = b.NewRecordBatch()
	return true
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func startWith(t *testing.T, eng engine.Engine, opts Options) (*flightsql.Client, *Server) {
	t.Helper()
	srv, addr := serveWith(t, eng, opts)
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl, srv
}

// serveWith serves eng on a loopback port until the test ends.
func serveWith(t *testing.T, eng engine.Engine, opts Options) (*Server, string) {
	t.Helper()
	srv, err := New(eng, opts)
	require.NoError(t, err)
	fs := flight.NewServerWithMiddleware(nil, GRPCOptions(nil)...)
	fs.RegisterFlightService(srv.FlightServer())
	require.NoError(t, fs.Init("127.0.0.1:0"))
	go func() { _ = fs.Serve() }()
	t.Cleanup(func() { fs.Shutdown(); srv.Close() })
	return srv, fs.Addr().String()
}

func serve(t *testing.T, eng engine.Engine, opts Options) string {
	t.Helper()
	_, addr := serveWith(t, eng, opts)
	return addr
}

func doGet(ctx context.Context, cl *flightsql.Client, info *flight.FlightInfo) (int64, error) {
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	return n, r.Err()
}

func TestQueriesRunAtDoGetNotAtGetFlightInfo(t *testing.T) {
	eng := &countingEngine{}
	cl, _ := startWith(t, eng, Options{})
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT 12345")
	require.NoError(t, err)
	require.EqualValues(t, 0, eng.executes.Load(), "GetFlightInfo of a query must not run it")
	sc, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	require.NoError(t, err)
	require.True(t, sc.Equal(resultSchema(numSchema)), "the result schema, with its column metadata")
	n, err := doGet(ctx, cl, info)
	require.NoError(t, err)
	require.EqualValues(t, len("SELECT 12345"), n)
	require.EqualValues(t, 1, eng.executes.Load())
	// A query's ticket can be fetched again: it runs again.
	n, err = doGet(ctx, cl, info)
	require.NoError(t, err)
	require.EqualValues(t, len("SELECT 12345"), n)
}

func TestAnUpdateTicketFetchedTwiceAppliesOnce(t *testing.T) {
	eng := &countingEngine{}
	cl, _ := startWith(t, eng, Options{})
	ctx := context.Background()
	info, err := cl.Execute(ctx, "INSERT INTO t VALUES (1)")
	require.NoError(t, err)
	require.Equal(t, []string{"INSERT INTO t VALUES (1)"}, eng.updates, "the update runs at GetFlightInfo")
	require.EqualValues(t, 1, info.TotalRecords)
	for range 3 {
		n, err := affectedOf(ctx, cl, info)
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "every fetch returns the count of the one run")
	}
	require.Len(t, eng.updates, 1, "a second fetch must not run the update again")
}

// affectedOf fetches the ticket of a statement that changed things and
// returns its rows_affected.
func affectedOf(ctx context.Context, cl *flightsql.Client, info *flight.FlightInfo) (int64, error) {
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var n int64 = -1
	for r.Next() {
		rec := r.RecordBatch()
		if rec.NumRows() != 1 || rec.Schema().Field(0).Name != "rows_affected" {
			return 0, errors.New("not a rows_affected result")
		}
		n = rec.Column(0).(*array.Int64).Value(0)
	}
	return n, r.Err()
}

func TestAnUpdateTicketIsAnsweredAfterARestartWithoutRunning(t *testing.T) {
	// The ticket carries the count: a server that never saw the statement
	// (a restart, or one whose memory of results was lost) answers it and
	// runs nothing.
	ctx := context.Background()
	first := &countingEngine{}
	cl, _ := startWith(t, first, Options{})
	info, err := cl.Execute(ctx, "INSERT INTO t VALUES (1)")
	require.NoError(t, err)
	second := &countingEngine{}
	cl2, _ := startWith(t, second, Options{})
	n, err := affectedOf(ctx, cl2, info)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	require.Zero(t, second.executes.Load())
	require.Empty(t, second.updates)
}

func TestADoGetNeverRunsAStatementWithEffects(t *testing.T) {
	eng := &countingEngine{}
	cl, _ := startWith(t, eng, Options{})
	ctx := context.Background()
	// A ticket made by hand with an INSERT in it.
	tkt, err := encodeTicket(ticket{sql: "INSERT INTO t VALUES (1)"})
	require.NoError(t, err)
	_, err = doGet(ctx, cl, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}}})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "never runs them again")
	// A prepared INSERT fetched with its command as the ticket.
	ps, err := cl.Prepare(ctx, "INSERT INTO t VALUES (2)")
	require.NoError(t, err)
	defer ps.Close(ctx)
	desc, err := descForPrepared(ps.Handle())
	require.NoError(t, err)
	_, err = doGet(ctx, cl, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc}}}})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	// A forged count ticket with SQL, and an old-style handle, are unknown.
	for _, h := range [][2]string{{"=5", "INSERT INTO t VALUES (3)"}, {"0123456789abcdef", ""}} {
		tkt, err := encodeTicket(ticket{handle: h[0], sql: h[1]})
		require.NoError(t, err)
		_, err = doGet(ctx, cl, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}}})
		require.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	}
	require.Empty(t, eng.updates, "no DoGet may run a statement with effects")
	require.Zero(t, eng.executes.Load())
}

// descForPrepared is the CommandPreparedStatementQuery of handle as a
// ticket, as some clients send it to DoGet.
func descForPrepared(handle []byte) ([]byte, error) {
	a, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})
	if err != nil {
		return nil, err
	}
	return proto.Marshal(a)
}

func TestPreparedStatementsExpireInTheBackground(t *testing.T) {
	clk := &clock{now: time.Unix(1e9, 0)}
	swept := make(chan int, 1<<16)
	cl, srv := startWith(t, &countingEngine{}, Options{Now: clk.Now, PreparedTTL: time.Minute,
		onSweep: func(prepared int) {
			select {
			case swept <- prepared:
			default: // only counts > 0 matter, and the buffer outlasts the test
			}
		}, janitorEvery: time.Millisecond})
	ctx := context.Background()
	for range 2 {
		_, err := cl.Prepare(ctx, "SELECT 1")
		require.NoError(t, err)
	}
	clk.Add(time.Minute)
	for expired := 0; expired < 2; {
		expired += <-swept
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Empty(t, srv.prepared)
}

func TestPreparedStatementsAreCappedAndExpire(t *testing.T) {
	clk := &clock{now: time.Unix(1e9, 0)}
	cl, srv := startWith(t, &countingEngine{}, Options{Now: clk.Now, MaxPrepared: 3, PreparedTTL: time.Hour})
	ctx := context.Background()
	for range 3 {
		_, err := cl.Prepare(ctx, "SELECT 1")
		require.NoError(t, err)
	}
	_, err := cl.Prepare(ctx, "SELECT 1")
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "--max-prepared")
	clk.Add(time.Hour)
	srv.sweep()
	srv.mu.Lock()
	require.Empty(t, srv.prepared)
	srv.mu.Unlock()
	ps, err := cl.Prepare(ctx, "SELECT 1")
	require.NoError(t, err)
	require.NoError(t, ps.Close(ctx))
}

// TestLongLaneFullQueuesStatementsAndShortWorkStillRuns: with the long
// lane's one slot held by a DoGet, describing and short statements run at
// once, an accepted DoGet and an update wait in the queue, a statement past
// --max-queued and one past --queue-timeout are refused naming the bound,
// and everything waiting runs once the slot frees.
func TestLongLaneFullQueuesStatementsAndShortWorkStillRuns(t *testing.T) {
	eng := &countingEngine{started: make(chan struct{}, 1)}
	fire := make(chan time.Time)
	adm := admit.New(admit.Options{ShortSlots: 1, LongSlots: 1, MaxQueued: 1, After: func(time.Duration) <-chan time.Time { return fire }})
	cl, _ := startWith(t, eng, Options{Admission: adm})
	waitQueued := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { _, w := adm.Load(admit.Long); return w >= n }, 10*time.Second, time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	info, err := cl.Execute(ctx, "SELECT block")
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { _, err := doGet(ctx, cl, info); errc <- err }()
	<-eng.started

	// Describing is short work: planned at once while the long lane is full.
	info1, err := cl.Execute(context.Background(), "SELECT 1")
	require.NoError(t, err)
	n, err := cl.ExecuteUpdate(context.Background(), "INSERT INTO t VALUES (1)")
	require.NoError(t, err, "a short update runs beside the long lane")
	require.EqualValues(t, 3, n)

	// The DoGet of an accepted statement waits, outside --max-queued.
	got := make(chan error, 1)
	go func() { _, err := doGet(context.Background(), cl, info1); got <- err }()
	waitQueued(1)
	upd := make(chan error, 1)
	go func() { _, err := cl.ExecuteUpdate(context.Background(), "CREATE TABLE x (a INT)"); upd <- err }()
	waitQueued(2)
	_, err = cl.ExecuteUpdate(context.Background(), "CREATE TABLE y (a INT)")
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "--max-queued")

	// The queue timeout passes: the update is refused, the DoGet waits on.
	close(fire)
	err = <-upd
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "--queue-timeout")
	select {
	case err := <-got:
		t.Fatalf("the accepted DoGet ended while the slot was held: %v", err)
	default:
	}
	cancel()
	<-errc
	require.NoError(t, <-got, "the accepted DoGet runs once the slot frees")
}

// TestSysCancelEndsARunningDoGet: Cancel of the admission controller (CALL
// sys.cancel) ends a statement streaming to a DoGet with CANCELLED naming
// it, and frees its slot.
func TestSysCancelEndsARunningDoGet(t *testing.T) {
	eng := &countingEngine{}
	adm := admit.New(admit.Options{LongSlots: 1})
	cl, _ := startWith(t, eng, Options{Admission: adm})
	info, err := cl.Execute(context.Background(), "SELECT forever")
	require.NoError(t, err)
	r, err := cl.DoGet(context.Background(), info.Endpoint[0].Ticket)
	require.NoError(t, err)
	require.True(t, r.Next())
	list := adm.Statements()
	require.Len(t, list, 1)
	require.Equal(t, admit.Running, list[0].State)
	require.Equal(t, "query", list[0].Kind)
	require.NotEmpty(t, list[0].Client)
	require.NoError(t, adm.Cancel(list[0].ID))
	for r.Next() {
	}
	require.Equal(t, codes.Canceled, status.Code(r.Err()), "%v", r.Err())
	require.ErrorContains(t, r.Err(), "sys.cancel")
	r.Release()
	require.Eventually(t, func() bool { run, _ := adm.Load(admit.Long); return run == 0 }, 10*time.Second, 5*time.Millisecond)
}

func TestQueryTimeout(t *testing.T) {
	cl, _ := startWith(t, &countingEngine{}, Options{QueryTimeout: 50 * time.Millisecond, MaxConcurrent: 1})
	ctx := context.Background()
	for _, sql := range []string{"SELECT block", "SELECT forever"} {
		info, err := cl.Execute(ctx, sql)
		require.NoError(t, err)
		_, err = doGet(ctx, cl, info)
		require.Equal(t, codes.DeadlineExceeded, status.Code(err), "%s: %v", sql, err)
		require.ErrorContains(t, err, "--query-timeout")
	}
	// Both gave their slot back.
	require.Eventually(t, func() bool {
		_, err := cl.ExecuteUpdate(ctx, "CREATE TABLE x (a INT)")
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
}

func TestStatementLength(t *testing.T) {
	cl, _ := startWith(t, &countingEngine{}, Options{MaxStatementBytes: 20})
	ctx := context.Background()
	long := "SELECT " + strings.Repeat("1", 20)
	_, err := cl.Execute(ctx, long)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.ErrorContains(t, err, "--max-statement-bytes")
	_, err = cl.ExecuteUpdate(ctx, "INSERT INTO t VALUES (1, 2, 3, 4)")
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = cl.Prepare(ctx, long)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = cl.GetExecuteSchema(ctx, long)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	// A ticket carrying long SQL is refused too.
	tkt, err := encodeTicket(ticket{sql: long})
	require.NoError(t, err)
	r, err := cl.DoGet(ctx, &flight.Ticket{Ticket: tkt})
	if err == nil {
		for r.Next() {
		}
		err = r.Err()
		r.Release()
	}
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
}

func TestParameterBytesAreBounded(t *testing.T) {
	cl, _ := startWith(t, &countingEngine{}, Options{MaxParamBytes: 1 << 10})
	ctx := context.Background()
	ps, err := cl.Prepare(ctx, "SELECT ?")
	require.NoError(t, err)
	defer ps.Close(ctx)
	b := array.NewRecordBuilder(memory.DefaultAllocator, numSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(make([]int64, 1000), nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	ps.SetParameters(rec)
	_, err = ps.Execute(ctx)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "--max-message-bytes")
}

func TestOutOfMemoryIsResourceExhausted(t *testing.T) {
	cl, _ := startWith(t, &countingEngine{}, Options{})
	info, err := cl.Execute(context.Background(), "SELECT oom")
	require.NoError(t, err)
	_, err = doGet(context.Background(), cl, info)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "--memory-limit")
}
