package flightsql

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// endlessEngine answers "SELECT ENDLESS" with a reader that yields batches
// until its statement's context ends, and says when one starts and when
// its reader is released.
type endlessEngine struct {
	fakeEngine
	started  chan struct{}
	released chan struct{}
}

func (e *endlessEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	sql := st.SQL()
	if !strings.HasPrefix(sql, "SELECT ENDLESS") {
		return e.fakeEngine.Execute(ctx, st)
	}
	e.started <- struct{}{}
	return engine.Result{Schema: numSchema, Reader: &endlessReader{ctx: ctx, released: e.released}}, nil
}

type endlessReader struct {
	ctx      context.Context
	released chan struct{}
	once     sync.Once
	rec      arrow.RecordBatch
}

func (r *endlessReader) Retain()               {}
func (r *endlessReader) Schema() *arrow.Schema { return numSchema }
func (r *endlessReader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.ctx.Err() != nil {
		return false
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, numSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	r.rec = b.NewRecordBatch()
	return true
}
func (r *endlessReader) RecordBatch() arrow.RecordBatch { return r.rec }
func (r *endlessReader) Record() arrow.RecordBatch      { return r.rec }
func (r *endlessReader) Err() error                     { return r.ctx.Err() }
func (r *endlessReader) Release() {
	r.once.Do(func() {
		if r.rec != nil {
			r.rec.Release()
		}
		close(r.released)
	})
}

// TestCancelFlightInfoStopsItsRunningDoGets: CancelFlightInfo (and the
// older CancelQuery) answered UNIMPLEMENTED. A running DoGet of the info's
// ticket ends CANCELLED and its statement's reader is released; a ticket
// nobody fetches is NOT_CANCELLABLE.
func TestCancelFlightInfoStopsItsRunningDoGets(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		eng := &endlessEngine{started: make(chan struct{}, 1), released: make(chan struct{})}
		cl, _ := startWith(t, eng, Options{})
		ctx := context.Background()
		info, err := cl.Execute(ctx, "SELECT ENDLESS")
		require.NoError(t, err)
		res, err := cl.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
		require.NoError(t, err)
		require.Equal(t, flight.CancelStatusNotCancellable, res.GetStatus(), "nothing runs before the DoGet")

		errc := make(chan error, 1)
		go func() {
			r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
			if err == nil {
				for r.Next() {
				}
				err = r.Err()
				r.Release()
			}
			errc <- err
		}()
		<-eng.started
		if legacy {
			//lint:ignore SA1019 older clients still send the deprecated CancelQuery
			got, err := cl.CancelQuery(ctx, info)
			require.NoError(t, err)
			require.Equal(t, "CANCEL_RESULT_CANCELLED", got.String())
		} else {
			res, err = cl.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
			require.NoError(t, err)
			require.Equal(t, flight.CancelStatusCancelled, res.GetStatus())
		}
		err = <-errc
		require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
		require.ErrorContains(t, err, "cancelled")
		<-eng.released
		// The server keeps serving, and the same ticket runs again.
		_, err = cl.Execute(ctx, "SELECT 1")
		require.NoError(t, err)
	}
}

// PollFlightInfo answered UNIMPLEMENTED; it answers the complete
// FlightInfo at once.
func TestPollFlightInfoIsCompleteAtOnce(t *testing.T) {
	cl, _ := startTest(t)
	ctx := context.Background()
	poll, err := cl.ExecutePoll(ctx, "SELECT 123", nil)
	require.NoError(t, err)
	require.Nil(t, poll.GetFlightDescriptor(), "no need to poll again")
	require.Equal(t, 1.0, poll.GetProgress())
	n, _ := readAll(t, cl, poll.GetInfo())
	require.EqualValues(t, len("SELECT 123"), n)
}

// partsEngine is fakeEngine that remembers the part each statement ran.
type partsEngine struct {
	fakeEngine
	mu    sync.Mutex
	parts []string
}

func (e *partsEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	e.mu.Lock()
	e.parts = append(e.parts, engine.Database(ctx)+":"+engine.Part(ctx))
	e.mu.Unlock()
	return e.fakeEngine.Execute(ctx, st)
}

// TestLargeScanHasAnEndpointPerPart: GetFlightInfo gave one endpoint and
// total_records -1 always. A statement the engine splits has an endpoint
// per part, each of whose tickets runs its part (in the session's
// database), with the row count; MaxEndpoints bounds them.
func TestLargeScanHasAnEndpointPerPart(t *testing.T) {
	eng := &partsEngine{}
	addr := serve(t, eng, Options{MaxEndpoints: 8})
	cl := cookieClient(t, addr)
	ctx := context.Background()
	sessionDB := func(db string) {
		opts, err := flight.NewSessionOptionValues(map[string]any{"schema": db})
		require.NoError(t, err)
		_, err = cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
		require.NoError(t, err)
	}
	sessionDB("shop")
	info, err := cl.Execute(ctx, "SELECT PARTS")
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 3)
	require.EqualValues(t, 9, info.TotalRecords)
	n, _ := readAll(t, cl, info)
	require.EqualValues(t, 3*len("SELECT PARTS"), n)
	require.ElementsMatch(t, []string{"shop:p0", "shop:p1", "shop:p2"}, eng.parts)

	info, err = cl.Execute(ctx, "SELECT 1")
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 1, "a statement the engine does not split")
	require.EqualValues(t, -1, info.TotalRecords)

	one := cookieClient(t, serve(t, &partsEngine{}, Options{MaxEndpoints: 1}))
	info, err = one.Execute(ctx, "SELECT PARTS")
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 1, "MaxEndpoints 1")
}
