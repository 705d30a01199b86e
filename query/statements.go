//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/sqlparse"
)

// statementsTable is the system table of the statements running and
// queued: sys.statements.
const statementsTable = "statements"

// StatementsSchema is sys.statements: one row per statement that holds or
// waits for a slot (package internal/admit), oldest first.
var StatementsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "client", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "lane", Type: arrow.BinaryTypes.String},
	{Name: "kind", Type: arrow.BinaryTypes.String},
	{Name: "state", Type: arrow.BinaryTypes.String},
	{Name: "queued_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "started_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "rows_sent", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sql", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// statementsReader reads sys.statements (empty without an admission
// controller).
func (e *Engine) statementsReader() (array.RecordReader, error) {
	b := array.NewRecordBuilder(e.mem, StatementsSchema)
	defer b.Release()
	var list []admit.Info
	if e.admission != nil {
		list = e.admission.Statements()
	}
	nullable := func(i int, s string) {
		if s == "" {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.StringBuilder).Append(s)
		}
	}
	for _, s := range list {
		b.Field(0).(*array.Int64Builder).Append(s.ID)
		nullable(1, s.User)
		nullable(2, s.Client)
		b.Field(3).(*array.StringBuilder).Append(s.Lane.String())
		b.Field(4).(*array.StringBuilder).Append(s.Kind)
		b.Field(5).(*array.StringBuilder).Append(string(s.State))
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(s.Queued.UnixMicro()))
		if s.Started.IsZero() {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(s.Started.UnixMicro()))
		}
		b.Field(8).(*array.Int64Builder).Append(s.RowsSent)
		nullable(9, s.SQL)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(StatementsSchema, []arrow.RecordBatch{rec})
}

// call runs CALL sys.cancel(id), the one procedure flightd has: it ends
// the statement id of sys.statements, running or queued.
func (e *Engine) call(ctx context.Context, sql string) (int64, error) {
	c, err := sqlparse.ParseCall(sql)
	if err != nil {
		return 0, invalid(err)
	}
	if !strings.EqualFold(c.Name.Database, SystemDatabase) {
		return 0, fmt.Errorf("%w: CALL %s is not allowed: flightd's procedures are sys.cancel(statement_id) and Paimon's %s", engine.ErrInvalid, c.Name, procedureNames())
	}
	if !strings.EqualFold(c.Name.Table, "cancel") {
		return e.callProcedure(ctx, c)
	}
	if len(c.Args) != 1 || c.Args[0].String {
		return 0, fmt.Errorf("%w: sys.cancel takes one argument, the id of a statement in sys.statements", engine.ErrInvalid)
	}
	id, err := strconv.ParseInt(c.Args[0].Text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: sys.cancel(%s): the id is a whole number, as sys.statements shows it", engine.ErrInvalid, c.Args[0].Text)
	}
	if e.admission == nil {
		return 0, fmt.Errorf("%w: this server lists no statements", engine.ErrNotFound)
	}
	if err := e.admission.Cancel(id); err != nil {
		if errors.Is(err, admit.ErrUnknownStatement) {
			return 0, fmt.Errorf("%w: %w", engine.ErrNotFound, err)
		}
		return 0, err
	}
	return 0, nil
}
