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

// Options configure the server.
type Options struct {
	Name      string // reported as FLIGHT_SQL_SERVER_NAME
	Version   string
	Logger    *slog.Logger
	Allocator memory.Allocator
	// ResultTTL is how long a statement's result waits for its DoGet.
	ResultTTL time.Duration
	// MaxPending bounds results waiting for DoGet; the oldest is dropped.
	MaxPending int
}

// Server implements flightsql.Server.
type Server struct {
	flightsql.BaseServer
	eng  engine.Engine
	opts Options
	lg   *slog.Logger

	mu       sync.Mutex
	pending  map[string]*pendingResult
	prepared map[string]*preparedStmt
}

type pendingResult struct {
	reader  array.RecordReader
	expires time.Time
}

type preparedStmt struct {
	sql      string
	prep     engine.Prepared
	lastUsed time.Time
	// bound is what the parameter values bound last make of sql
	// (engine.BindParams); nil until values are bound.
	bound []string
}

// New returns a server over eng.
func New(eng engine.Engine, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.ResultTTL <= 0 {
		opts.ResultTTL = 5 * time.Minute
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 1024
	}
	if opts.Name == "" {
		opts.Name = "flightd"
	}
	s := &Server{eng: eng, opts: opts, lg: opts.Logger, pending: map[string]*pendingResult{}, prepared: map[string]*preparedStmt{}}
	s.Alloc = opts.Allocator
	if err := s.registerSqlInfo(); err != nil {
		return nil, err
	}
	return s, nil
}

// FlightServer wraps s for registration with a flight.Server.
func (s *Server) FlightServer() flight.FlightServer { return flightsql.NewFlightServer(s) }

// Close releases results that were never fetched.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.pending {
		p.reader.Release()
		delete(s.pending, k)
	}
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

// ticket layout: handle "\x00" sql.
func encodeTicket(handle, sql string) ([]byte, error) {
	return flightsql.CreateStatementQueryTicket([]byte(handle + "\x00" + sql))
}

func decodeTicket(b []byte) (handle, sql string) {
	h, q, _ := strings.Cut(string(b), "\x00")
	return h, q
}

var affectedSchema = arrow.NewSchema([]arrow.Field{{Name: "rows_affected", Type: arrow.PrimitiveTypes.Int64}}, nil)

// run executes sql and returns a reader for its rows: a query's result, or
// one row with rows_affected for anything else.
func (s *Server) run(ctx context.Context, sql string) (array.RecordReader, error) {
	res, err := s.eng.Execute(ctx, sql)
	if err != nil {
		s.lg.Debug("statement failed", "sql", sql, "err", err)
		return nil, toStatus(err)
	}
	if res.Reader != nil {
		return res.Reader, nil
	}
	b := array.NewRecordBuilder(s.Alloc, affectedSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(res.Affected)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(affectedSchema, []arrow.RecordBatch{rec})
}

func (s *Server) flightInfo(ctx context.Context, sql string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	// The result outlives this call (it waits for DoGet), so it runs under a
	// context of its own: cancelled if this call is cancelled while the
	// statement runs, and when the result is released.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	r, err := s.run(rctx, sql)
	stop()
	if err != nil {
		cancel()
		return nil, err
	}
	r = &cancelOnRelease{RecordReader: r, cancel: cancel}
	h := newHandle()
	tkt, err := encodeTicket(h, sql)
	if err != nil {
		r.Release()
		return nil, err
	}
	s.park(h, r)
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(r.Schema(), s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// park keeps r for its DoGet, evicting expired and excess results.
func (s *Server) park(h string, r array.RecordReader) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldestKey string
	var oldest time.Time
	for k, p := range s.pending {
		if now.After(p.expires) {
			p.reader.Release()
			delete(s.pending, k)
			continue
		}
		if oldestKey == "" || p.expires.Before(oldest) {
			oldestKey, oldest = k, p.expires
		}
	}
	if len(s.pending) >= s.opts.MaxPending && oldestKey != "" {
		s.pending[oldestKey].reader.Release()
		delete(s.pending, oldestKey)
	}
	s.pending[h] = &pendingResult{reader: r, expires: now.Add(s.opts.ResultTTL)}
}

func (s *Server) take(h string) array.RecordReader {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[h]
	if p == nil {
		return nil
	}
	delete(s.pending, h)
	return p.reader
}

func (s *Server) stream(ctx context.Context, r array.RecordReader) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk, 2)
	go flight.StreamChunksFromReader(ctx, r, ch) // releases r when done
	return r.Schema(), ch, nil
}

// GetFlightInfoStatement runs the statement.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(ctx, cmd.GetQuery(), desc)
}

// GetSchemaStatement describes the statement without keeping its result.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := s.eng.Prepare(ctx, cmd.GetQuery())
	if err != nil {
		return nil, toStatus(err)
	}
	sc := p.DatasetSchema
	if sc == nil {
		sc = affectedSchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sc, s.Alloc)}, nil
}

// DoGetStatement streams a parked result, or runs the ticket's SQL again.
func (s *Server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	h, sql := decodeTicket(tkt.GetStatementHandle())
	if r := s.take(h); r != nil {
		return s.stream(ctx, r)
	}
	if sql == "" {
		return nil, nil, status.Error(codes.NotFound, "flightd: unknown or expired ticket")
	}
	r, err := s.run(ctx, sql)
	if err != nil {
		return nil, nil, err
	}
	return s.stream(ctx, r)
}

// DoPutCommandStatementUpdate runs DDL and INSERT.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	return s.update(ctx, cmd.GetQuery())
}

func (s *Server) update(ctx context.Context, sql string) (int64, error) {
	res, err := s.eng.Execute(ctx, sql)
	if err != nil {
		return 0, toStatus(err)
	}
	if res.Reader != nil {
		// A query run as an update: count its rows.
		var n int64
		for res.Reader.Next() {
			n += res.Reader.RecordBatch().NumRows()
		}
		err := res.Reader.Err()
		res.Reader.Release()
		return n, toStatus(err)
	}
	return res.Affected, nil
}

// cancelOnRelease cancels the context a parked result runs under once the
// result is released.
type cancelOnRelease struct {
	array.RecordReader
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cancelOnRelease) Release() {
	c.RecordReader.Release()
	c.once.Do(c.cancel)
}
