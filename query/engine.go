//go:build duckdb_arrow

package query

import (
	"cmp"
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/membudget"
	"github.com/flightd/flightd/internal/memguard"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/sqlparse"
)

// Engine implements engine.Engine over DuckDB and lakestream.
type Engine struct {
	ls    *lakestream.Service
	drain lakestream.DrainFunc
	conn  *duckdb.Connector
	pool  connPool
	mem   memory.Allocator
	lg    *slog.Logger
	// shapes are the parse trees of statement shapes seen (parsecache.go).
	shapes parseCache
	// noPushdown turns pruning off (tests compare results).
	noPushdown atomic.Bool
	// forceRows builds every result from rows (tests and benchmarks
	// compare the paths).
	forceRows atomic.Bool
	// guard cancels DuckDB statements while the process's memory is above
	// Options.MemoryCeiling; stopGuard ends its watch.
	guard     *memguard.Guard
	spill     *memguard.Guard // nil: DuckDB's spill is not watched
	stopGuard chan struct{}
	// scans are the table references of the statements running, read by
	// the scan table function (tablefn.go) over fnConn.
	scans  scanRegistry
	views  viewSet // the views DuckDB reads flightd's tables through
	fnConn driver.Conn
	// partRows is Options.PartRows.
	partRows int64
	// admission lists and cancels statements (Options.Admission; may be nil).
	admission *admit.Controller
	// cluster is Options.Cluster (never nil): sys.nodes, sys.tiering's owner.
	cluster lakestream.Cluster
	// ingestMem bounds ingest batches in memory across streams (nil:
	// unbounded); ingestReserve is a stream's first reservation.
	ingestMem     *membudget.Budget
	ingestReserve int64
	ingestWait    time.Duration
}

var _ engine.Engine = (*Engine)(nil)

// New opens an in-memory DuckDB and returns an Engine over ls.
func New(ls *lakestream.Service, opts Options) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	settings := lockdown(opts)
	c, err := duckdb.NewConnector(lockdownDSN(settings), nil)
	if err != nil {
		return nil, fmt.Errorf("query: open duckdb: %w", err)
	}
	if err := checkLockdown(c, settings); err != nil {
		c.Close()
		return nil, err
	}
	// New runs once at startup and is given no context; on S3 each request's
	// attempts and retries are bounded.
	if err := ls.CreateDatabase(context.Background(), DefaultDatabase, true); err != nil {
		c.Close()
		return nil, err
	}
	if opts.PartRows <= 0 {
		opts.PartRows = DefaultPartRows
	}
	e := &Engine{ls: ls, drain: opts.Drain, conn: c, mem: opts.Allocator, lg: opts.Logger,
		guard: memguard.New(opts.MemoryCeiling, nil), stopGuard: make(chan struct{}), partRows: opts.PartRows,
		admission: opts.Admission, ingestReserve: cmp.Or(opts.IngestReserve, 64<<20),
		ingestWait: cmp.Or(opts.IngestWait, time.Minute), cluster: opts.Cluster}
	if e.cluster == nil {
		e.cluster = lakestream.Alone("", time.Now())
	}
	if opts.IngestMemory > 0 {
		e.ingestMem = membudget.New(opts.IngestMemory)
	}
	if opts.MaxTempBytes > 0 && opts.TempDir != "" {
		e.spill = memguard.NewSpill(opts.MaxTempBytes, opts.TempDir)
	}
	if err := e.registerScanFunction(context.Background()); err != nil {
		c.Close()
		return nil, err
	}
	go e.guard.Run(e.stopGuard, 50*time.Millisecond, func(cancelled int, rss int64) {
		e.lg.Warn("query: resident memory passed its ceiling; the DuckDB statements running were cancelled",
			"resident_mib", rss>>20, "ceiling_mib", opts.MemoryCeiling>>20, "cancelled", cancelled)
	})
	go e.spill.Run(e.stopGuard, 50*time.Millisecond, func(cancelled int, size int64) {
		e.lg.Warn("query: DuckDB's spill directory passed --max-spill; the DuckDB statements running were cancelled",
			"spilled_mib", size>>20, "bound_mib", opts.MaxTempBytes>>20, "cancelled", cancelled)
	})
	return e, nil
}

// Close closes DuckDB.
func (e *Engine) Close() error {
	close(e.stopGuard)
	e.pool.closeIdle()
	_ = e.fnConn.Close()
	return e.conn.Close()
}

// Execute runs one statement.
func (e *Engine) Execute(ctx context.Context, sql string) (engine.Result, error) {
	if err := checkText(sql); err != nil {
		return engine.Result{}, err
	}
	kind := sqlparse.Classify(sql)
	switch kind {
	case sqlparse.KindQuery:
		r, err := e.query(ctx, sql, false)
		if err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Schema: r.Schema(), Reader: r, Affected: -1}, nil
	case sqlparse.KindInsert:
		n, err := e.insert(ctx, sql)
		return engine.Result{Update: true, Affected: n}, err
	case sqlparse.KindInsertOverwrite, sqlparse.KindUpdate, sqlparse.KindDelete:
		return engine.Result{}, fmt.Errorf("%w: %s is not supported on lake-stream tables: it would rewrite committed lake data while the log may hold newer values for the same rows; write changes as rows instead (upsert by primary key, or ingest a batch with a change-kind column)", engine.ErrInvalid, kind)
	case sqlparse.KindUse:
		db, err := e.use(ctx, sql)
		return engine.Result{Update: true, Affected: 0, Database: db}, err
	case sqlparse.KindSet:
		on, err := setStreaming(sql)
		if err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Update: true, Affected: 0, Streaming: &on}, nil
	case sqlparse.KindCall:
		return engine.Result{Update: true, Affected: 0}, e.call(sql)
	case sqlparse.KindOther:
		return engine.Result{}, e.refuse(ctx, sql)
	default:
		err := e.ddl(ctx, kind, sql)
		return engine.Result{Update: true, Affected: 0}, err
	}
}

