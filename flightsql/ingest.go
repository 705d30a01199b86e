package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/engine"
)

// DoPutCommandStatementIngest appends the stream to a table. Each batch is
// acknowledged to the log durably before the next is read; the call returns
// the rows written.
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, r flight.MessageReader) (int64, error) {
	if cmd.GetTemporary() {
		return 0, status.Error(codes.Unimplemented, "flightd: temporary tables are not supported")
	}
	create, failIfExists := false, false
	if o := cmd.GetTableDefinitionOptions(); o != nil {
		switch o.GetIfExists() {
		case flightsql.TableDefinitionOptionsTableExistsOptionAppend, flightsql.TableDefinitionOptionsTableExistsOptionUnspecified:
		case flightsql.TableDefinitionOptionsTableExistsOptionFail:
			failIfExists = true
		default:
			return 0, status.Error(codes.Unimplemented, fmt.Sprintf("flightd: ingest mode if_exists=%s is not supported: lake-stream tables are append/upsert only (use mode 'append' or 'create_append')", o.GetIfExists()))
		}
		create = o.GetIfNotExist() == flightsql.TableDefinitionOptionsTableNotExistOptionCreate
	}
	ctx = inSession(ctx)
	if cmd.GetTable() == "" {
		return 0, status.Error(codes.InvalidArgument, "flightd: ingest needs a table name")
	}
	if failIfExists {
		tables, err := s.eng.Tables(ctx, dbOr(ctx, cmd.GetSchema()))
		if err == nil {
			for _, t := range tables {
				if t.Name == cmd.GetTable() {
					return 0, status.Errorf(codes.AlreadyExists, "flightd: table %s.%s already exists (ingest mode 'create'; use 'append' or 'create_append')", t.Database, t.Name)
				}
			}
		}
	}
	n, err := s.eng.Ingest(ctx, cmd.GetSchema(), cmd.GetTable(), create, r)
	if err != nil {
		return n, toStatus(err)
	}
	return n, nil
}

// dbOr is db, or the session's database when a request names none.
func dbOr(ctx context.Context, db string) string {
	if db == "" {
		return engine.Database(ctx)
	}
	return db
}

// DefaultDatabase is where unqualified names resolve in a session that
// chose no database.
const DefaultDatabase = engine.DefaultDatabase
