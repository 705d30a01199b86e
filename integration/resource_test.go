package integration

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/perf"
)

// addressSpace is the address-space limit (prlimit --as) the resource test
// runs the server under, and memoryCeiling the resident memory at which it
// cancels DuckDB statements (--memory-ceiling). Idle, the server maps about
// 4.3 GB (Go's and DuckDB's reservations, little of it resident). When
// DuckDB filled the address space first, its allocator kept the space and
// the Go runtime then died on its next allocation ("fatal error: runtime:
// cannot allocate memory"); the ceiling must cut statements while the
// address space still has room for Go.
const (
	addressSpace  = 8_000_000_000
	memoryCeiling = "1536MiB"
)

func sqlClient(t *testing.T, srv *testserver.Server) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(srv.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// fetch reads the first endpoint of info to its end (or until max batches,
// when max > 0, then cancels) and returns the rows and the error.
func fetch(cl *flightsql.Client, info *flight.FlightInfo, max int) (int64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var n int64
	for batches := 0; r.Next(); batches++ {
		n += r.RecordBatch().NumRows()
		if max > 0 && batches+1 >= max {
			return n, nil
		}
	}
	return n, r.Err()
}

// TestResource: a server under an address-space limit keeps serving through
// requests that each used to take the machine: a query of 10^12 rows, a
// thousand prepared statements never closed, a hundred results never
// fetched, and the benchmark requests that ran it out of memory; and it
// still answers a query afterwards.
func TestResource(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit not found")
	}
	srv := testserver.StartWrapped(t, []string{"prlimit", "--as=" + strconv.Itoa(addressSpace)}, t.TempDir(),
		"--memory-limit", "1GiB", "--memory-ceiling", memoryCeiling, "--query-timeout", "20s", "--log-level", "info")
	cl := sqlClient(t, srv)
	ctx := context.Background()
	c := connect(t, srv)
	_, err := c.exec("CREATE DATABASE res")
	require.NoError(t, err)
	_, err = c.exec("CREATE TABLE res.r (a BIGINT)")
	require.NoError(t, err)
	t.Logf("idle: RSS %d MiB", srv.RSS()>>20)

	t.Run("range 1e12", func(t *testing.T) {
		// Had GetFlightInfo run the query, it would have failed (out of
		// memory or past --query-timeout) instead of answering.
		info, err := cl.Execute(ctx, "SELECT * FROM range(1000000000000)")
		require.NoError(t, err)
		// The result streams as DuckDB makes it: its first batches come
		// while the server holds about a chunk of it.
		n, err := fetch(cl, info, 50)
		require.NoError(t, err)
		require.Positive(t, n)
		t.Logf("range(1e12), streamed: %d rows; RSS %d MiB", n, srv.RSS()>>20)
		// A result of a type built from rows (INTERVAL) is built whole
		// before its first row: the memory ceiling (or, on a slow machine,
		// the timeout) ends it.
		info, err = cl.Execute(ctx, "SELECT range, INTERVAL 1 DAY AS d FROM range(1000000000000)")
		require.NoError(t, err)
		n, err = fetch(cl, info, 50)
		require.Error(t, err)
		require.Contains(t, []codes.Code{codes.ResourceExhausted, codes.DeadlineExceeded}, status.Code(err), "%v", err)
		t.Logf("range(1e12) with an INTERVAL: %d rows, %v; RSS %d MiB", n, err, srv.RSS()>>20)
	})

	t.Run("a thousand unclosed prepared statements", func(t *testing.T) {
		before := srv.RSS()
		for range 1000 {
			_, err := cl.Prepare(ctx, "SELECT a FROM res.r WHERE a > 5")
			require.NoError(t, err)
		}
		t.Logf("1000 prepared statements: RSS %d -> %d MiB", before>>20, srv.RSS()>>20)
	})

	t.Run("a hundred unfetched results", func(t *testing.T) {
		before := srv.RSS()
		for range 100 {
			_, err := cl.Execute(ctx, "SELECT * FROM range(2000000)")
			require.NoError(t, err)
			_, err = cl.Execute(ctx, "INSERT INTO res.r VALUES (1)")
			require.NoError(t, err)
		}
		t.Logf("100 unfetched queries and 100 unfetched updates: RSS %d -> %d MiB", before>>20, srv.RSS()>>20)
		require.Equal(t, "100", c.scalar("SELECT count(*) FROM res.r$rt"))
	})

	t.Run("benchmark requests", func(t *testing.T) {
		fc, err := flight.NewClientWithMiddleware(srv.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer fc.Close()
		_, err = fc.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
			Cmd: perf.Perf{StreamCount: 5_000_000, RecordsPerStream: 10, RecordsPerBatch: 10}.Marshal()})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.ErrorContains(t, err, "stream_count")
		for _, p := range []perf.Perf{
			{StreamCount: 1, RecordsPerStream: 1 << 20, RecordsPerBatch: 1<<31 - 1},
			{StreamCount: 1, RecordsPerStream: 1 << 62, RecordsPerBatch: 4096},
		} {
			_, err = fc.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: p.Marshal()})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			st, err := fc.DoGet(ctx, &flight.Ticket{Ticket: perf.Token{Definition: p, Start: 0, End: p.RecordsPerStream}.Marshal()})
			require.NoError(t, err)
			_, err = st.Recv()
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		}
	})

	t.Run("statement timeout", func(t *testing.T) {
		// Computes for far longer than --query-timeout without producing
		// a row: DuckDB must be interrupted. Describing an aggregate runs
		// it (under LIMIT 0), so the timeout may end GetFlightInfo already.
		start := time.Now()
		info, err := cl.Execute(ctx, "SELECT sum(a.range * b.range) FROM range(10000000) a, range(10000000) b")
		if err == nil {
			_, err = fetch(cl, info, 0)
		}
		require.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
		require.ErrorContains(t, err, "--query-timeout")
		t.Logf("timeout after %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("deeply nested CREATE TABLE", func(t *testing.T) {
		// Six million levels overflowed the stack; a thousand took minutes
		// to load at every start. Under the length bound the deepest
		// statement is refused at once, and so is one just past the depth.
		for _, depth := range []int{33, 80_000} {
			_, err := cl.ExecuteUpdate(ctx, "CREATE TABLE res.deep (a "+strings.Repeat("ARRAY<", depth)+"INT"+strings.Repeat(">", depth)+")")
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.ErrorContains(t, err, "nested deeper")
		}
	})

	t.Run("statement length", func(t *testing.T) {
		_, err := cl.Execute(ctx, "SELECT '"+strings.Repeat("x", 2<<20)+"'")
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.ErrorContains(t, err, "--max-statement-bytes")
	})

	require.False(t, srv.Exited(), "the server died:\n%s", srv.Log())
	require.Equal(t, "42", c.scalar("SELECT 42"))
	require.NotContains(t, srv.Log(), "fatal error")
	t.Logf("end: RSS %d MiB", srv.RSS()>>20)
}