// Prepare describes sql. Queries run once under LIMIT 0 to learn their
// schema.
func (e *Engine) Prepare(ctx context.Context, sql string) (engine.Prepared, error) {
	if err := checkText(sql); err != nil {
		return engine.Prepared{}, err
	}
	if ps, n, err := sqlparse.Params(sql); err != nil || n > 0 {
		if err != nil {
			return engine.Prepared{}, invalid(err)
		}
		return e.prepareParams(ctx, sql, ps, n)
	}
	switch sqlparse.Classify(sql) {
	case sqlparse.KindQuery:
	case sqlparse.KindOther:
		return engine.Prepared{}, e.refuse(ctx, sql)
	default:
		return engine.Prepared{Update: true}, nil
	}
	r, err := e.query(ctx, sql, true)
	if err != nil {
		return engine.Prepared{}, err
	}
	defer r.Release()
	return engine.Prepared{DatasetSchema: r.Schema()}, nil
}

// use checks USE db and returns the database as the catalog spells it.
func (e *Engine) use(ctx context.Context, sql string) (string, error) {
	st, err := sqlparse.ParseUse(sql)
	if err != nil {
		return "", invalid(err)
	}
	db, found, err := e.lookupDatabase(ctx, st.Name)
	if err != nil {
		return "", mapErr(err)
	}
	if !found {
		return "", fmt.Errorf("%w: database %q does not exist (CREATE DATABASE %s makes it)", engine.ErrNotFound, st.Name, quoteIdent(st.Name))
	}
	return db, nil
}

// setStreaming reads SET streaming = true | false (and RESET streaming):
// the one session setting flightd has.
func setStreaming(sql string) (bool, error) {
	st, err := sqlparse.ParseSet(sql)
	if err != nil || !strings.EqualFold(st.Name, "streaming") {
		what := statementKind(sql)
		if err == nil {
			what += " " + st.Name
		}
		msg := fmt.Sprintf("%s is not allowed: flightd has one session setting, streaming (SET streaming = true | false)", what)
		if err != nil {
			msg += "; " + err.Error()
		}
		return false, fmt.Errorf("%w: %s", engine.ErrInvalid, msg)
	}
	if st.Reset {
		return false, nil
	}
	if on, ok := engine.ParseSwitch(st.Value); ok {
		return on, nil
	}
	return false, fmt.Errorf("%w: SET streaming takes true or false, not %q", engine.ErrInvalid, st.Value)
}

// checkText refuses statement text that DuckDB's parser would read
// differently from flightd's: DuckDB stops at a NUL byte.
func checkText(sql string) error {
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return fmt.Errorf("%w: the statement text holds a NUL byte at offset %d", engine.ErrInvalid, i)
	}
	if i := sqlparse.Hint(sql); i >= 0 {
		return fmt.Errorf("%w: the statement holds a hint comment (/*+ ... */) at offset %d, which flightd does not apply (Flink's OPTIONS('scan.snapshot-id' = ...) and the like); it is refused rather than ignored", engine.ErrInvalid, i)
	}
	return nil
}

// refuse explains why sql, which is none of the statements flightd runs,
// is refused: DuckDB's syntax error if it has one, else its kind.
func (e *Engine) refuse(ctx context.Context, sql string) error {
	if msg := e.syntaxError(ctx, sql); msg != "" {
		return fmt.Errorf("%w: %s", engine.ErrInvalid, msg)
	}
	if sqlparse.Statements(sql) > 1 {
		return errMultipleStatements
	}
	return fmt.Errorf("%w: %s statements are not allowed; flightd runs queries, INSERT INTO, and CREATE/DROP/ALTER of databases and tables (qualify table names as db.table; unqualified names resolve in the session's database, now %q)", engine.ErrInvalid, statementKind(sql), engine.Database(ctx))
}

// syntaxError returns DuckDB's parser error for sql, or "" when it parses.
func (e *Engine) syntaxError(ctx context.Context, sql string) string {
	c, err := e.connect(ctx)
	if err != nil {
		return ""
	}
	defer e.release(c)
	js, err := c.serialize(ctx, sql)
	if err != nil {
		return ""
	}
	var out struct {
		Error   bool   `json:"error"`
		Type    string `json:"error_type"`
		Message string `json:"error_message"`
	}
	if json.Unmarshal([]byte(js), &out) != nil || !out.Error || out.Type != "parser" {
		return ""
	}
	return out.Message
}

// statementKind names a statement by its leading keyword, two for CREATE,
// DROP and ALTER (CREATE MACRO, DROP VIEW), in refusals.
func statementKind(sql string) string {
	f := strings.FieldsFunc(sql, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_')
	})
	if len(f) == 0 {
		return "empty"
	}
	k := strings.ToUpper(f[0])
	switch k {
	case "CREATE", "DROP", "ALTER":
		if len(f) > 1 {
			k += " " + strings.ToUpper(f[1])
		}
	}
	return k
}

