package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// GetFlightInfoPreparedStatement runs the prepared statement.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return s.flightInfo(ctx, ps.sql, desc)
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
	r, err := s.run(ctx, ps.sql)
	if err != nil {
		return nil, nil, err
	}
	return s.stream(ctx, r)
}

// DoPutPreparedStatementQuery binds parameters: not supported yet, except an
// empty parameter batch.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, w flight.MetadataWriter) ([]byte, error) {
	if _, err := s.preparedSQL(cmd.GetPreparedStatementHandle()); err != nil {
		return nil, err
	}
	if hasRows(r) {
		return nil, status.Error(codes.Unimplemented, "flightd: statement parameters are not supported yet; put the values in the SQL text")
	}
	return cmd.GetPreparedStatementHandle(), nil
}

// DoPutPreparedStatementUpdate runs a prepared DDL or INSERT.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, r flight.MessageReader) (int64, error) {
	ps, err := s.preparedSQL(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	if hasRows(r) {
		return 0, status.Error(codes.Unimplemented, "flightd: statement parameters are not supported yet; put the values in the SQL text")
	}
	return s.update(ctx, ps.sql)
}

func hasRows(r flight.MessageReader) bool {
	if r == nil {
		return false
	}
	for r.Next() {
		if r.RecordBatch().NumRows() > 0 {
			return true
		}
	}
	return false
}