// TestResourceUpdateTicketAppliesOnce: an INSERT sent as a statement query
// (as Python DB-API cursor.execute does) runs at GetFlightInfo; fetching
// its ticket again, also after a restart, gives the same row count and
// never writes twice.
func TestResourceUpdateTicketAppliesOnce(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	cl := sqlClient(t, srv)
	c := connect(t, srv)
	_, err := c.exec("CREATE DATABASE res")
	require.NoError(t, err)
	_, err = c.exec("CREATE TABLE res.once (a BIGINT)")
	require.NoError(t, err)
	info, err := cl.Execute(context.Background(), "INSERT INTO res.once VALUES (1), (2)")
	require.NoError(t, err)
	for range 2 {
		require.EqualValues(t, 2, affected(t, cl, info))
	}
	srv.Restart(syscall.SIGTERM)
	cl = sqlClient(t, srv)
	require.EqualValues(t, 2, affected(t, cl, info), "the ticket carries its count across a restart")
	require.Equal(t, "2", connect(t, srv).scalar("SELECT count(*) FROM res.once$rt"))
}

// affected fetches the ticket of a statement that changed things and
// returns its rows_affected.
func affected(t *testing.T, cl *flightsql.Client, info *flight.FlightInfo) int64 {
	t.Helper()
	r, err := cl.DoGet(context.Background(), info.Endpoint[0].Ticket)
	require.NoError(t, err)
	defer r.Release()
	n := int64(-1)
	for r.Next() {
		rec := r.RecordBatch()
		require.EqualValues(t, 1, rec.NumRows())
		require.Equal(t, "rows_affected", rec.Schema().Field(0).Name)
		n = rec.Column(0).(*array.Int64).Value(0)
	}
	require.NoError(t, r.Err())
	return n
}

// TestResourceShutdownWithinGrace: SIGTERM ends the process within
// --shutdown-grace while a statement that would run for hours is running.
func TestResourceShutdownWithinGrace(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--query-timeout", "0", "--shutdown-grace", "3s")
	cl := sqlClient(t, srv)
	errc := make(chan error, 1)
	go func() {
		info, err := cl.Execute(context.Background(), "SELECT sum(a.range * b.range) FROM range(10000000) a, range(10000000) b")
		if err == nil {
			_, err = fetch(cl, info, 0)
		}
		errc <- err
	}()
	// The statement runs once the server burns CPU on it.
	cpu := srv.CPUSeconds()
	testserver.Eventually(t, 30*time.Second, func() error {
		if srv.CPUSeconds() < cpu+0.5 {
			return errors.New("the statement has not started")
		}
		return nil
	})
	start := time.Now()
	srv.Stop(syscall.SIGTERM)
	took := time.Since(start)
	t.Logf("SIGTERM to exit: %s", took.Round(time.Millisecond))
	// The grace period is a wall-clock promise, so this one bound is in
	// seconds; the margin covers a loaded machine (without the hard stop
	// the process ran for minutes).
	require.Less(t, took, 3*time.Second+10*time.Second)
	require.Error(t, <-errc)
}
