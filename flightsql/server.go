package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// Options configure the server. Zero values take the defaults (the
// Default* constants); QueryTimeout 0 means no timeout.
type Options struct {
	Name      string // reported as FLIGHT_SQL_SERVER_NAME
	Version   string
	Logger    *slog.Logger
	Allocator memory.Allocator
	// QueryTimeout bounds each statement: its run, and for a query the
	// DoGet that streams it (0 = none).
	QueryTimeout time.Duration
	// MaxConcurrent caps statements running at once (preparing, running,
	// streaming to a DoGet); more get ResourceExhausted.
	MaxConcurrent int
	// MaxPrepared caps open prepared statements; more get
	// ResourceExhausted. PreparedTTL expires those idle this long.
	MaxPrepared int
	PreparedTTL time.Duration
	// ResultTTL is how long the one-row result of a statement that changed
	// something (run at GetFlightInfo) waits for its DoGet; MaxPending
	// bounds how many wait (the oldest is dropped).
	ResultTTL  time.Duration
	MaxPending int
	// MaxStatementBytes bounds SQL text; longer is InvalidArgument.
	MaxStatementBytes int
	// MaxParamBytes bounds the parameter values one DoPut binds.
	MaxParamBytes int64
	// Now is the clock expiry reads (tests); default time.Now.
	Now func() time.Time

	// onSweep, when set, is called after each sweep of the janitor with
	// what it expired (tests).
	onSweep func(results, prepared int)
	// janitorEvery, when set, is how often the janitor sweeps (tests).
	janitorEvery time.Duration
}

// Server implements flightsql.Server.
type Server struct {
	flightsql.BaseServer
	eng  engine.Engine
	opts Options
	lg   *slog.Logger

	slots chan struct{} // one per running statement
	stop  chan struct{} // closed by Close: stops the janitor
	once  sync.Once

	mu       sync.Mutex
	parked   uint64 // results parked so far
	pending  map[string]*pendingResult
	prepared map[string]*preparedStmt
}

// pendingResult is the result of a statement that changed something, run
// at GetFlightInfo, waiting for its (one) DoGet.
type pendingResult struct {
	affected int64
	expires  time.Time
	seq      uint64 // order of parking: the lowest is the oldest
}

type preparedStmt struct {
	sql      string
	prep     engine.Prepared
	lastUsed time.Time
	// bound is what the parameter values bound last make of sql
	// (engine.BindParams); nil until values are bound.
	bound []string
}

// New returns a server over eng. Close stops its background expiry.
func New(eng engine.Engine, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.ResultTTL <= 0 {
		opts.ResultTTL = DefaultResultTTL
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.PreparedTTL <= 0 {
		opts.PreparedTTL = DefaultPreparedTTL
	}
	if opts.MaxPrepared <= 0 {
		opts.MaxPrepared = DefaultMaxPrepared
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent()
	}
	if opts.MaxStatementBytes <= 0 {
		opts.MaxStatementBytes = DefaultMaxStatementBytes
	}
	if opts.MaxParamBytes <= 0 {
		opts.MaxParamBytes = DefaultMaxParamBytes
	}
	if opts.QueryTimeout < 0 {
		opts.QueryTimeout = 0
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Name == "" {
		opts.Name = "flightd"
	}
	s := &Server{
		eng: eng, opts: opts, lg: opts.Logger,
		slots: make(chan struct{}, opts.MaxConcurrent), stop: make(chan struct{}),
		pending: map[string]*pendingResult{}, prepared: map[string]*preparedStmt{},
	}
	s.Alloc = opts.Allocator
	if err := s.registerSqlInfo(); err != nil {
		return nil, err
	}
	every := opts.janitorEvery
	if every <= 0 {
		every = janitorInterval(opts.ResultTTL, opts.PreparedTTL)
	}
	go s.janitor(every)
	return s, nil
}

// FlightServer wraps s for registration with a flight.Server.
func (s *Server) FlightServer() flight.FlightServer { return flightsql.NewFlightServer(s) }

// Close stops the background expiry and drops what waits.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.pending)
	clear(s.prepared)
}

func newHandle() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// toStatus maps an error to a gRPC status with a useful code.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // already a gRPC status
	}
	code := codes.Internal
	switch {
	case outOfMemory(err):
		return status.Errorf(codes.ResourceExhausted, "%v (statements share the memory set by --memory-limit)", err)
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, engine.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, engine.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, engine.ErrExists):
		code = codes.AlreadyExists
	case errors.Is(err, engine.ErrUnsupported):
		code = codes.Unimplemented
	case errors.Is(err, engine.ErrRejected):
		code = codes.FailedPrecondition
	case errors.Is(err, engine.ErrExhausted):
		code = codes.ResourceExhausted
	}
	return status.Error(code, err.Error())
}