func (e *Engine) ddl(ctx context.Context, kind sqlparse.Kind, sql string) error {
	switch kind {
	case sqlparse.KindCreateDatabase:
		st, err := sqlparse.ParseCreateDatabase(sql)
		if err != nil {
			return invalid(err)
		}
		return mapErr(e.ls.CreateDatabase(ctx, st.Name, st.IfNotExists))
	case sqlparse.KindDropDatabase:
		st, err := sqlparse.ParseDropDatabase(sql)
		if err != nil {
			return invalid(err)
		}
		return mapErr(e.ls.DropDatabase(ctx, st.Name, st.IfExists, st.Cascade))
	case sqlparse.KindCreateTable:
		st, err := sqlparse.ParseCreateTable(sql)
		if err != nil {
			return invalid(err)
		}
		sc, err := schemaOf(st)
		if err != nil {
			return invalid(err)
		}
		db := dbOr(ctx, st.Name.Database)
		return mapErr(e.ls.CreateTable(ctx, db, st.Name.Table, sc, st.IfNotExists))
	case sqlparse.KindDropTable:
		st, err := sqlparse.ParseDropTable(sql)
		if err != nil {
			return invalid(err)
		}
		if err := e.writable(ctx, dbOr(ctx, st.Name.Database), st.Name.Table); err != nil {
			return err
		}
		db := dbOr(ctx, st.Name.Database)
		if err := e.ls.DropTable(ctx, db, st.Name.Table, st.IfExists); err != nil {
			return mapErr(err)
		}
		return e.dropViews(ctx, db, st.Name.Table)
	case sqlparse.KindAlterTable:
		st, err := sqlparse.ParseAlterTable(sql)
		if err != nil {
			return invalid(err)
		}
		db := dbOr(ctx, st.Name.Database)
		if err := e.writable(ctx, db, st.Name.Table); err != nil {
			return err
		}
		if st.IfExists {
			if _, err := e.ls.Table(ctx, db, st.Name.Table); errors.Is(err, lake.ErrTableNotFound) || errors.Is(err, lake.ErrDatabaseNotFound) {
				return nil // ALTER TABLE IF EXISTS of a table that is not there
			}
		}
		if len(st.Reset) > 0 {
			// Paimon's removeOption: the option goes back to its default.
			set := make(map[string]string, len(st.Reset))
			for _, k := range st.Reset {
				if k == lakestream.OptionEnabled {
					return fmt.Errorf("%w: RESET ('%s'): the option switches the table's log; SET ('%s' = 'false') switches it off", engine.ErrInvalid, k, k)
				}
				set[k] = ""
			}
			return mapErr(e.ls.AlterTableOptions(ctx, db, st.Name.Table, set))
		}
		if st.Add != nil {
			col, err := lakeColumn(st.Add.Column)
			if err != nil {
				return invalid(err)
			}
			add := lake.AddColumn{Column: col, First: st.Add.First, After: st.Add.After}
			return mapErr(e.ls.AddColumn(ctx, db, st.Name.Table, add))
		}
		if to := st.RenameTable; to != nil {
			toDB := to.Database
			if toDB == "" {
				toDB = db // an unqualified new name stays in the table's database
			}
			if err := e.ls.RenameTable(ctx, db, st.Name.Table, toDB, to.Table); err != nil {
				return mapErr(err)
			}
			return e.dropViews(ctx, db, st.Name.Table)
		}
		if st.RenameFrom != "" {
			return mapErr(e.ls.RenameColumn(ctx, db, st.Name.Table, st.RenameFrom, st.RenameTo))
		}
		if st.Drop != "" {
			return mapErr(e.ls.DropColumn(ctx, db, st.Name.Table, st.Drop))
		}
		if a := st.Alter; a != nil {
			ch := lake.ColumnChange{DropNotNull: a.DropNotNull}
			if a.Type != "" {
				t, err := lake.ParseType(a.Type)
				if err != nil {
					return invalid(fmt.Errorf("column %q: %w", a.Name, err))
				}
				ch.Type = t
			}
			if a.Comment != nil {
				ch.Comment, ch.SetComment = *a.Comment, true
			}
			return mapErr(e.ls.AlterColumn(ctx, db, st.Name.Table, a.Path, ch))
		}
		set := make(map[string]string, len(st.Set))
		for k, v := range st.Set {
			set[k] = v
		}
		if v, ok := set[lakestream.OptionEnabled]; ok {
			delete(set, lakestream.OptionEnabled)
			on, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%w: %s must be 'true' or 'false', got %q", engine.ErrInvalid, lakestream.OptionEnabled, v)
			}
			if err := e.ls.SetRealtime(ctx, db, st.Name.Table, on, e.drain); err != nil {
				return mapErr(err)
			}
		}
		if len(set) == 0 {
			return nil
		}
		return mapErr(e.ls.AlterTableOptions(ctx, db, st.Name.Table, set))
	}
	return fmt.Errorf("%w: statement kind %s", engine.ErrUnsupported, kind)
}

// dbOr is db, or the session's database when a name was not qualified.
func dbOr(ctx context.Context, db string) string {
	if db == "" {
		return engine.Database(ctx)
	}
	return db
}

