package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/internal/background"
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
	// MaxConcurrent caps statements running at once in each admission lane
	// (preparing, running, streaming to a DoGet); more wait in a queue of
	// at most MaxQueued for at most QueueTimeout (package internal/admit).
	// Admission, when set, is the controller to use instead (cmd/flightd
	// shares it with the engine's sys.statements).
	MaxConcurrent int
	MaxQueued     int
	QueueTimeout  time.Duration
	Admission     *admit.Controller
	// MaxPrepared caps open prepared statements; more get
	// ResourceExhausted. PreparedTTL expires those idle this long.
	MaxPrepared int
	PreparedTTL time.Duration
	// MaxBatchBytes bounds the Arrow data of one result message: larger
	// batches are sent as slices of at most this size (a single row larger
	// than it goes alone).
	MaxBatchBytes int64
	// MaxStatementBytes bounds SQL text; longer is InvalidArgument.
	MaxStatementBytes int
	// MaxParamBytes bounds the parameter values one DoPut binds.
	MaxParamBytes int64
	// MaxEndpoints bounds the endpoints of one query's FlightInfo: the
	// parts of a large scan that clients fetch in parallel (engine.Partition).
	// 0 or 1: one endpoint always.
	MaxEndpoints int
	// MaxStreams caps the streaming reads open at once (DefaultMaxStreams);
	// they run until the client ends them, outside MaxConcurrent and
	// QueryTimeout.
	MaxStreams int
	// Nodes, when set, lists the nodes of the cluster this server is one
	// of (this one marked Self): each endpoint of a result of several
	// names one of them, with LocationReuseConnection, so that clients
	// fetch the parts from several nodes (nodes.go). nil: no locations, as
	// a single server.
	Nodes func() []Node
	// NodeFresh: a node whose heartbeat is older is not named
	// (DefaultNodeFresh).
	NodeFresh time.Duration
	// Now is the clock expiry reads (tests); default time.Now.
	Now func() time.Time

	// onSweep, when set, is called after each sweep of the janitor with
	// how many prepared statements it expired (tests).
	onSweep func(prepared int)
	// janitorEvery, when set, is how often the janitor sweeps (tests).
	janitorEvery time.Duration
	// onRelease, when set, is called after memory was returned to the
	// system because the long lane went idle (tests).
	onRelease func()
}

// Server implements flightsql.Server.
type Server struct {
	flightsql.BaseServer
	eng  engine.Engine
	opts Options
	lg   *slog.Logger

	admit   *admit.Controller // slots and queues of statements
	streams chan struct{}     // one per open streaming read
	stop    chan struct{}     // closed by Close: stops the janitor
	once    sync.Once

	mu       sync.Mutex
	prepared map[string]*preparedStmt
	// releasing and released: a return of memory runs, and when the last
	// ended (afterLong).
	releasing bool
	released  time.Time

	running runningSet // DoGets streaming, for CancelFlightInfo

	rr atomic.Uint64 // queries given locations: where the next one starts
}

type preparedStmt struct {
	st        engine.Statement // as the engine read it when it was prepared
	db        string           // the session's database when it was prepared
	streaming bool             // whether the session streamed when it was prepared
	prep      engine.Prepared
	lastUsed  time.Time
	// bound is what the parameter values bound last make of the
	// statement (engine.Bind); nil until values are bound.
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
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = DefaultMaxBatchBytes
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
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
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
	if opts.NodeFresh <= 0 {
		opts.NodeFresh = DefaultNodeFresh
	}
	if opts.Name == "" {
		opts.Name = "flightd"
	}
	s := &Server{
		eng: eng, opts: opts, lg: opts.Logger,
		admit: opts.Admission, streams: make(chan struct{}, opts.MaxStreams), stop: make(chan struct{}),
		prepared: map[string]*preparedStmt{},
	}
	if s.admit == nil {
		s.admit = admit.New(admit.Options{ShortSlots: opts.MaxConcurrent, LongSlots: opts.MaxConcurrent, MaxQueued: opts.MaxQueued, QueueTimeout: opts.QueueTimeout})
	}
	s.Alloc = opts.Allocator
	if err := s.registerSqlInfo(); err != nil {
		return nil, err
	}
	every := opts.janitorEvery
	if every <= 0 {
		every = janitorInterval(opts.PreparedTTL)
	}
	go s.janitor(every)
	return s, nil
}

// FlightServer wraps s for registration with a flight.Server.
func (s *Server) FlightServer() flight.FlightServer {
	return actionsServer{flightsql.NewFlightServer(s)}
}