// Tickets: handle "\x00" sql. A query's ticket has no handle and the SQL
// its DoGet runs; a statement that changed something ran at GetFlightInfo,
// and its ticket has the handle of its parked result and no SQL, so that it
// never runs again.
func encodeTicket(handle, sql string) ([]byte, error) {
	return flightsql.CreateStatementQueryTicket([]byte(handle + "\x00" + sql))
}

func decodeTicket(b []byte) (handle, sql string) {
	h, q, _ := strings.Cut(string(b), "\x00")
	return h, q
}

var affectedSchema = arrow.NewSchema([]arrow.Field{{Name: "rows_affected", Type: arrow.PrimitiveTypes.Int64}}, nil)

// affectedReader is the one-row result of a statement that changed things.
func (s *Server) affectedReader(n int64) array.RecordReader {
	b := array.NewRecordBuilder(s.Alloc, affectedSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(n)
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(affectedSchema, []arrow.RecordBatch{rec})
	return r
}

// flightInfo describes sql for a DoGet. A query does not run here: the
// engine describes its result (Prepare) and the DoGet runs and streams it,
// so nothing waits between the two calls. A statement that changes things
// runs here, exactly once; its row count waits for the DoGet.
func (s *Server) flightInfo(ctx context.Context, sql string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if err := s.checkSQL(sql); err != nil {
		return nil, err
	}
	qctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	p, err := s.eng.Prepare(qctx, sql)
	if err != nil {
		s.lg.Debug("statement failed", "sql", sql, "err", err)
		return nil, s.statementStatus(qctx, err)
	}
	if !p.Update && p.DatasetSchema != nil {
		return s.queryInfo(sql, p.DatasetSchema, desc)
	}
	n, err := s.execUpdate(qctx, sql)
	if err != nil {
		return nil, err
	}
	h := newHandle()
	tkt, err := encodeTicket(h, "")
	if err != nil {
		return nil, err
	}
	s.park(h, n)
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(affectedSchema, s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     1,
		TotalBytes:       -1,
	}, nil
}

// queryInfo is the FlightInfo of a query whose DoGet runs sql.
func (s *Server) queryInfo(sql string, sc *arrow.Schema, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	tkt, err := encodeTicket("", sql)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sc, s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// park keeps a row count for its DoGet; at MaxPending the oldest is
// dropped. The janitor drops those older than ResultTTL.
func (s *Server) park(h string, n int64) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= s.opts.MaxPending {
		var oldestKey string
		var oldest uint64
		for k, p := range s.pending {
			if oldestKey == "" || p.seq < oldest {
				oldestKey, oldest = k, p.seq
			}
		}
		delete(s.pending, oldestKey)
		s.lg.Debug("dropped an unfetched result: too many wait (--max-pending-results)", "max", s.opts.MaxPending)
	}
	s.parked++
	s.pending[h] = &pendingResult{affected: n, expires: now.Add(s.opts.ResultTTL), seq: s.parked}
}

// take removes and returns the parked result h.
func (s *Server) take(h string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[h]
	if p == nil {
		return 0, false
	}
	delete(s.pending, h)
	return p.affected, true
}

// GetFlightInfoStatement describes a query, or runs a statement that
// changes things.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(ctx, cmd.GetQuery(), desc)
}

