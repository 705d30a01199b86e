package flightsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/internal/arrowutil"
)

// CreatePreparedStatement describes the statement; queries get their schema.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var none flightsql.ActionCreatePreparedStatementResult
	sql := req.GetQuery()
	if err := s.checkSQL(sql); err != nil {
		return none, err
	}
	if err := s.roomToPrepare(); err != nil {
		return none, err
	}
	ctx = inSession(ctx)
	st := s.eng.Analyze(sql)
	p, err := s.prepare(ctx, st)
	if err != nil {
		return none, err
	}
	if st.Kind() == engine.KindSession {
		// USE answers its one-row result, as any statement run through
		// GetFlightInfo does, so that clients run it with GetFlightInfo:
		// the new session reaches them in that call's response headers,
		// which Go's Flight client never reads from an update's DoPut.
		p.Update, p.DatasetSchema = false, affectedSchema
	}
	h := newHandle()
	s.mu.Lock()
	if len(s.prepared) >= s.opts.MaxPrepared {
		s.mu.Unlock()
		return none, s.tooManyPrepared()
	}
	s.prepared[h] = &preparedStmt{st: st, db: engine.Database(ctx), streaming: engine.Streaming(ctx), prep: p, lastUsed: s.opts.Now()}
	s.mu.Unlock()
	update := p.Update
	res := flightsql.ActionCreatePreparedStatementResult{Handle: []byte(h), IsUpdate: &update}
	if !update {
		res.DatasetSchema = p.DatasetSchema
	}
	res.ParameterSchema = p.Parameters
	return res, nil
}

// prepare describes st under a slot and the statement timeout.
func (s *Server) prepare(ctx context.Context, st engine.Statement) (engine.Prepared, error) {
	qctx, done, err := s.begin(ctx, describing(st.SQL()))
	if err != nil {
		return engine.Prepared{}, err
	}
	defer done()
	p, err := s.eng.Prepare(qctx, st)
	p.DatasetSchema = resultSchema(p.DatasetSchema)
	return p, s.statementStatus(qctx, err)
}

// roomToPrepare refuses a new prepared statement while MaxPrepared are
// open (after dropping those idle past PreparedTTL).
func (s *Server) roomToPrepare() error {
	s.mu.Lock()
	full := len(s.prepared) >= s.opts.MaxPrepared
	s.mu.Unlock()
	if !full {
		return nil
	}
	s.sweep()
	s.mu.Lock()
	full = len(s.prepared) >= s.opts.MaxPrepared
	s.mu.Unlock()
	if full {
		return s.tooManyPrepared()
	}
	return nil
}

func (s *Server) tooManyPrepared() error {
	return status.Errorf(codes.ResourceExhausted, "flightd: %d prepared statements are open, the most this server keeps (--max-prepared); close prepared statements when done with them (idle ones expire after %s, --prepared-idle-timeout)", s.opts.MaxPrepared, s.opts.PreparedTTL)
}

// ClosePreparedStatement forgets the handle; unknown handles are fine.
func (s *Server) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	s.mu.Lock()
	delete(s.prepared, string(req.GetPreparedStatementHandle()))
	s.mu.Unlock()
	return nil
}

func (s *Server) preparedSQL(handle []byte) (*preparedStmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.prepared[string(handle)]
	if ps == nil {
		return nil, status.Error(codes.InvalidArgument, "flightd: unknown or expired prepared statement handle (a handle is valid only on the node that prepared it, until it is closed or idle past --prepared-idle-timeout); prepare the statement again")
	}
	ps.lastUsed = s.opts.Now()
	return ps, nil
}

// GetFlightInfoPreparedStatement runs the prepared statement with the
// parameter values bound last.
// A query without parameters is described by what was found at prepare
// time; with parameters, its text with the values bound is described again.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	sql, err := s.boundQuery(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	if sql != ps.st.SQL() {
		// bound: its text enters here
		return s.flightInfo(ps.in(ctx), sql, nil, desc, true)
	}
	if !ps.prep.Update && ps.prep.DatasetSchema != nil && ps.st.Kind() == engine.KindQuery {
		qctx, done, err := s.begin(ps.in(ctx), describing(sql))
		if err != nil {
			return nil, err
		}
		defer done()
		return s.queryInfo(qctx, sql, ps.st, true, ps.prep.DatasetSchema, desc)
	}
	return s.flightInfo(ps.in(ctx), sql, ps.st, desc, true)
}