func schemaOf(st *sqlparse.CreateTable) (lake.Schema, error) {
	sc := lake.Schema{PrimaryKeys: st.PrimaryKey, PartitionKeys: st.PartitionBy, Options: st.Options, Comment: st.Comment}
	for _, c := range st.Columns {
		col, err := lakeColumn(c)
		if err != nil {
			return lake.Schema{}, err
		}
		sc.Columns = append(sc.Columns, col)
	}
	return sc, nil
}

// lakeColumn is a column definition of CREATE TABLE or ADD COLUMN as the lake
// declares it.
func lakeColumn(c sqlparse.ColumnDef) (lake.Column, error) {
	typ := c.Type
	if c.NotNull {
		typ += " NOT NULL"
	}
	t, err := lake.ParseType(typ)
	if err != nil {
		return lake.Column{}, fmt.Errorf("column %q: %w", c.Name, err)
	}
	return lake.Column{Name: c.Name, Type: t, Comment: c.Comment}, nil
}

func invalid(err error) error { return fmt.Errorf("%w: %w", engine.ErrInvalid, err) }

// mapErr tags lake and lakestream errors with the engine's sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lake.ErrTableNotFound), errors.Is(err, lake.ErrDatabaseNotFound), errors.Is(err, lakestream.ErrNoSnapshot):
		return fmt.Errorf("%w: %w", engine.ErrNotFound, err)
	case errors.Is(err, lake.ErrTableExists), errors.Is(err, lake.ErrDatabaseExists):
		return fmt.Errorf("%w: %w", engine.ErrExists, err)
	case errors.Is(err, lakestream.ErrInvalidBatch), errors.Is(err, lakestream.ErrInvalidOption),
		errors.Is(err, lake.ErrInvalidName), errors.Is(err, fileio.ErrInvalidPath):
		return fmt.Errorf("%w: %w", engine.ErrInvalid, err)
	case errors.Is(err, lakestream.ErrNotRealtime), errors.Is(err, lakestream.ErrSchemaChanged), errors.Is(err, lakestream.ErrOtherLog), errors.Is(err, lakestream.ErrLogBehind),
		errors.Is(err, logstore.ErrFenced),
		errors.Is(err, lakestream.ErrSchemaMismatch):
		return fmt.Errorf("%w: %w", engine.ErrRejected, err)
	case errors.Is(err, lake.ErrUnsupported):
		return fmt.Errorf("%w: %w", engine.ErrUnsupported, err)
	case errors.Is(err, logstore.ErrDiskBudget):
		return fmt.Errorf("%w: %w", engine.ErrExhausted, err)
	case errors.Is(err, logstore.ErrUnavailable):
		return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	return err
}

// conn is one DuckDB connection used by one statement.
// query runs a row-returning statement with flightd tables bound.
// With schemaOnly the statement runs under LIMIT 0 when DuckDB allows it.
func (e *Engine) query(ctx context.Context, sql string, schemaOnly bool) (array.RecordReader, error) {
	r, err := e.queryWith(ctx, sql, schemaOnly, nil)
	if errors.Is(err, lakestream.ErrSchemaChanged) {
		// Another engine changed a table between the schema this statement
		// was planned with and its scan (nothing was read yet): plan again.
		r, err = e.queryWith(ctx, sql, schemaOnly, nil)
	}
	return r, err
}

// afterSchema, when set (by tests), runs after a scan's planning read the
// table's schema and before the scan starts.
var afterSchema func()