// actionsServer is the Flight SQL service with ListActions naming only the
// actions flightd answers: the framework's list also names transactions,
// savepoints, Substrait plans and endpoint renewal, which answer
// Unimplemented here.
type actionsServer struct{ flight.FlightServer }

var servedActions = []*flight.ActionType{
	{Type: flightsql.CreatePreparedStatementActionType, Description: "prepare a statement"},
	{Type: flightsql.ClosePreparedStatementActionType, Description: "release a prepared statement"},
	{Type: flight.CancelFlightInfoActionType, Description: "stop the running DoGets of a FlightInfo's tickets"},
	{Type: flightsql.CancelQueryActionType, Description: "CancelFlightInfo, as Flight SQL clients before 13 ask for it"},
	{Type: flight.SetSessionOptionsActionType, Description: "set the session's schema (its current database); catalog is always empty"},
	{Type: flight.GetSessionOptionsActionType, Description: "the session's catalog and schema"},
	{Type: flight.CloseSessionActionType, Description: "return the session to the default database"},
}

func (a actionsServer) ListActions(_ *flight.Empty, st flight.FlightService_ListActionsServer) error {
	for _, t := range servedActions {
		if err := st.Send(t); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the background expiry and drops what waits.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	s.mu.Lock()
	defer s.mu.Unlock()
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
	case errors.Is(err, engine.ErrUnavailable):
		// Before the context cases: a server that did not answer within
		// flightd's own bound wraps a deadline of its own.
		code = codes.Unavailable
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

// ticket is what a DoGet is given. A query's ticket has no handle, the
// database its session resolves unqualified names in, and the SQL the DoGet
// runs: it is self-contained, so any connection, to any node of a cluster,
// may fetch it. A statement
// that changed something ran at GetFlightInfo; its ticket has no SQL and the
// handle "=" followed by the rows it affected, so that every fetch of it
// returns that count, for as long as the client keeps the ticket, and
// nothing ever runs it again.
//
// A query planned as parts (engine.Partition) has a ticket per part, each
// naming its part. A streaming read (a session with the option streaming)
// has the part streamPart.
//
// Encoded: handle NUL db NUL part NUL sql (none but sql holds a NUL).
type ticket struct {
	handle, db, part, sql string
}

// streamPart is the part of a streaming read's ticket.
const streamPart = "stream"

func encodeTicket(t ticket) ([]byte, error) {
	if strings.Contains(t.handle, "\x00") || strings.Contains(t.db, "\x00") || strings.Contains(t.part, "\x00") {
		return nil, status.Error(codes.Internal, "flightd: a ticket's handle, database or part holds a NUL")
	}
	return flightsql.CreateStatementQueryTicket([]byte(t.handle + "\x00" + t.db + "\x00" + t.part + "\x00" + t.sql))
}

func decodeTicket(b []byte) ticket {
	var t ticket
	var rest string
	t.handle, rest, _ = strings.Cut(string(b), "\x00")
	t.db, rest, _ = strings.Cut(rest, "\x00")
	t.part, t.sql, _ = strings.Cut(rest, "\x00")
	return t
}

// doneHandle is the handle of the ticket of a statement that ran and
// affected n rows.
func doneHandle(n int64) string { return "=" + strconv.FormatInt(n, 10) }

// parseDoneHandle is the row count of a doneHandle.
func parseDoneHandle(h string) (int64, bool) {
	d, ok := strings.CutPrefix(h, "=")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(d, 10, 64)
	return n, err == nil
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
// runs here, exactly once; its ticket carries its row count.
//
// With rows, sql may be a query bound with several rows of parameter
// values, its statements separated by NUL (boundQuery); client text never
// is: the engine refuses a NUL in it. st is the engine's reading of sql's
// first statement when the caller has it (a prepared statement's), nil
// to read it here: each statement is read once where it enters.
func (s *Server) flightInfo(ctx context.Context, sql string, st engine.Statement, desc *flight.FlightDescriptor, rows bool) (*flight.FlightInfo, error) {
	if err := s.checkSQL(sql); err != nil {
		return nil, err
	}
	first, several := sql, false
	if rows {
		first, _, several = strings.Cut(sql, "\x00")
	}
	if st == nil {
		st = s.eng.Analyze(first)
	}
	query := st.Kind() == engine.KindQuery
	// A query is only described here (short work); anything else runs
	// here, in the lane its cost asks for.
	w := describing(first)
	if !query {
		w = s.toRun(ctx, st, "update")
	}
	qctx, done, err := s.begin(ctx, w)
	if err != nil {
		return nil, err
	}
	defer done()
	p, err := s.eng.Prepare(qctx, st)
	if err != nil {
		s.lg.Debug("statement failed", "sql", first, "err", err)
		return nil, s.statementStatus(qctx, err)
	}
	if !p.Update && p.DatasetSchema != nil && query {
		return s.queryInfo(qctx, sql, st, !several, resultSchema(p.DatasetSchema), desc)
	}
	if several {
		return nil, status.Error(codes.InvalidArgument, "flightd: several rows of parameter values are bound to a statement that is not a query; run it as an update (ExecuteUpdate), which runs every row")
	}
	n, err := s.execUpdate(qctx, st)
	if err != nil {
		return nil, err
	}
	tkt, err := encodeTicket(ticket{handle: doneHandle(n)})
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(affectedSchema, s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     1,
		TotalBytes:       8, // one int64
	}, nil
}

// errRunsOnce refuses to run a statement with effects from a DoGet.
func errRunsOnce() error {
	return status.Error(codes.FailedPrecondition, "flightd: this ticket names a statement that changes things; such statements run once, when GetFlightInfo plans them or through a DoPut (ExecuteUpdate), and a DoGet never runs them again")
}

// queryInfo is the FlightInfo of a query whose DoGets run sql in the
// database of ctx's session; st is the engine's reading of sql's first
// statement. With split, a large scan is planned as parts
// (engine.Partition), an endpoint each, which clients fetch in parallel,
// in a cluster from several nodes (locations); other queries have one
// endpoint. The row count is there when the engine knows it before the
// query runs.
func (s *Server) queryInfo(ctx context.Context, sql string, st engine.Statement, split bool, sc *arrow.Schema, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	parts, rows := []string{""}, int64(-1)
	if engine.Streaming(ctx) {
		parts = []string{streamPart}
	} else if split && s.opts.MaxEndpoints > 1 {
		ps, n, err := s.eng.Partition(ctx, st, s.opts.MaxEndpoints)
		if err != nil {
			return nil, s.statementStatus(ctx, err)
		}
		if len(ps) > 1 {
			parts = ps
		}
		rows = n
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sc, s.Alloc),
		FlightDescriptor: desc,
		TotalRecords:     rows,
		TotalBytes:       -1,
	}
	locations := s.locations(len(parts))
	for i, p := range parts {
		tkt, err := encodeTicket(ticket{db: engine.Database(ctx), part: p, sql: sql})
		if err != nil {
			return nil, err
		}
		ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tkt}}
		if locations != nil {
			ep.Location = locations[i]
		}
		info.Endpoint = append(info.Endpoint, ep)
	}
	return info, nil
}