// GetSchemaPreparedStatement returns the schema found at prepare time.
func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	var sc *arrow.Schema = ps.prep.DatasetSchema
	if sc == nil {
		sc = affectedSchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sc, s.Alloc)}, nil
}

// DoGetPreparedStatement runs the prepared statement and streams it (for
// clients that DoGet with the command itself as the ticket).
func (s *Server) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	sql, err := s.boundQuery(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	return s.runStream(ps.in(ctx), "", sql)
}

// DoPutPreparedStatementQuery binds parameter values (one column per
// placeholder, in order) for the next executions of the statement through
// this handle. With several rows, an execution runs the query once per row
// and returns the results one after another.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, w flight.MetadataWriter) ([]byte, error) {
	h := cmd.GetPreparedStatementHandle()
	ps, err := s.preparedSQL(h)
	if err != nil {
		return nil, err
	}
	params, err := readParams(r, s.opts.MaxParamBytes)
	if err != nil {
		return nil, err
	}
	if params == nil {
		return h, nil
	}
	defer params.Release()
	stmts, err := s.eng.Bind(ps.st, params)
	if err != nil {
		return nil, toStatus(err)
	}
	size := 0
	for _, st := range stmts {
		size += len(st)
	}
	if size > s.opts.MaxStatementBytes {
		return nil, status.Errorf(codes.InvalidArgument, "flightd: the statement with its parameter values bound is %d bytes, more than the %d bytes this server accepts (--max-statement-bytes)", size, s.opts.MaxStatementBytes)
	}
	s.mu.Lock()
	ps.bound = stmts
	s.mu.Unlock()
	return h, nil
}

// DoPutPreparedStatementUpdate runs a prepared DDL or INSERT for all the
// parameter rows it is sent and returns the rows written. An INSERT whose
// VALUES row is all placeholders writes them as one batch
// (engine.InsertParams); other statements run as engine.Bind renders
// them: one statement for an INSERT ... VALUES row, else one per row, and
// an error after some of those ran says how many rows they wrote.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, r flight.MessageReader) (int64, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	ctx = ps.in(ctx)
	params, err := readParams(r, s.opts.MaxParamBytes)
	if err != nil {
		return 0, err
	}
	if params == nil {
		if ps.params() > 0 {
			return 0, unbound(ps)
		}
		return s.update(ctx, ps.st)
	}
	defer params.Release()
	// Rows of parameter values: a batch load, long work.
	qctx, done, err := s.begin(ctx, work{sql: ps.st.SQL(), kind: "update", lane: admit.Long})
	if err != nil {
		return 0, err
	}
	defer done()
	n, ok, err := s.eng.InsertParams(qctx, ps.st, params)
	if err != nil {
		return n, s.statementStatus(qctx, err)
	}
	if ok {
		return n, nil
	}
	stmts, err := s.eng.Bind(ps.st, params)
	if err != nil {
		return 0, toStatus(err)
	}
	var total int64
	for i, sql := range stmts {
		n, err := s.execUpdate(qctx, s.eng.Analyze(sql))
		if err != nil {
			if i > 0 {
				st := status.Convert(err)
				return total, status.Errorf(st.Code(), "%s (after %d of %d parameter rows had run and written %d rows)", st.Message(), i, len(stmts), total)
			}
			return total, err
		}
		total += n
	}
	return total, nil
}

// boundQuery is the statement a prepared query runs: its SQL with the
// values bound last.
func (s *Server) boundQuery(handle []byte) (string, error) {
	ps, err := s.preparedSQL(handle)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	bound := ps.bound
	s.mu.Unlock()
	switch {
	case bound == nil && ps.params() > 0:
		return "", unbound(ps)
	case bound == nil:
		return ps.st.SQL(), nil
	}
	// Several rows of values: the query runs once per row and the results
	// follow each other (the Flight SQL spec). NUL separates them, which no
	// statement holds (the engine refuses it).
	return strings.Join(bound, "\x00"), nil
}