// queryWith is query; with describe, the statement is not run: describe
// gets the connection with the statement's tables bound and the SQL that
// DuckDB would run, and queryWith returns its error and no reader.
func (e *Engine) queryWith(ctx context.Context, sql string, schemaOnly bool, describe func(c *conn, run string) error) (array.RecordReader, error) {
	// The statement's lookups of a table's metadata check it once; its
	// scans check it again (lakestream.Planning).
	ctx = lakestream.Planning(ctx)
	c, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.release(c) // after forget, deferred later
		}
	}()
	tree, parsed, err := e.parse(ctx, c, sql)
	if err != nil {
		return nil, fmt.Errorf("query: serialise statement: %w", err)
	}
	run := sql
	explain := false
	if !parsed {
		// EXPLAIN [ANALYZE] of a query: DuckDB serialises only the query.
		if inner, analyze, ok := explained(sql); ok {
			if tree, parsed, err = e.parse(ctx, c, inner); err != nil {
				return nil, fmt.Errorf("query: serialise statement: %w", err)
			}
			explain = true
			if schemaOnly && analyze {
				run = "EXPLAIN " + inner // its columns, without running the query
			}
		}
	}
	part, err := partOf(ctx)
	if err != nil {
		return nil, err
	}
	stmt := "" // with schemaOnly, the statement run wraps
	// A name that is not a flightd table is DuckDB's (information_schema,
	// pg_class, duckdb_views): the statement may read DuckDB's catalog.
	readsCatalog := false
	resolveRef := e.resolver(ctx)
	resolve := func(schema, table string) (tableRef, bool, error) {
		r, ok, err := resolveRef(schema, table)
		if err == nil && !ok {
			readsCatalog = true
		}
		return r, ok, err
	}
	session := strings.ToLower(engine.Database(ctx)) // the schema of unqualified names' views
	current := "main"
	var keys []viewKey
	var uses map[viewKey]*refUse
	var travels []travelRef
	parsedText := sql // the text the tree's locations are in
	if explain {
		parsedText, _, _ = explained(sql)
	}
	if engine.Streaming(ctx) && describe == nil {
		if explain {
			parsed = false // EXPLAIN is not a streaming read
		}
		return e.streamQuery(ctx, tree, parsed, schemaOnly)
	}
	if parsed {
		if ps, ok := asPlainScan(tree, resolve); ok && describe == nil && !explain {
			if r, ok, err := e.plainScan(ctx, ps, part, schemaOnly); ok || err != nil {
				return r, err
			}
		}
	}
	if part != nil {
		return nil, fmt.Errorf("%w: the ticket names a part of a result, and its statement is not a scan flightd splits into parts", engine.ErrInvalid)
	}
	if parsed {
		hs := analyse(tree)
		uses = map[viewKey]*refUse{}
		err := findRefs(tree, resolve, session, func(k viewKey, r tableRef, node *object) error {
			if at, _ := node.get("at_clause").(*object); at != nil {
				var err error
				if k, r, err = e.travel(ctx, parsedText, k, r, node, at, &travels); err != nil {
					return err
				}
			}
			h := hs.of(node)
			if e.noPushdown.Load() {
				h = scanHints{}
			}
			u, seen := uses[k]
			if !seen {
				uses[k] = &refUse{ref: r, hints: h}
				keys = append(keys, k)
				return nil
			}
			if u.ref != r {
				return fmt.Errorf("%w: %s.%s names both %s.%s and %s.%s in one statement; qualify it", engine.ErrInvalid, k.schema, k.name, u.ref.db, u.ref.table, r.db, r.table)
			}
			// Several references read one scan each, pruned by what
			// they all allow.
			if !reflect.DeepEqual(u.hints, h) {
				u.hints = scanHints{}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if readsCatalog || callsCatalogFunction(tree) {
			// It lists the views: those of tables other processes
			// dropped, renamed or altered go first.
			if err := e.dropStaleViews(ctx, c); err != nil {
				return nil, err
			}
		}
		if len(travels) > 0 {
			// The statement reads the views of the snapshots it travels to.
			rewritten := rewriteTravels(parsedText, travels)
			run = run[:len(run)-len(parsedText)] + rewritten
		}
		if schemaOnly && !explain {
			stmt = run
			run = "SELECT * FROM (" + run + ") AS __flightd_prepare LIMIT 0"
		}
	}
	var token string
	var sources []*scanSource
	forget := func() {
		if token != "" {
			e.scans.remove(token)
			token = ""
			// A statement on the connection also ends the finished one's
			// execution in DuckDB, which holds its scans until then.
			_ = c.setToken(context.Background(), "")
		}
	}
	// The sources stay registered until the result is released: DuckDB
	// reads the scans as the caller reads the result.
	defer func() {
		if !ok {
			forget()
		}
	}()
	// Only statements DuckDB runs are guarded: plain scans stream and hold
	// a few batches.
	ctx, memDone := e.guard.Start(ctx)
	ctx, spillDone := e.spill.Start(ctx)
	guardDone := func() { spillDone(); memDone() }
	defer func() {
		if !ok {
			guardDone()
		}
	}()
	// Each name the statement reads is a view over the scan function
	// (views.go, tablefn.go); DuckDB's projection pushdown picks its
	// columns, the hints' filters prune its files.
	if len(keys) > 0 {
		srcs := make(map[viewKey]*scanSource, len(keys))
		schemas := make([]*arrow.Schema, len(keys))
		for i, k := range keys {
			u := uses[k]
			sc, err := e.refSchema(ctx, u.ref)
			if err != nil {
				return nil, mapErr(err)
			}
			schemas[i] = sc
			src := &scanSource{e: e, ctx: ctx, ref: u.ref, hints: u.hints, schema: sc}
			srcs[k] = src
			sources = append(sources, src)
		}
		if token, err = e.scans.add(srcs); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		if err := c.setToken(ctx, token); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		for i, k := range keys {
			if err := e.ensureView(ctx, c, k, uses[k].ref, schemas[i]); err != nil {
				return nil, fmt.Errorf("query: bind %s.%s: %w", uses[k].ref.db, uses[k].ref.table, err)
			}
			if k.schema == session {
				current = session
			}
		}
	}
	// Unqualified names are looked up in the session's views, if the
	// statement reads any, else in main, which holds no flightd views.
	if err := c.useSchema(ctx, current); err != nil {
		return nil, err
	}
	if describe != nil {
		return nil, describe(c, run)
	}
	var r array.RecordReader
	var cols []string // the statement's own column names, for schemaOnly
	if stmt != "" {
		cols, err = c.columnNames(stmt)
	}
	if err == nil {
		r, err = e.run(ctx, c, run, func() { forget(); e.release(c); guardDone() })
		if err == nil && cols != nil {
			// Releasing the result (renameColumns does) ran the cleanup.
			ok = true
			return renameColumns(r, cols)
		}
	}
	if err != nil {
		for _, src := range sources {
			serr := src.firstErr()
			if serr != nil && errors.Is(serr, lakestream.ErrSchemaChanged) {
				return nil, serr
			}
			// A scan that failed for a reason the engine has a code for
			// (the Kafka log unreachable: Unavailable) says so, rather
			// than as DuckDB's invalid statement.
			if m := mapErr(serr); serr != nil && m != serr {
				return nil, m
			}
		}
		if viewAltered(err) {
			return nil, fmt.Errorf("%w: %s", lakestream.ErrSchemaChanged, cleanDuckErr(err))
		}
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, memguard.ErrOverMemory) || errors.Is(cause, memguard.ErrOverSpill) {
			return nil, cause
		}
		if cause := context.Cause(ctx); cause != nil && errors.Is(err, cause) {
			return nil, err // cancelled while DuckDB started the statement
		}
		if errors.Is(err, engine.ErrInvalid) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", engine.ErrInvalid, cleanDuckErr(err))
	}
	ok = true
	return r, nil
}

// refUse is what one statement reads through one view: the table and the
// hints of its references.
type refUse struct {
	ref   tableRef
	hints scanHints
}

// explained returns the query of an EXPLAIN [ANALYZE] statement.
func explained(sql string) (inner string, analyze, ok bool) {
	rest := strings.TrimLeft(sql, " \t\r\n")
	word := func() string {
		i := strings.IndexFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '(' })
		if i < 0 {
			return rest
		}
		return rest[:i]
	}
	if !strings.EqualFold(word(), "EXPLAIN") {
		return "", false, false
	}
	rest = strings.TrimLeft(rest[len("EXPLAIN"):], " \t\r\n")
	if strings.EqualFold(word(), "ANALYZE") {
		rest, analyze = rest[len("ANALYZE"):], true
	}
	return rest, analyze, true
}

