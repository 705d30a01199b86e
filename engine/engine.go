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
//
// A statement's text is read once, where it enters the server: Analyze
// returns the Statement that the calls describing or running it take, so
// that none of them reads the text again.
type Engine interface {
	// Analyze reads sql: its kind, its parameters and whatever else the
	// calls below need of it. It never fails and does no I/O: what is
	// wrong with the text is the error of the call that describes or runs
	// the statement.
	Analyze(sql string) Statement
	Execute(ctx context.Context, st Statement) (Result, error)
	Prepare(ctx context.Context, st Statement) (Prepared, error)
	// Ingest appends every batch of r to db.table and returns the row count.
	// With create, a missing table is created from r's schema (append table).
	Ingest(ctx context.Context, db, table string, create bool, r array.RecordReader) (int64, error)
	// Bind returns the statements that run st with the parameter rows of
	// params (one column per parameter, in order; a row per execution),
	// each placeholder replaced by its value written as a SQL literal
	// (Literal), so that a bound statement runs exactly as the same
	// statement written with literals. An INSERT INTO t ... VALUES (...)
	// whose one row holds every placeholder becomes one statement with a
	// row per parameter row (unless the row holds something evaluated once
	// per row: a subquery, random(), nextval()); any other statement
	// becomes one statement per parameter row. A statement without
	// placeholders accepts no values (nil or zero columns).
	Bind(st Statement, params arrow.RecordBatch) ([]string, error)
	// InsertParams writes the parameter rows of params as the rows of an
	// INSERT INTO t [(cols)] VALUES (?, ..., ?) whose row holds nothing but
	// placeholders, each once, without going through SQL: executemany and
	// JDBC executeBatch then load as fast as bulk ingest. ok is false, and
	// nothing is written, for any other statement or values that only SQL
	// converts; then run Bind's statements instead.
	InsertParams(ctx context.Context, st Statement, params arrow.RecordBatch) (n int64, ok bool, err error)
	// Partition plans the query st as parts that DoGets read in parallel,
	// each a part of the same cut of its table (engine.WithPart runs one):
	// parts is nil, and one DoGet runs st whole, unless st is a scan of
	// one table worth splitting into at most max parts. rows is the
	// result's row count, -1 when unknown.
	Partition(ctx context.Context, st Statement, max int) (parts []string, rows int64, err error)
	Databases(ctx context.Context) ([]string, error)
	Tables(ctx context.Context, db string) ([]TableInfo, error)
	// ShortWork reports whether running st costs little whatever the
	// tables hold (a point lookup, a few rows written, SELECT 1): the
	// server admits it in a lane of its own, so that it never waits
	// behind scans. When unsure, it says false.
	ShortWork(ctx context.Context, st Statement) bool
}

// Statement is a statement as Engine.Analyze read it. The server keeps it
// while it describes and runs the statement (a prepared statement's for as
// long as the handle lives) and may use it from several goroutines at once.
type Statement interface {
	// SQL is the statement's text.
	SQL() string
	// Kind says how the server treats the statement.
	Kind() Kind
}

// Kind says how the server treats a statement.
type Kind int

const (
	// KindUpdate changes something, or is refused: it runs once, where it
	// arrives (GetFlightInfo or a DoPut), and no DoGet runs it.
	KindUpdate Kind = iota
	// KindQuery only reads: GetFlightInfo describes it, and each DoGet of
	// its ticket runs it.
	KindQuery
	// KindSession is USE or SET: it runs once, changes the session, and
	// prepared, it answers its one-row result as through GetFlightInfo.
	KindSession
)

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

// DatabaseOf is db, or when db is "" (a name written unqualified) the
// database unqualified names resolve in under ctx.
func DatabaseOf(ctx context.Context, db string) string {
	if db == "" {
		return Database(ctx)
	}
	return db
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
