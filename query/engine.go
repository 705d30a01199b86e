//go:build duckdb_arrow

package query

import (
	"cmp"
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"log/slog"
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
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/ddl"
	"github.com/flightd/flightd/query/ingest"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// Engine implements engine.Engine over DuckDB and lakestream.
type Engine struct {
	ls    *lakestream.Service
	drain lakestream.DrainFunc
	// maintenance runs Paimon's maintenance procedures (Options.Maintenance; may be nil).
	maintenance Maintenance
	conn        *duckdb.Connector
	pool        connPool
	mem         memory.Allocator
	lg          *slog.Logger
	// shapes are the parse trees of statement shapes seen (plan.ShapeCache).
	shapes plan.ShapeCache
	// catalog runs DDL, USE and SET; writer converts and writes batches.
	catalog *ddl.Catalog
	writer  *ingest.Writer
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
	// unbounded; the writer's Options.Budget).
	ingestMem *membudget.Budget
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
	e := &Engine{ls: ls, drain: opts.Drain, maintenance: opts.Maintenance, conn: c, mem: opts.Allocator, lg: opts.Logger,
		guard: memguard.New(opts.MemoryCeiling, nil), stopGuard: make(chan struct{}), partRows: opts.PartRows,
		admission: opts.Admission, cluster: opts.Cluster, catalog: ddl.New(ls, opts.Drain)}
	if e.cluster == nil {
		e.cluster = lakestream.Alone("", time.Now())
	}
	if opts.IngestMemory > 0 {
		e.ingestMem = membudget.New(opts.IngestMemory)
	}
	e.writer = ingest.New(ls, ingest.Options{Allocator: opts.Allocator, Budget: e.ingestMem,
		Reserve: cmp.Or(opts.IngestReserve, 64<<20), Wait: cmp.Or(opts.IngestWait, time.Minute), QueueBytes: opts.ingestQueueBytes})
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

// Analyze implements engine.Engine: package plan reads the statement.
func (e *Engine) Analyze(sql string) engine.Statement { return plan.Analyze(sql) }

// statementOf is st as package plan read it: st itself when this engine
// analysed it, else its text read now.
func statementOf(st engine.Statement) *plan.Statement {
	if p, ok := st.(*plan.Statement); ok {
		return p
	}
	return plan.Analyze(st.SQL())
}

// Execute runs one statement.
func (e *Engine) Execute(ctx context.Context, est engine.Statement) (engine.Result, error) {
	st := statementOf(est)
	if err := st.Check(); err != nil {
		return engine.Result{}, err
	}
	sql := st.SQL()
	switch kind := st.Class(); kind {
	case sqlparse.KindQuery:
		r, err := e.query(ctx, st, false)
		if err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Schema: r.Schema(), Reader: r, Affected: -1}, nil
	case sqlparse.KindInsert:
		n, err := e.insert(ctx, st)
		return engine.Result{Update: true, Affected: n}, err
	case sqlparse.KindInsertOverwrite, sqlparse.KindUpdate, sqlparse.KindDelete:
		return engine.Result{}, fmt.Errorf("%w: %s is not supported on lake-stream tables: it would rewrite committed lake data while the log may hold newer values for the same rows; write changes as rows instead (upsert by primary key, or ingest a batch with a change-kind column)", engine.ErrInvalid, kind)
	case sqlparse.KindUse:
		db, err := e.catalog.Use(ctx, sql)
		return engine.Result{Update: true, Affected: 0, Database: db}, err
	case sqlparse.KindSet:
		on, err := ddl.SetStreaming(sql)
		if err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Update: true, Affected: 0, Streaming: &on}, nil
	case sqlparse.KindCall:
		n, err := e.call(ctx, sql)
		return engine.Result{Update: true, Affected: n}, err
	case sqlparse.KindOther:
		return engine.Result{}, e.refuse(ctx, sql)
	default:
		gone, err := e.catalog.Run(ctx, kind, sql)
		if err == nil && gone != nil {
			err = e.dropViews(ctx, gone.Database, gone.Table)
		}
		return engine.Result{Update: true, Affected: 0}, err
	}
}

// Prepare describes a statement. A query's schema is its prepared
// statement's (schemaOnly in queryWith): nothing of it runs.
func (e *Engine) Prepare(ctx context.Context, est engine.Statement) (engine.Prepared, error) {
	st := statementOf(est)
	if err := st.Check(); err != nil {
		return engine.Prepared{}, err
	}
	if ps, n, err := st.Params(); err != nil || n > 0 {
		if err != nil {
			return engine.Prepared{}, invalid(err)
		}
		return e.prepareParams(ctx, st, ps, n)
	}
	switch st.Class() {
	case sqlparse.KindQuery:
	case sqlparse.KindOther:
		return engine.Prepared{}, e.refuse(ctx, st.SQL())
	default:
		return engine.Prepared{Update: true}, nil
	}
	r, err := e.query(ctx, st, true)
	if err != nil {
		return engine.Prepared{}, err
	}
	defer r.Release()
	return engine.Prepared{DatasetSchema: r.Schema()}, nil
}