// renameColumns gives the schema-only result r (no rows) the statement's
// own column names. The LIMIT 0 wrapper that computes it is a subquery, and
// DuckDB renames a subquery's duplicate names (SELECT 1 AS a, 2 AS a: a,
// a_1), while the statement run streams them as they are: clients compare
// the two schemas and refused every result with a repeated column name
// (SELECT * of a join of tables sharing a column) as inconsistent.
func renameColumns(r array.RecordReader, names []string) (array.RecordReader, error) {
	defer r.Release()
	sc := r.Schema()
	if len(names) != sc.NumFields() {
		return nil, fmt.Errorf("query: the statement has %d columns, its schema %d", len(names), sc.NumFields())
	}
	fields := sc.Fields()
	for i := range fields {
		fields[i].Name = names[i]
	}
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	md := sc.Metadata()
	return array.NewRecordReader(arrow.NewSchema(fields, &md), nil)
}

// run runs the query sql on c and returns its result; onClose runs once
// the result is released (and not when run fails). Results stream as
// Arrow (arrowresult.go) unless a column's type reads differently there
// than in the row path, which then builds them (rowreader.go).
func (e *Engine) run(ctx context.Context, c *conn, sql string, onClose func()) (array.RecordReader, error) {
	st, err := c.prepareOne(sql)
	if err != nil {
		return nil, err
	}
	if !e.forceRows.Load() && arrowResultTypes(st) {
		r, err := c.queryArrow(ctx, st, func() { _ = st.Close(); onClose() })
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		return r, nil
	}
	rows, err := st.QueryContext(ctx, nil)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	rr, err := newRowReader(ctx, e.mem, rows, func() { _ = st.Close(); onClose() })
	if err != nil {
		_ = rows.Close()
		_ = st.Close()
		return nil, err
	}
	return rr, nil
}

// plainScan streams a scan of one table without DuckDB. ok is false when
// the statement should go to DuckDB after all (a column name that does not
// exist, so that DuckDB reports it in its words).
//
// With a part (from Partition), it reads that part of the cut the statement
// was planned at.
func (e *Engine) plainScan(ctx context.Context, ps plainScan, p *part, schemaOnly bool) (array.RecordReader, bool, error) {
	if p != nil && ps.ref.whole() {
		return nil, false, fmt.Errorf("%w: the ticket names a part of a scan of %s.%s, which flightd does not split", engine.ErrInvalid, ps.ref.db, ps.ref.table)
	}
	opts := lakestream.ScanOptions{Realtime: ps.ref.realtime, ReadOptimized: ps.ref.ro}
	if p != nil {
		if (p.cut.Log != nil) != ps.ref.realtime {
			return nil, false, fmt.Errorf("%w: the ticket's part was planned for another table", engine.ErrInvalid)
		}
		opts.At, opts.Split = &p.cut, p.split
	}
	sc, err := e.refSchema(ctx, ps.ref)
	if err != nil {
		return nil, false, mapErr(err)
	}
	if afterSchema != nil {
		afterSchema()
	}
	var idx []int
	if ps.columns != nil {
		var ok bool
		if idx, ok = project(sc, ps.columns); !ok {
			return nil, false, nil
		}
	}
	preds, ok := bindPredicates(sc, ps.filter)
	if !ok || (len(preds) > 0 && e.noPushdown.Load()) {
		return nil, false, nil
	}
	for i := range ps.filter {
		ps.filter[i].Column = sc.Field(preds[i].col).Name
	}
	var r array.RecordReader
	switch {
	case schemaOnly:
		r, err = array.NewRecordReader(sc, nil)
	case p != nil && len(preds) == 0:
		opts.Expect = sc
		r, err = e.ls.ScanWith(ctx, ps.ref.db, ps.ref.table, opts)
	case ps.ref.whole() || len(preds) == 0:
		r, err = e.scan(ctx, ps.ref)
		if err == nil && !arrowutil.SameColumns(r.Schema(), sc) {
			// changed by another engine since sc was read: idx and preds
			// would name other columns
			r.Release()
			r, err = nil, fmt.Errorf("%w (%s.%s)", lakestream.ErrSchemaChanged, ps.ref.db, ps.ref.table)
		}
	default:
		// Read the selected and the filtered columns, filter, then select.
		var read []string
		if idx != nil {
			need := map[int]bool{}
			for _, i := range idx {
				need[i] = true
			}
			for _, p := range preds {
				need[p.col] = true
			}
			pos := map[int]int{}
			for i, f := range sc.Fields() {
				if need[i] {
					pos[i] = len(read)
					read = append(read, f.Name)
				}
			}
			for i := range idx {
				idx[i] = pos[idx[i]]
			}
			for i := range preds {
				preds[i].col = pos[preds[i].col]
			}
		}
		opts.Columns, opts.Filter, opts.Expect, opts.Unordered = read, ps.filter, sc, true
		r, err = e.ls.ScanWith(ctx, ps.ref.db, ps.ref.table, opts)
	}
	if err != nil {
		return nil, false, partErr(p, mapErr(err))
	}
	if len(preds) > 0 && !schemaOnly {
		r = newFilterReader(ctx, e.mem, r, preds)
	}
	if idx != nil {
		return arrowutil.NewProjectReader(r, idx), true, nil
	}
	return r, true, nil
}

