// Package engine declares what the Flight SQL server needs from the SQL
// engine, so that the server builds and tests without linking DuckDB. Package
// query implements it; cmd/flightd wires the two together.
package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Errors the server maps to gRPC codes.
var (
	ErrInvalid     = errors.New("invalid statement")  // bad SQL or bad input: InvalidArgument
	ErrNotFound    = errors.New("not found")          // unknown database or table: NotFound
	ErrExists      = errors.New("already exists")     // AlreadyExists
	ErrUnsupported = errors.New("not supported")      // Unimplemented
	ErrRejected    = errors.New("rejected")           // the statement is understood but refused: FailedPrecondition
	ErrExhausted   = errors.New("resource exhausted") // e.g. the log's disk budget: ResourceExhausted
	ErrUnavailable = errors.New("unavailable")        // a server flightd depends on (the Kafka log) did not answer: Unavailable
)

// Result is the outcome of one statement. Queries carry Reader (owned by
// the caller, who releases it); updates carry Affected.
type Result struct {
	Schema   *arrow.Schema
	Reader   array.RecordReader
	Update   bool
	Affected int64 // rows written or changed; -1 when unknown
	// Database is set by USE: the database the session's unqualified
	// names resolve in from now on, as the catalog spells it.
	Database string
	// Streaming is set by SET streaming = true | false: whether the
	// session's reads of t$rt and t$changelog are unbounded from now on.
	Streaming *bool
}

// Prepared describes a statement without running it.
type Prepared struct {
	// DatasetSchema is the result schema of a query (empty for updates).
	DatasetSchema *arrow.Schema
	// Parameters has a field per parameter placeholder (? or $N), in order,
	// typed as the statement uses it (a string where the engine cannot
	// tell); nil when the statement has none. Clients such as JDBC build
	// their parameter values from it.
	Parameters *arrow.Schema
	Update     bool
}

// TableInfo describes one table or view that metadata calls list.
type TableInfo struct {
	Database    string
	Name        string
	Type        string // "TABLE" for t, "VIEW" for t$rt
	Schema      *arrow.Schema
	PrimaryKeys []string // in key order; t$rt has t's
	// Columns describes Schema's fields as the table declares them (nil
	// where only the Arrow types are known).
	Columns []ColumnInfo
}

// ColumnInfo is a column's declared SQL type: what JDBC's getColumns and a
// tool's table editor show.
type ColumnInfo struct {
	TypeName  string // as declared, e.g. VARCHAR(100), DECIMAL(38, 10), TIMESTAMP(3)
	Precision int32  // decimal digits, character or byte length, fractional seconds; 0 if none
	Scale     int32  // decimal scale
}

// Engine runs SQL and writes batches. Implementations are safe for
// concurrent use.
type Engine interface {
	Execute(ctx context.Context, sql string) (Result, error)
	Prepare(ctx context.Context, sql string) (Prepared, error)
	// Ingest appends every batch of r to db.table and returns the row count.
	// With create, a missing table is created from r's schema (append table).
	Ingest(ctx context.Context, db, table string, create bool, r array.RecordReader) (int64, error)
	// InsertParams writes the parameter rows of params as the rows of an
	// INSERT INTO t [(cols)] VALUES (?, ..., ?) whose row holds nothing but
	// placeholders, each once, without going through SQL: executemany and
	// JDBC executeBatch then load as fast as bulk ingest. ok is false, and
	// nothing is written, for any other statement or values that only SQL
	// converts; then run BindParams's statements instead.
	InsertParams(ctx context.Context, sql string, params arrow.RecordBatch) (n int64, ok bool, err error)
	// Partition plans the query sql as parts that DoGets read in parallel,
	// each a part of the same cut of its table (engine.WithPart runs one):
	// parts is nil, and one DoGet runs sql whole, unless sql is a scan of
	// one table worth splitting into at most max parts. rows is the
	// result's row count, -1 when unknown.
	Partition(ctx context.Context, sql string, max int) (parts []string, rows int64, err error)
	Databases(ctx context.Context) ([]string, error)
	Tables(ctx context.Context, db string) ([]TableInfo, error)
	// ShortWork reports whether running sql costs little whatever the
	// tables hold (a point lookup, a few rows written, SELECT 1): the
	// server admits it in a lane of its own, so that it never waits
	// behind scans. When unsure, it says false.
	ShortWork(ctx context.Context, sql string) bool
}

// DefaultDatabase is where unqualified names resolve in a session that
// chose no database.
const DefaultDatabase = "default"

type databaseKey struct{}

// WithDatabase returns ctx under which the engine resolves unqualified
// table names in db (a session's current database; "" is DefaultDatabase).
func WithDatabase(ctx context.Context, db string) context.Context {
	return context.WithValue(ctx, databaseKey{}, db)
}

// Database is the database unqualified names resolve in under ctx.
func Database(ctx context.Context) string {
	if db, _ := ctx.Value(databaseKey{}).(string); db != "" {
		return db
	}
	return DefaultDatabase
}

// FindName finds name among names as SQL compares names: exactly, else
// without case. It returns the name as names spell it.
func FindName(names []string, name string) (string, bool) {
	for _, n := range names {
		if n == name {
			return n, true
		}
	}
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n, true
		}
	}
	return "", false
}

type streamingKey struct{}

// WithStreaming returns ctx under which queries of t$rt and t$changelog
// are unbounded streams of changes (a session with the option streaming).
func WithStreaming(ctx context.Context, on bool) context.Context {
	return context.WithValue(ctx, streamingKey{}, on)
}

// Streaming reports whether queries under ctx stream.
func Streaming(ctx context.Context) bool {
	on, _ := ctx.Value(streamingKey{}).(bool)
	return on
}

// ParseSwitch reads the spellings of an on/off setting that SET and the
// session options take: true, on, 1 and false, off, 0, in any case.
func ParseSwitch(s string) (on, ok bool) {
	switch strings.ToLower(s) {
	case "true", "on", "1":
		return true, true
	case "false", "off", "0":
		return false, true
	}
	return false, false
}

type partKey struct{}

// WithPart returns ctx under which Execute reads only part, one of the
// parts Partition planned for the statement.
func WithPart(ctx context.Context, part string) context.Context {
	return context.WithValue(ctx, partKey{}, part)
}

// Part is the part of a statement's result ctx asks for ("" = all of it).
func Part(ctx context.Context) string {
	p, _ := ctx.Value(partKey{}).(string)
	return p
}

// TableTypes lists the table types Tables reports.
var TableTypes = []string{"TABLE", "VIEW"}
