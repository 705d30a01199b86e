package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// preparedTTL expires handles that clients never close (JDBC overwrites
// handles without closing them).
const preparedTTL = 30 * time.Minute

// CreatePreparedStatement describes the statement; queries get their schema.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	sql := req.GetQuery()
	p, err := s.eng.Prepare(ctx, sql)
	if err != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, toStatus(err)
	}
	h := newHandle()
	now := time.Now()
	s.mu.Lock()
	for k, ps := range s.prepared {
		if now.Sub(ps.lastUsed) > preparedTTL {
			delete(s.prepared, k)
		}
	}
	s.prepared[h] = &preparedStmt{sql: sql, prep: p, lastUsed: now}
	s.mu.Unlock()
	update := p.Update
	res := flightsql.ActionCreatePreparedStatementResult{Handle: []byte(h), IsUpdate: &update}
	if !update {
		res.DatasetSchema = p.DatasetSchema
	}
	res.ParameterSchema = p.Parameters
	return res, nil
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
		return nil, status.Error(codes.InvalidArgument, "flightd: unknown or expired prepared statement handle; prepare the statement again")
	}
	ps.lastUsed = time.Now()
	return ps, nil
}

// GetFlightInfoPreparedStatement runs the prepared statement with the
// parameter values bound last.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	sql, err := s.boundQuery(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return s.flightInfo(ctx, sql, desc)
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
	sql, err := s.boundQuery(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	r, err := s.run(ctx, sql)
	if err != nil {
		return nil, nil, err
	}
	return s.stream(ctx, r)
}

// DoPutPreparedStatementQuery binds parameter values (one column per
// placeholder, in order) for the next execution of the statement. A query
// takes one row of values.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, w flight.MetadataWriter) ([]byte, error) {
	h := cmd.GetPreparedStatementHandle()
	ps, err := s.preparedSQL(h)
	if err != nil {
		return nil, err
	}
	stmts, err := bindAll(ps.sql, r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	ps.bound = stmts
	s.mu.Unlock()
	return h, nil
}

// DoPutPreparedStatementUpdate runs a prepared DDL or INSERT, once for the
// statement's parameter rows (an INSERT ... VALUES row with placeholders
// writes all rows at once) and else once per row; it returns the rows
// written.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, r flight.MessageReader) (int64, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	var total int64
	got := false
	for r != nil && r.Next() {
		got = true
		rec := r.RecordBatch()
		n, ok, err := s.eng.InsertParams(ctx, ps.sql, rec)
		total += n
		if err != nil {
			return total, toStatus(err)
		}
		if ok {
			continue
		}
		stmts, err := engine.BindParams(ps.sql, rec)
		if err != nil {
			return total, toStatus(err)
		}
		for _, sql := range stmts {
			n, err := s.update(ctx, sql)
			if err != nil {
				return total, err
			}
			total += n
		}
	}
	if r != nil && r.Err() != nil {
		return total, status.Errorf(codes.InvalidArgument, "flightd: read parameter values: %v", r.Err())
	}
	if !got {
		if ps.prep.Parameters != nil && len(ps.prep.Parameters.Fields()) > 0 {
			return 0, unbound(ps)
		}
		return s.update(ctx, ps.sql)
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
	case bound == nil && ps.prep.Parameters != nil && len(ps.prep.Parameters.Fields()) > 0:
		return "", unbound(ps)
	case bound == nil:
		return ps.sql, nil
	case len(bound) != 1:
		return "", status.Errorf(codes.InvalidArgument, "flightd: a query runs with one row of parameter values, but %d rows are bound; execute it once per row, or bind many rows to an INSERT run as an update", len(bound))
	}
	return bound[0], nil
}

func unbound(ps *preparedStmt) error {
	return status.Errorf(codes.InvalidArgument, "flightd: the statement has %d parameter(s) and no values are bound", len(ps.prep.Parameters.Fields()))
}

// bindAll renders sql once per statement the parameter batches of r make
// (engine.BindParams); nil when r carries no batch.
func bindAll(sql string, r flight.MessageReader) ([]string, error) {
	if r == nil {
		return nil, nil
	}
	var stmts []string
	got := false
	for r.Next() {
		got = true
		b, err := engine.BindParams(sql, r.RecordBatch())
		if err != nil {
			return nil, toStatus(err)
		}
		stmts = append(stmts, b...)
	}
	if err := r.Err(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "flightd: read parameter values: %v", err)
	}
	if !got {
		return nil, nil
	}
	if stmts == nil {
		stmts = []string{} // zero rows bound: nothing to run
	}
	return stmts, nil
}