func cleanDuckErr(err error) string {
	return strings.TrimSpace(err.Error())
}

// SystemDatabase holds flightd's system tables: sys.tiering,
// sys.statements and sys.nodes.
const SystemDatabase = "sys"

// The system tables of SystemDatabase.
const (
	tieringTable = "tiering" // lakestream.StatusSchema
	nodesTable   = "nodes"   // lakestream.NodesSchema
)

// scan opens the reader behind a resolved reference.
func (e *Engine) scan(ctx context.Context, r tableRef) (array.RecordReader, error) {
	if r.system {
		switch r.table {
		case statementsTable:
			return e.statementsReader()
		case nodesTable:
			return e.ls.Nodes(ctx, e.cluster)
		}
		return e.ls.StatusIn(ctx, e.cluster)
	}
	if r.meta != "" {
		return e.ls.Meta(ctx, r.db, r.table, r.meta)
	}
	if r.changelog {
		return e.ls.Changelog(ctx, r.db, r.table)
	}
	return e.ls.ScanWith(ctx, r.db, r.table, lakestream.ScanOptions{Realtime: r.realtime, ReadOptimized: r.ro})
}

// refSchema is the Arrow schema of the rows behind a reference: a time
// travel's are the columns of its snapshot's schema.
func (e *Engine) refSchema(ctx context.Context, r tableRef) (*arrow.Schema, error) {
	switch {
	case r.system && r.table == statementsTable:
		return StatementsSchema, nil
	case r.system && r.table == nodesTable:
		return lakestream.NodesSchema, nil
	case r.system:
		return lakestream.StatusSchema, nil
	case r.meta != "":
		return e.ls.MetaSchema(ctx, r.db, r.table, r.meta)
	case r.changelog:
		return e.ls.ChangelogSchema(ctx, r.db, r.table)
	case r.snapshot > 0:
		return e.ls.TravelSchema(ctx, r.db, r.table, lakestream.Cut{Snapshot: r.snapshot, Tag: r.tag})
	}
	return e.ls.ArrowSchema(ctx, r.db, r.table)
}

// resolver resolves references in the session of ctx.
func (e *Engine) resolver(ctx context.Context) resolver {
	session := engine.Database(ctx)
	return func(schema, table string) (tableRef, bool, error) { return e.resolve(ctx, session, schema, table) }
}