// GetFlightInfoStatement describes a query, or runs a statement that
// changes things.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(inSession(ctx), cmd.GetQuery(), nil, desc, false)
}

// GetSchemaStatement describes the statement without running it.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if err := s.checkSQL(cmd.GetQuery()); err != nil {
		return nil, err
	}
	p, err := s.prepare(inSession(ctx), s.eng.Analyze(cmd.GetQuery()))
	if err != nil {
		return nil, err
	}
	sc := p.DatasetSchema
	if sc == nil {
		sc = affectedSchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sc, s.Alloc)}, nil
}

// DoGetStatement runs a query's ticket and streams the rows, or returns
// the row count a statement that changed things carries in its ticket.
// A query's ticket fetched again runs the query again: it reads the tables
// as they are at that DoGet.
func (s *Server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	t := decodeTicket(tkt.GetStatementHandle())
	if t.handle != "" {
		n, ok := parseDoneHandle(t.handle)
		if !ok || t.sql != "" {
			return nil, nil, status.Error(codes.NotFound, "flightd: unknown ticket (not one this server issued); the statement it came from is not run again")
		}
		return s.stream(context.Background(), func() {}, s.affectedReader(n))
	}
	if t.sql == "" {
		return nil, nil, status.Error(codes.NotFound, "flightd: unknown or expired ticket")
	}
	ctx = engine.WithDatabase(ctx, t.db)
	switch t.part {
	case "":
	case streamPart:
		ctx = engine.WithStreaming(ctx, true)
	default:
		ctx = engine.WithPart(ctx, t.part)
	}
	return s.runStream(ctx, string(tkt.GetStatementHandle()), t.sql)
}

