package flightsql

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/internal/background"
)

// Defaults of the bounds in Options (the flags of flightd serve set them).
const (
	DefaultPreparedTTL       = 30 * time.Minute
	DefaultMaxPrepared       = 4096
	DefaultMaxStatementBytes = 1 << 20
	DefaultMaxParamBytes     = 64 << 20
	DefaultMaxStreams        = 64
)

// DefaultMaxConcurrent is the default cap on statements running at once
// in each lane: four per GOMAXPROCS.
func DefaultMaxConcurrent() int { return 4 * runtime.GOMAXPROCS(0) }

// errQueryTimeout is the cause of a statement context that ran out of
// Options.QueryTimeout (and not of a deadline the client set).
var errQueryTimeout = errors.New("statement timeout")

// work is what a statement asks admission for.
type work struct {
	sql      string
	kind     string // "describe", "query", "update"
	lane     admit.Lane
	accepted bool // the DoGet of a ticket GetFlightInfo planned: never refused for capacity
}

// describing is the work of describing sql (preparing it, planning its
// FlightInfo): short whatever sql does when it runs.
func describing(sql string) work { return work{sql: sql, kind: "describe", lane: admit.Short} }

// toRun is the work of running st: its lane is the engine's judgement
// of its cost (engine.ShortWork).
func (s *Server) toRun(ctx context.Context, st engine.Statement, kind string) work {
	lane := admit.Long
	if s.eng.ShortWork(ctx, st) {
		lane = admit.Short
	}
	return work{sql: st.SQL(), kind: kind, lane: lane}
}

type stmtKey struct{}

// begin readies a statement to run: it waits for a slot of its lane
// (package internal/admit: ResourceExhausted when the queue is full or the
// wait passes --queue-timeout; an accepted DoGet only waits) and returns
// ctx bounded by QueryTimeout, which also runs while it waits. done gives
// both back; it may be called more than once.
func (s *Server) begin(ctx context.Context, w work) (qctx context.Context, done func(), err error) {
	cancel := context.CancelFunc(func() {})
	if s.opts.QueryTimeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, s.opts.QueryTimeout, errQueryTimeout)
	}
	// A query bound with several rows of values is its statements joined
	// by NUL (boundQuery); sys.statements shows them as a script.
	sql := strings.ReplaceAll(w.sql, "\x00", "; ")
	req := admit.Request{Lane: w.lane, Kind: w.kind, SQL: sql, Accepted: w.accepted, User: userOf(ctx)}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		req.Client = p.Addr.String()
	}
	st, qctx, err := s.admit.Admit(ctx, req)
	if err != nil {
		cancel()
		if errors.Is(err, admit.ErrQueueFull) || errors.Is(err, admit.ErrQueueTimeout) {
			return nil, nil, status.Errorf(codes.ResourceExhausted, "flightd: %v; retry later", err)
		}
		if errors.Is(err, admit.ErrCancelled) {
			return nil, nil, status.Error(codes.Canceled, "flightd: the statement was cancelled by an operator (CALL sys.cancel or the operator's page) while it waited for a slot")
		}
		return nil, nil, s.statementStatus(ctx, err)
	}
	qctx = context.WithValue(qctx, stmtKey{}, st)
	if w.lane == admit.Long {
		// Its scans decode on lowered threads: short work gets the cores first.
		qctx = background.WithLowPriority(qctx)
	}
	return qctx, func() {
		st.Done()
		cancel()
		if w.lane == admit.Long {
			s.afterLong()
		}
	}, nil
}

// releaseEvery is the least time between two returns of memory to the
// system (afterLong).
const releaseEvery = 5 * time.Second

// afterLong returns the memory Go's heap no longer uses to the system
// once no long statement runs or waits (at most every releaseEvery): a
// scan's batches are garbage once it ends, but Go collects garbage as it
// allocates, so an idle server kept 1.3 GiB resident for minutes after
// sixteen large reads ended. debug.FreeOSMemory collects and returns it
// (a full collection: cheap next to the statement that made the garbage).
func (s *Server) afterLong() {
	if run, wait := s.admit.Load(admit.Long); run > 0 || wait > 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.releasing {
		return // a return is running or due, and looks again
	}
	s.releasing = true
	// Within releaseEvery of the last return, this one waits for the rest
	// of it, then looks again, so the garbage of the last statements of a
	// burst is returned too.
	wait := max(0, releaseEvery-s.opts.Now().Sub(s.released))
	time.AfterFunc(wait, func() {
		if run, queued := s.admit.Load(admit.Long); run == 0 && queued == 0 {
			debug.FreeOSMemory()
		}
		s.mu.Lock()
		s.releasing, s.released = false, s.opts.Now()
		s.mu.Unlock()
		if s.opts.onRelease != nil {
			s.opts.onRelease()
		}
	})
}