// resolve maps a DuckDB base-table reference to a flightd table; an
// unqualified name is looked up in the session's database.
func (e *Engine) resolve(ctx context.Context, session, schema, table string) (tableRef, bool, error) {
	if strings.EqualFold(schema, SystemDatabase) {
		for _, t := range []string{tieringTable, statementsTable, nodesTable} {
			if strings.EqualFold(table, t) {
				return tableRef{db: SystemDatabase, table: t, system: true}, true, nil
			}
		}
	}
	db := schema
	if db == "" {
		db = session
	}
	suffix := lakestream.ReservedSuffix(table)
	name := table[:len(table)-len(suffix)]
	realtime, changelog := suffix == lakestream.RealtimeSuffix, suffix == lakestream.ChangelogSuffix
	ro := suffix == lakestream.ReadOptimizedSuffix
	meta := lakestream.MetaSuffix(suffix)
	if _, err := e.ls.Table(ctx, db, name); err == nil {
		// spelled as stored: no listing (the table's metadata is cached)
		return tableRef{db: db, table: name, realtime: realtime, ro: ro, changelog: changelog, meta: meta}, true, nil
	}
	dbName, found, err := e.lookupDatabase(ctx, db)
	if err != nil {
		return tableRef{}, false, err
	}
	if !found {
		switch {
		case schema == "" && db != DefaultDatabase:
			return tableRef{}, false, fmt.Errorf("%w: the session's database %q does not exist any more (USE another, or qualify %s)", engine.ErrNotFound, db, table)
		case schema == "" || duckSchema(schema):
			return tableRef{}, false, nil // a DuckDB name, not ours
		}
		return tableRef{}, false, fmt.Errorf("%w: database %q does not exist (in %s.%s)", engine.ErrNotFound, schema, schema, table)
	}
	tables, err := e.ls.Tables(ctx, dbName)
	if err != nil {
		return tableRef{}, false, mapErr(err)
	}
	if t, ok := engine.FindName(tables, name); ok {
		return tableRef{db: dbName, table: t, realtime: realtime, ro: ro, changelog: changelog, meta: meta}, true, nil
	}
	if schema == "" && suffix == "" && !e.views.has(viewKey{schema: strings.ToLower(dbName), name: strings.ToLower(table)}) {
		return tableRef{}, false, nil // a DuckDB name (pg_class), or none
	}
	if realtime {
		return tableRef{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its real-time view %s", engine.ErrNotFound, dbName, name, table)
	}
	if changelog {
		return tableRef{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its changelog %s", engine.ErrNotFound, dbName, name, table)
	}
	if ro {
		return tableRef{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its read-optimized view %s", engine.ErrNotFound, dbName, name, table)
	}
	if meta != "" {
		return tableRef{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its system table %s", engine.ErrNotFound, dbName, name, table)
	}
	return tableRef{}, false, fmt.Errorf("%w: table %s.%s does not exist", engine.ErrNotFound, dbName, table)
}

// duckSchema reports whether schema is one of DuckDB's own, whose tables
// and views describe the catalog (information_schema.tables) and are left
// to DuckDB unless a flightd database has that name.
func duckSchema(schema string) bool {
	switch strings.ToLower(schema) {
	case "information_schema", "pg_catalog":
		return true
	}
	return false
}

// callsCatalogFunction reports whether the parse tree calls one of
// DuckDB's table functions that list its catalog (duckdb_views(),
// duckdb_columns(), pragma_table_info(), ...).
func callsCatalogFunction(n any) bool {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if callsCatalogFunction(c) {
				return true
			}
		}
	case *object:
		if v.get("type") == "TABLE_FUNCTION" {
			if f, _ := v.get("function").(*object); f != nil {
				name, _ := f.get("function_name").(string)
				name = strings.ToLower(name)
				if strings.HasPrefix(name, "duckdb_") || strings.HasPrefix(name, "pragma_") {
					return true
				}
			}
		}
		for _, k := range v.keys {
			if callsCatalogFunction(v.vals[k]) {
				return true
			}
		}
	}
	return false
}

func (e *Engine) lookupDatabase(ctx context.Context, db string) (string, bool, error) {
	dbs, err := e.ls.Databases(ctx)
	if err != nil {
		return "", false, err
	}
	d, found := engine.FindName(dbs, db)
	return d, found, nil
}

// Databases lists databases.
func (e *Engine) Databases(ctx context.Context) ([]string, error) { return e.ls.Databases(ctx) }

// columnInfos are the declared types of sc's fields, found by name in ts;
// nil unless every field is there.
func columnInfos(ts *lake.TableSchema, sc *arrow.Schema) []engine.ColumnInfo {
	out := make([]engine.ColumnInfo, sc.NumFields())
	for i, f := range sc.Fields() {
		j := ts.FieldIndex(f.Name)
		if j < 0 {
			return nil
		}
		t := ts.Fields[j].Type
		c := engine.ColumnInfo{TypeName: t.WithNullable(true).String()}
		switch t.Root {
		case lake.TypeDecimal:
			c.Precision, c.Scale = int32(t.Precision), int32(t.Scale)
		case lake.TypeChar, lake.TypeVarChar, lake.TypeBinary, lake.TypeVarBinary:
			c.Precision = int32(t.Length)
		case lake.TypeTime, lake.TypeTimestamp, lake.TypeTimestampLTZ:
			c.Precision = int32(t.Precision)
		}
		out[i] = c
	}
	return out
}

// Tables lists db's tables, each followed by its t$rt view when enabled.
func (e *Engine) Tables(ctx context.Context, db string) ([]engine.TableInfo, error) {
	ctx = lakestream.Planning(ctx) // each table checked once
	names, err := e.ls.Tables(ctx, db)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []engine.TableInfo
	for _, n := range names {
		t, err := e.ls.Table(ctx, db, n)
		if err != nil {
			continue // dropped meanwhile, or unreadable: listed tables must open
		}
		sc, err := e.ls.ArrowSchema(ctx, db, n)
		if err != nil {
			continue
		}
		keys := t.Schema().PrimaryKeys
		cols := columnInfos(t.Schema(), sc)
		out = append(out, engine.TableInfo{Database: db, Name: n, Type: "TABLE", Schema: sc, PrimaryKeys: keys, Columns: cols})
		if lakestream.Realtime(t) {
			out = append(out, engine.TableInfo{Database: db, Name: n + lakestream.RealtimeSuffix, Type: "VIEW", Schema: sc, PrimaryKeys: keys, Columns: cols})
			if cs, err := e.ls.ChangelogSchema(ctx, db, n); err == nil {
				out = append(out, engine.TableInfo{Database: db, Name: n + lakestream.ChangelogSuffix, Type: "VIEW", Schema: cs})
			}
		}
	}
	return out, nil
}