// GetSchemaStatement describes the statement without running it.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if err := s.checkSQL(cmd.GetQuery()); err != nil {
		return nil, err
	}
	p, err := s.prepare(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	sc := p.DatasetSchema
	if sc == nil {
		sc = affectedSchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sc, s.Alloc)}, nil
}

// DoGetStatement runs a query's ticket and streams the rows, or returns a
// parked row count once.
func (s *Server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	h, sql := decodeTicket(tkt.GetStatementHandle())
	if h != "" {
		n, ok := s.take(h)
		if !ok {
			return nil, nil, status.Errorf(codes.NotFound, "flightd: the statement's result was already fetched or expired (results wait %s, --result-ttl); the statement is not run again", s.opts.ResultTTL)
		}
		return s.stream(context.Background(), func() {}, s.affectedReader(n))
	}
	if sql == "" {
		return nil, nil, status.Error(codes.NotFound, "flightd: unknown or expired ticket")
	}
	return s.runStream(ctx, sql)
}

// runStream runs sql and streams its rows; the statement keeps its slot
// and its timeout until the stream ends.
func (s *Server) runStream(ctx context.Context, sql string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if err := s.checkSQL(sql); err != nil {
		return nil, nil, err
	}
	qctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	streaming := false
	defer func() {
		if !streaming {
			done() // also when Execute panics
		}
	}()
	res, err := s.eng.Execute(qctx, sql)
	if err != nil {
		s.lg.Debug("statement failed", "sql", sql, "err", err)
		return nil, nil, s.statementStatus(qctx, err)
	}
	r := res.Reader
	if r == nil {
		r = s.affectedReader(res.Affected)
	}
	streaming = true
	return s.stream(qctx, done, r)
}

// stream sends r's batches until it ends, fails or qctx ends; then it
// releases r and calls done.
func (s *Server) stream(qctx context.Context, done func(), r array.RecordReader) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk, 2)
	go func() {
		defer close(ch)
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					s.lg.Error("panic while streaming a result", "panic", p)
					err = status.Errorf(codes.Internal, "flightd: internal error while streaming: %v", p)
				}
			}()
			for r.Next() {
				rec := r.RecordBatch()
				rec.Retain()
				select {
				case ch <- flight.StreamChunk{Data: rec}:
				case <-qctx.Done():
					rec.Release()
					err = qctx.Err()
					return
				}
			}
			err = r.Err()
		}()
		r.Release()
		if err != nil {
			// Judged before done ends qctx, which would make any error
			// read as cancelled.
			err = s.statementStatus(qctx, err)
		}
		done()
		if err != nil {
			// The DoGet reads the channel to its end, so this never blocks
			// for good.
			ch <- flight.StreamChunk{Err: err}
		}
	}()
	return r.Schema(), ch, nil
}

// DoPutCommandStatementUpdate runs DDL and INSERT.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	return s.update(ctx, cmd.GetQuery())
}

// update runs one statement as an update, under a slot and the timeout.
func (s *Server) update(ctx context.Context, sql string) (int64, error) {
	if err := s.checkSQL(sql); err != nil {
		return 0, err
	}
	qctx, done, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	return s.execUpdate(qctx, sql)
}

// execUpdate runs sql under qctx (from begin) and returns the rows it
// wrote; a query run as an update returns the rows it produced.
func (s *Server) execUpdate(qctx context.Context, sql string) (int64, error) {
	res, err := s.eng.Execute(qctx, sql)
	if err != nil {
		s.lg.Debug("statement failed", "sql", sql, "err", err)
		return 0, s.statementStatus(qctx, err)
	}
	if res.Reader != nil {
		var n int64
		for res.Reader.Next() {
			n += res.Reader.RecordBatch().NumRows()
		}
		err := res.Reader.Err()
		res.Reader.Release()
		return n, s.statementStatus(qctx, err)
	}
	return res.Affected, nil
}