// runStream runs the query sql and streams its rows; the statement keeps
// its slot and its timeout until the stream ends. A statement with effects
// is refused: a DoGet never runs one. While it streams, CancelFlightInfo
// of a FlightInfo holding the ticket whose statement handle is h stops it
// (h "": none).
func (s *Server) runStream(ctx context.Context, h, sql string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if err := s.checkSQL(sql); err != nil {
		return nil, nil, err
	}
	texts := strings.Split(sql, "\x00") // one per row of bound values
	stmts := make([]engine.Statement, len(texts))
	for i, text := range texts {
		if stmts[i] = s.eng.Analyze(text); stmts[i].Kind() != engine.KindQuery {
			return nil, nil, errRunsOnce()
		}
	}
	var qctx context.Context
	var done func()
	var err error
	if engine.Streaming(ctx) {
		qctx, done, err = s.beginStream(ctx)
	} else {
		// GetFlightInfo accepted the statement: its DoGet waits for a
		// slot but is never refused for capacity.
		w := s.toRun(ctx, stmts[0], "query")
		w.sql, w.accepted = sql, true
		qctx, done, err = s.begin(ctx, w)
	}
	if err != nil {
		return nil, nil, err
	}
	if h != "" {
		var cancel context.CancelCauseFunc
		qctx, cancel = context.WithCancelCause(qctx)
		unregister := s.running.add(h, cancel)
		end := done
		done = func() { unregister(); cancel(nil); end() }
	}
	streaming := false
	defer func() {
		if !streaming {
			done() // also when Execute panics
		}
	}()
	res, err := s.eng.Execute(qctx, stmts[0])
	if err != nil {
		s.lg.Debug("statement failed", "sql", texts[0], "err", err)
		return nil, nil, s.statementStatus(qctx, err)
	}
	r := res.Reader
	switch {
	case r == nil:
		r = s.affectedReader(res.Affected)
	case len(stmts) > 1:
		r = describeResult(&rowsReader{ctx: qctx, eng: s.eng, RecordReader: r, rest: stmts[1:]})
	default:
		r = describeResult(r)
	}
	streaming = true
	return s.stream(qctx, done, r)
}

// stream sends r's batches, each cut to at most MaxBatchBytes, until it
// ends, fails or qctx ends; then it releases r and calls done.
func (s *Server) stream(qctx context.Context, done func(), r array.RecordReader) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk, 2)
	go func() {
		defer close(ch)
		if background.LowPriority(qctx) {
			// A long statement's result is made (merged, converted, cut)
			// on a lowered thread: short work gets the cores first.
			background.LowerThread()
		}
		var err error
		func() {
			var parts []arrow.RecordBatch
			defer func() {
				for _, p := range parts {
					p.Release()
				}
				if p := recover(); p != nil {
					s.lg.Error("panic while streaming a result", "panic", p)
					err = status.Errorf(codes.Internal, "flightd: internal error while streaming: %v", p)
				}
			}()
			st := statementOf(qctx)
			for r.Next() {
				parts = splitBatch(r.RecordBatch(), s.opts.MaxBatchBytes)
				for len(parts) > 0 {
					select {
					case ch <- flight.StreamChunk{Data: parts[0]}:
						if st != nil {
							st.Sent(parts[0].NumRows())
						}
						parts = parts[1:]
					case <-qctx.Done():
						err = qctx.Err()
						return
					}
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
	if err := s.checkSQL(cmd.GetQuery()); err != nil {
		return 0, err
	}
	return s.update(inSession(ctx), s.eng.Analyze(cmd.GetQuery()))
}

// update runs one statement as an update, under a slot and the timeout.
func (s *Server) update(ctx context.Context, st engine.Statement) (int64, error) {
	if err := s.checkSQL(st.SQL()); err != nil {
		return 0, err
	}
	qctx, done, err := s.begin(ctx, s.toRun(ctx, st, "update"))
	if err != nil {
		return 0, err
	}
	defer done()
	return s.execUpdate(qctx, st)
}

// execUpdate runs st under qctx (from begin) and returns the rows it
// wrote; a query run as an update returns the rows it produced. A USE hands
// the client its new session.
func (s *Server) execUpdate(qctx context.Context, st engine.Statement) (int64, error) {
	res, err := s.eng.Execute(qctx, st)
	if err != nil {
		s.lg.Debug("statement failed", "sql", st.SQL(), "err", err)
		return 0, s.statementStatus(qctx, err)
	}
	if err := afterUse(qctx, res); err != nil {
		return 0, err
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
