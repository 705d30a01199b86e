package flightsql

import (
	"context"
	"errors"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// Cancellation. A query runs while a DoGet streams it, so cancelling a
// FlightInfo (CancelFlightInfo, or the older CancelQuery action) stops the
// DoGets of its tickets that are running: their statements end, DuckDB's
// work and the scans' readers are released, and each DoGet ends with
// CANCELLED. A ticket nobody is fetching has nothing to stop (a DoGet
// started later runs it; the result says NOT_CANCELLABLE). A client that
// closes its stream cancels the same way, through the gRPC context.

// errCancelled is the cause of a statement stopped by a cancel request.
var errCancelled = errors.New("flightd: the query was cancelled (CancelFlightInfo)")

// runningSet is the DoGets streaming, by their ticket's statement handle.
type runningSet struct {
	mu sync.Mutex
	m  map[string]map[*context.CancelCauseFunc]struct{}
}

// add registers a DoGet of the ticket with handle h; done unregisters it.
func (rs *runningSet) add(h string, cancel context.CancelCauseFunc) (done func()) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if rs.m[h] == nil {
		rs.m[h] = map[*context.CancelCauseFunc]struct{}{}
	}
	key := &cancel
	rs.m[h][key] = struct{}{}
	return func() {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		delete(rs.m[h], key)
		if len(rs.m[h]) == 0 {
			delete(rs.m, h)
		}
	}
}

// cancel stops the running DoGets of info's tickets and reports how many.
func (rs *runningSet) cancel(info *flight.FlightInfo) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for _, ep := range info.GetEndpoint() {
		t, err := flightsql.GetStatementQueryTicket(ep.GetTicket())
		if err != nil {
			continue
		}
		for c := range rs.m[string(t.GetStatementHandle())] {
			(*c)(errCancelled)
			n++
		}
	}
	return n
}

// CancelFlightInfo stops the running DoGets of the FlightInfo's tickets.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	st := flight.CancelStatusNotCancellable
	if s.running.cancel(req.GetInfo()) > 0 {
		st = flight.CancelStatusCancelled
	}
	return flight.CancelFlightInfoResult{Status: st}, nil
}

// CancelQuery is CancelFlightInfo for clients of Flight SQL before 13.
func (s *Server) CancelQuery(ctx context.Context, req flightsql.ActionCancelQueryRequest) (flightsql.CancelResult, error) {
	if s.running.cancel(req.GetInfo()) > 0 {
		return flightsql.CancelResultCancelled, nil
	}
	return flightsql.CancelResultNotCancellable, nil
}

// PollFlightInfoStatement answers at once with the whole FlightInfo: a query
// runs while its DoGet streams, so planning it is all there is to wait for.
func (s *Server) PollFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoStatement(ctx, cmd, desc)
	return done(info), err
}

// PollFlightInfoPreparedStatement is PollFlightInfoStatement for a
// prepared statement.
func (s *Server) PollFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoPreparedStatement(ctx, cmd, desc)
	return done(info), err
}

// done is the PollInfo of a FlightInfo that is complete.
func done(info *flight.FlightInfo) *flight.PollInfo {
	if info == nil {
		return nil
	}
	progress := 1.0
	return &flight.PollInfo{Info: info, Progress: &progress}
}