// in is ctx under which the statement resolves names as it was prepared.
func (ps *preparedStmt) in(ctx context.Context) context.Context {
	return engine.WithStreaming(engine.WithDatabase(ctx, ps.db), ps.streaming)
}

// params is how many parameters the statement takes.
func (ps *preparedStmt) params() int {
	if ps.prep.Parameters == nil {
		return 0
	}
	return ps.prep.Parameters.NumFields()
}

func unbound(ps *preparedStmt) error {
	return status.Errorf(codes.InvalidArgument, "flightd: the statement has %d parameter(s) and no values are bound", ps.params())
}

// readParams reads the parameter batches a DoPut carries as one batch; nil
// when it carries none. More than limit bytes of values is InvalidArgument.
func readParams(r flight.MessageReader, limit int64) (arrow.RecordBatch, error) {
	if r == nil {
		return nil, nil
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	var size int64
	for r.Next() {
		rec := r.RecordBatch()
		if size += util.TotalRecordSize(rec); size > limit {
			return nil, status.Errorf(codes.InvalidArgument, "flightd: parameter values: more than %d bytes in one call (--max-message-bytes); bind fewer rows at a time", limit)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "flightd: read parameter values: %v", err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	for _, rec := range recs[1:] {
		if !rec.Schema().Equal(recs[0].Schema()) {
			return nil, status.Errorf(codes.InvalidArgument, "flightd: parameter batches: the batches' schemas differ: %s and %s", recs[0].Schema(), rec.Schema())
		}
	}
	out, err := arrowutil.ConcatRecords(recs, memory.DefaultAllocator)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "flightd: parameter batches: %v", err)
	}
	return out, nil
}

// rowsReader streams the results of a query run once per row of bound
// values, one after the other: the first row's reader, then each next
// statement's, run when the one before has ended. Every row's result must
// have the first's column types.
type rowsReader struct {
	array.RecordReader // the current row's result
	ctx                context.Context
	eng                engine.Engine
	rest               []engine.Statement // the statements of the rows still to run
	row                int                // the current row, from 0
	err                error
}

func (r *rowsReader) Next() bool {
	for r.err == nil {
		if r.RecordReader.Next() {
			return true
		}
		if r.err = r.RecordReader.Err(); r.err != nil || len(r.rest) == 0 {
			return false
		}
		res, err := r.eng.Execute(r.ctx, r.rest[0])
		if err != nil {
			r.err = fmt.Errorf("parameter row %d: %w", r.row+2, err)
			return false
		}
		if res.Reader == nil {
			r.err = fmt.Errorf("%w: parameter row %d: not a query", engine.ErrInvalid, r.row+2)
			return false
		}
		if err := sameColumns(r.RecordReader.Schema(), res.Reader.Schema()); err != nil {
			res.Reader.Release()
			r.err = fmt.Errorf("%w: parameter row %d: %w", engine.ErrInvalid, r.row+2, err)
			return false
		}
		r.RecordReader.Release()
		r.RecordReader, r.rest, r.row = res.Reader, r.rest[1:], r.row+1
	}
	return false
}

func (r *rowsReader) Schema() *arrow.Schema { return r.RecordReader.Schema() }

func (r *rowsReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.RecordReader.Err()
}

// sameColumns says how next's columns differ from first's, if they do.
func sameColumns(first, next *arrow.Schema) error {
	if first.NumFields() != next.NumFields() {
		return fmt.Errorf("the result has %d columns where the first row's had %d", next.NumFields(), first.NumFields())
	}
	for i, f := range first.Fields() {
		if g := next.Field(i); !arrow.TypeEqual(f.Type, g.Type) {
			return fmt.Errorf("column %d (%s) is %s where the first row's was %s; CAST the parameter in the statement", i+1, g.Name, g.Type, f.Type)
		}
	}
	return nil
}