// Bind implements engine.Engine (plan.Bind).
func (e *Engine) Bind(st engine.Statement, params arrow.RecordBatch) ([]string, error) {
	return plan.Bind(statementOf(st), params)
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
	return fmt.Errorf("%w: %s statements are not allowed; flightd runs queries, INSERT INTO, and CREATE/DROP/ALTER of databases and tables (qualify table names as db.table; unqualified names resolve in the session's database, now %q)", engine.ErrInvalid, plan.KindName(sql), engine.Database(ctx))
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

func invalid(err error) error { return fmt.Errorf("%w: %w", engine.ErrInvalid, err) }

// plainScan streams a scan of one table without DuckDB. ok is false when
// the statement should go to DuckDB after all (a column name that does not
// exist, so that DuckDB reports it in its words).
//
// With a part (from Partition), it reads that part of the cut the statement
// was planned at.
func (e *Engine) plainScan(ctx context.Context, ps plan.Scan, p *plan.Part, schemaOnly bool) (array.RecordReader, bool, error) {
	if p != nil && ps.Ref.Whole() {
		return nil, false, fmt.Errorf("%w: the ticket names a part of a scan of %s.%s, which flightd does not split", engine.ErrInvalid, ps.Ref.DB, ps.Ref.Table)
	}
	opts := lakestream.ScanOptions{Realtime: ps.Ref.Realtime, ReadOptimized: ps.Ref.RO}
	if p != nil {
		if (p.Cut.Log != nil) != ps.Ref.Realtime {
			return nil, false, fmt.Errorf("%w: the ticket's part was planned for another table", engine.ErrInvalid)
		}
		opts.At, opts.Split = &p.Cut, p.Split
	}
	sc, err := e.refSchema(ctx, ps.Ref)
	if err != nil {
		return nil, false, lakeerr.Map(err)
	}
	if afterSchema != nil {
		afterSchema()
	}
	var idx []int
	if ps.Columns != nil {
		var ok bool
		if idx, ok = plan.Project(sc, ps.Columns); !ok {
			return nil, false, nil
		}
	}
	preds, ok := expr.BindSchema(sc, ps.Filter)
	if !ok || (len(preds) > 0 && e.noPushdown.Load()) {
		return nil, false, nil
	}
	for i := range ps.Filter {
		ps.Filter[i].Column = sc.Field(preds[i].Col).Name
	}
	var r array.RecordReader
	switch {
	case schemaOnly:
		r, err = array.NewRecordReader(sc, nil)
	case p != nil && len(preds) == 0:
		opts.Expect = sc
		r, err = e.ls.ScanWith(ctx, ps.Ref.DB, ps.Ref.Table, opts)
	case ps.Ref.Whole() || len(preds) == 0:
		r, err = e.scan(ctx, ps.Ref)
		if err == nil && !arrowutil.SameColumns(r.Schema(), sc) {
			// changed by another engine since sc was read: idx and preds
			// would name other columns
			r.Release()
			r, err = nil, fmt.Errorf("%w (%s.%s)", lakestream.ErrSchemaChanged, ps.Ref.DB, ps.Ref.Table)
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
				need[p.Col] = true
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
				preds[i].Col = pos[preds[i].Col]
			}
		}
		opts.Columns, opts.Filter, opts.Expect, opts.Unordered = read, ps.Filter, sc, true
		r, err = e.ls.ScanWith(ctx, ps.Ref.DB, ps.Ref.Table, opts)
	}
	if err != nil {
		return nil, false, partErr(p, lakeerr.Map(err))
	}
	if len(preds) > 0 && !schemaOnly {
		r = expr.NewReader(ctx, e.mem, r, preds)
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
const SystemDatabase = ddl.SystemDatabase

// The system tables of SystemDatabase.
const (
	tieringTable = "tiering" // lakestream.StatusSchema
	nodesTable   = "nodes"   // lakestream.NodesSchema
)

// scan opens the reader behind a resolved reference.
func (e *Engine) scan(ctx context.Context, r plan.Ref) (array.RecordReader, error) {
	if r.System {
		switch r.Table {
		case statementsTable:
			return e.statementsReader()
		case nodesTable:
			return e.ls.Nodes(ctx, e.cluster)
		}
		return e.ls.StatusIn(ctx, e.cluster)
	}
	if r.Meta != "" {
		return e.ls.Meta(ctx, r.DB, r.Table, r.Meta)
	}
	if r.Changelog {
		return e.ls.Changelog(ctx, r.DB, r.Table)
	}
	return e.ls.ScanWith(ctx, r.DB, r.Table, lakestream.ScanOptions{Realtime: r.Realtime, ReadOptimized: r.RO})
}

// refSchema is the Arrow schema of the rows behind a reference: a time
// travel's are the columns of its snapshot's schema.
func (e *Engine) refSchema(ctx context.Context, r plan.Ref) (*arrow.Schema, error) {
	switch {
	case r.System && r.Table == statementsTable:
		return StatementsSchema, nil
	case r.System && r.Table == nodesTable:
		return lakestream.NodesSchema, nil
	case r.System:
		return lakestream.StatusSchema, nil
	case r.Meta != "":
		return e.ls.MetaSchema(ctx, r.DB, r.Table, r.Meta)
	case r.Changelog:
		return e.ls.ChangelogSchema(ctx, r.DB, r.Table)
	case r.Snapshot > 0:
		return e.ls.TravelSchema(ctx, r.DB, r.Table, lakestream.Cut{Snapshot: r.Snapshot, Tag: r.Tag})
	}
	return e.ls.ArrowSchema(ctx, r.DB, r.Table)
}

// resolver resolves references in the session of ctx.
func (e *Engine) resolver(ctx context.Context) plan.Resolver {
	session := engine.Database(ctx)
	return func(schema, table string) (plan.Ref, bool, error) { return e.resolve(ctx, session, schema, table) }
}

// resolve maps a DuckDB base-table reference to a flightd table; an
// unqualified name is looked up in the session's database.
func (e *Engine) resolve(ctx context.Context, session, schema, table string) (plan.Ref, bool, error) {
	if strings.EqualFold(schema, SystemDatabase) {
		for _, t := range []string{tieringTable, statementsTable, nodesTable} {
			if strings.EqualFold(table, t) {
				return plan.Ref{DB: SystemDatabase, Table: t, System: true}, true, nil
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
		return plan.Ref{DB: db, Table: name, Realtime: realtime, RO: ro, Changelog: changelog, Meta: meta}, true, nil
	}
	dbName, found, err := e.catalog.Database(ctx, db)
	if err != nil {
		return plan.Ref{}, false, err
	}
	if !found {
		switch {
		case schema == "" && db != DefaultDatabase:
			return plan.Ref{}, false, fmt.Errorf("%w: the session's database %q does not exist any more (USE another, or qualify %s)", engine.ErrNotFound, db, table)
		case schema == "" || plan.DuckSchema(schema):
			return plan.Ref{}, false, nil // a DuckDB name, not ours
		}
		return plan.Ref{}, false, fmt.Errorf("%w: database %q does not exist (in %s.%s)", engine.ErrNotFound, schema, schema, table)
	}
	tables, err := e.ls.Tables(ctx, dbName)
	if err != nil {
		return plan.Ref{}, false, lakeerr.Map(err)
	}
	if t, ok := engine.FindName(tables, name); ok {
		return plan.Ref{DB: dbName, Table: t, Realtime: realtime, RO: ro, Changelog: changelog, Meta: meta}, true, nil
	}
	if schema == "" && suffix == "" && !e.views.has(plan.ViewKey{Schema: strings.ToLower(dbName), Name: strings.ToLower(table)}) {
		return plan.Ref{}, false, nil // a DuckDB name (pg_class), or none
	}
	if realtime {
		return plan.Ref{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its real-time view %s", engine.ErrNotFound, dbName, name, table)
	}
	if changelog {
		return plan.Ref{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its changelog %s", engine.ErrNotFound, dbName, name, table)
	}
	if ro {
		return plan.Ref{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its read-optimized view %s", engine.ErrNotFound, dbName, name, table)
	}
	if meta != "" {
		return plan.Ref{}, false, fmt.Errorf("%w: table %s.%s does not exist, so neither does its system table %s", engine.ErrNotFound, dbName, name, table)
	}
	return plan.Ref{}, false, fmt.Errorf("%w: table %s.%s does not exist", engine.ErrNotFound, dbName, table)
}

// Databases lists databases.
func (e *Engine) Databases(ctx context.Context) ([]string, error) { return e.ls.Databases(ctx) }

// columnInfos are the declared types of sc's fields, found by name in ts;
// nil unless every field is there.
func columnInfos(ts *paimontype.TableSchema, sc *arrow.Schema) []engine.ColumnInfo {
	out := make([]engine.ColumnInfo, sc.NumFields())
	for i, f := range sc.Fields() {
		j := ts.FieldIndex(f.Name)
		if j < 0 {
			return nil
		}
		t := ts.Fields[j].Type
		c := engine.ColumnInfo{TypeName: t.WithNullable(true).String()}
		switch t.Root {
		case paimontype.TypeDecimal:
			c.Precision, c.Scale = int32(t.Precision), int32(t.Scale)
		case paimontype.TypeChar, paimontype.TypeVarChar, paimontype.TypeBinary, paimontype.TypeVarBinary:
			c.Precision = int32(t.Length)
		case paimontype.TypeTime, paimontype.TypeTimestamp, paimontype.TypeTimestampLTZ:
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
		return nil, lakeerr.Map(err)
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
