package flightsql

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/admit"
)

// TestStalledReaderIsEndedAndFreesItsSlot: a client that starts a DoGet
// of an endless result and stops reading holds the long lane's one slot
// until --stall-timeout; then the statement stops, its slot frees, and
// another client's scan runs. The stalled client, reading again, gets
// DEADLINE_EXCEEDED naming the flag.
func TestStalledReaderIsEndedAndFreesItsSlot(t *testing.T) {
	adm := admit.New(admit.Options{LongSlots: 1})
	srv, err := New(&countingEngine{}, Options{Admission: adm})
	require.NoError(t, err)
	fs := flight.NewServerWithMiddleware(nil, append(GRPCOptions(nil), StallGuard(200*time.Millisecond))...)
	fs.RegisterFlightService(srv.FlightServer())
	require.NoError(t, fs.Init("127.0.0.1:0"))
	go func() { _ = fs.Serve() }()
	t.Cleanup(func() { fs.Shutdown(); srv.Close() })
	dial := func() *flightsql.Client {
		cl, err := flightsql.NewClient(fs.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	stalled := dial()
	ctx := context.Background()
	info, err := stalled.Execute(ctx, "SELECT forever")
	require.NoError(t, err)
	r, err := stalled.DoGet(ctx, info.Endpoint[0].Ticket)
	require.NoError(t, err)
	require.True(t, r.Next()) // then stop reading
	require.Eventually(t, func() bool { run, _ := adm.Load(admit.Long); return run == 0 }, time.Minute, 5*time.Millisecond,
		"the stalled DoGet's slot frees")

	other := dial()
	info, err = other.Execute(ctx, "SELECT 12345")
	require.NoError(t, err)
	n, err := doGet(ctx, other, info)
	require.NoError(t, err)
	require.EqualValues(t, len("SELECT 12345"), n)

	for r.Next() {
	}
	require.Equal(t, codes.DeadlineExceeded, status.Code(r.Err()), "%v", r.Err())
	require.ErrorContains(t, r.Err(), "--stall-timeout")
	r.Release()
}

// TestMemoryIsReturnedWhenTheLongLaneGoesIdle: once the last long
// statement ends, the server returns its heap's free memory to the system
// (not after each of several statements that overlap).
func TestMemoryIsReturnedWhenTheLongLaneGoesIdle(t *testing.T) {
	released := make(chan struct{}, 8)
	cl, _ := startWith(t, &countingEngine{}, Options{onRelease: func() { released <- struct{}{} }})
	ctx := context.Background()
	info, err := cl.Execute(ctx, "SELECT 123")
	require.NoError(t, err)
	_, err = doGet(ctx, cl, info)
	require.NoError(t, err)
	select {
	case <-released:
	case <-time.After(time.Minute):
		t.Fatal("no memory was returned after the long lane went idle")
	}
}
