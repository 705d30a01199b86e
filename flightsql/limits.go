package flightsql

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Defaults of the bounds in Options (the flags of flightd serve set them).
const (
	DefaultPreparedTTL       = 30 * time.Minute
	DefaultMaxPrepared       = 4096
	DefaultMaxStatementBytes = 1 << 20
	DefaultMaxParamBytes     = 64 << 20
	DefaultMaxStreams        = 64
)

// DefaultMaxConcurrent is the default cap on statements running at once:
// four per GOMAXPROCS.
func DefaultMaxConcurrent() int { return 4 * runtime.GOMAXPROCS(0) }

// errQueryTimeout is the cause of a statement context that ran out of
// Options.QueryTimeout (and not of a deadline the client set).
var errQueryTimeout = errors.New("statement timeout")

// begin readies a statement to run: it takes one of the MaxConcurrent slots
// (ResourceExhausted when none is free) and returns ctx bounded by
// QueryTimeout. done gives both back; it may be called more than once.
func (s *Server) begin(ctx context.Context) (qctx context.Context, done func(), err error) {
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, nil, status.Errorf(codes.ResourceExhausted, "flightd: %d statements are already running, the most this server runs at once (--max-concurrent-queries); retry later", cap(s.slots))
	}
	cancel := context.CancelFunc(func() {})
	qctx = ctx
	if s.opts.QueryTimeout > 0 {
		qctx, cancel = context.WithTimeoutCause(ctx, s.opts.QueryTimeout, errQueryTimeout)
	}
	var once sync.Once
	return qctx, func() {
		once.Do(func() {
			cancel()
			<-s.slots
		})
	}, nil
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
func (s *Server) Running() int { return len(s.slots) }

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