// statementOf is the admitted statement qctx (from begin) runs, or nil.
func statementOf(qctx context.Context) *admit.Statement {
	st, _ := qctx.Value(stmtKey{}).(*admit.Statement)
	return st
}

// userOf is the authenticated user of ctx ("" without authentication).
func userOf(ctx context.Context) string {
	u, _ := flight.AuthFromContext(ctx).(string)
	return u
}

// beginStream readies a streaming read: it takes one of the MaxStreams
// slots (ResourceExhausted when none is free). A stream runs until its
// client ends it, so neither a statement slot nor QueryTimeout applies.
func (s *Server) beginStream(ctx context.Context) (context.Context, func(), error) {
	select {
	case s.streams <- struct{}{}:
	default:
		return nil, nil, status.Errorf(codes.ResourceExhausted, "flightd: %d streaming reads are open, the most this server keeps (--max-streams); close one or retry later", cap(s.streams))
	}
	var once sync.Once
	return ctx, func() { once.Do(func() { <-s.streams }) }, nil
}

// Running is how many statements hold a slot: preparing, running, or
// streaming to a DoGet.
func (s *Server) Running() int {
	short, _ := s.admit.Load(admit.Short)
	long, _ := s.admit.Load(admit.Long)
	return short + long
}

// Queued is how many statements wait for a slot.
func (s *Server) Queued() int {
	_, short := s.admit.Load(admit.Short)
	_, long := s.admit.Load(admit.Long)
	return short + long
}

// Streams is how many streaming reads are open (each holds one of the
// MaxStreams slots until its client ends it).
func (s *Server) Streams() int { return len(s.streams) }

// statementStatus maps err from a statement that ran under qctx (from
// begin): a statement stopped by QueryTimeout is DeadlineExceeded whatever
// the engine made of the interruption.
func (s *Server) statementStatus(qctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch context.Cause(qctx) {
	case errQueryTimeout:
		return status.Errorf(codes.DeadlineExceeded, "flightd: the statement ran longer than %s, the server's statement timeout (--query-timeout)", s.opts.QueryTimeout)
	case errCancelled:
		return status.Error(codes.Canceled, errCancelled.Error())
	case errStalled:
		return status.Error(codes.DeadlineExceeded, "flightd: the client stopped reading (--stall-timeout)")
	case admit.ErrCancelled:
		id := int64(0)
		if st := statementOf(qctx); st != nil {
			id = st.ID()
		}
		return status.Errorf(codes.Canceled, "flightd: statement %d was cancelled by an operator (CALL sys.cancel(%d) or the operator's page)", id, id)
	}
	if qctx.Err() != nil {
		return status.FromContextError(qctx.Err()).Err()
	}
	return toStatus(err)
}

// outOfMemory reports whether err is DuckDB running out of its memory_limit.
func outOfMemory(err error) bool {
	return strings.Contains(err.Error(), "Out of Memory Error")
}

// checkSQL refuses statement text longer than MaxStatementBytes.
func (s *Server) checkSQL(sql string) error {
	if len(sql) > s.opts.MaxStatementBytes {
		return status.Errorf(codes.InvalidArgument, "flightd: the statement is %d bytes, more than the %d bytes this server accepts (--max-statement-bytes)", len(sql), s.opts.MaxStatementBytes)
	}
	return nil
}

// janitor expires idle prepared statements until stop is closed, so that
// none waits for a later request to be dropped.
func (s *Server) janitor(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep drops what expired by now.
func (s *Server) sweep() {
	now := s.opts.Now()
	s.mu.Lock()
	prepared := 0
	for k, ps := range s.prepared {
		if now.Sub(ps.lastUsed) >= s.opts.PreparedTTL {
			delete(s.prepared, k)
			prepared++
		}
	}
	s.mu.Unlock()
	if prepared > 0 {
		s.lg.Debug("expired", "prepared_statements", prepared)
	}
	if s.opts.onSweep != nil {
		s.opts.onSweep(prepared)
	}
}

// janitorInterval is how often the janitor looks: often enough that an
// entry outlives its TTL by at most about half of it, at most every 30s.
func janitorInterval(ttls ...time.Duration) time.Duration {
	d := 30 * time.Second
	for _, t := range ttls {
		d = min(d, max(t/2, time.Millisecond))
	}
	return d
}
