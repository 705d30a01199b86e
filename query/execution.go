//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/memguard"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
)

// query runs a row-returning statement with flightd tables bound. With
// schemaOnly nothing of it runs where DuckDB allows: its result is empty,
// with the schema the statement's run streams.
func (e *Engine) query(ctx context.Context, st *plan.Statement, schemaOnly bool) (array.RecordReader, error) {
	r, err := e.queryWith(ctx, st, schemaOnly, nil)
	if errors.Is(err, lakestream.ErrSchemaChanged) {
		// Another engine changed a table between the schema this statement
		// was planned with and its scan (nothing was read yet): plan again.
		r, err = e.queryWith(ctx, st, schemaOnly, nil)
	}
	return r, err
}

// afterSchema, when set (by tests), runs after a scan's planning read the
// table's schema and before the scan starts.
var afterSchema func()

// queryWith is query; with describe, the statement is not run: describe
// gets the connection with the statement's tables bound and the SQL that
// DuckDB would run, and queryWith returns its error and no reader.
//
// The steps, each an execution method: open (a connection, and the tree
// the statement was parsed into), withoutDuckDB (streaming reads, plain
// scans), bind (what each name reads), register (the scans and views
// DuckDB reads them through), then run, or describe.
func (e *Engine) queryWith(ctx context.Context, st *plan.Statement, schemaOnly bool, describe func(c *conn, run string) error) (array.RecordReader, error) {
	// The statement's lookups of a table's metadata check it once; its
	// scans check it again (lakestream.Planning).
	ctx = lakestream.Planning(ctx)
	x, err := e.open(ctx, st, schemaOnly)
	if err != nil {
		return nil, err
	}
	owned := false // by the reader returned, which closes x when released
	defer func() {
		if !owned {
			x.close()
		}
	}()
	if r, ok, err := x.withoutDuckDB(ctx, schemaOnly, describe != nil); ok || err != nil {
		return r, err
	}
	if err := x.bind(ctx); err != nil {
		return nil, err
	}
	// Only statements DuckDB runs are guarded: plain scans stream and hold
	// a few batches.
	ctx = x.guard(ctx)
	if err := x.register(ctx); err != nil {
		return nil, err
	}
	if describe != nil {
		return nil, describe(x.c, x.text)
	}
	if schemaOnly && x.parsed && !x.explain {
		r, err := x.schema(ctx)
		if err != nil {
			return nil, x.failure(ctx, err)
		}
		return r, nil
	}
	r, err := e.run(ctx, x.c, x.text, x.close)
	if err != nil {
		return nil, x.failure(ctx, err)
	}
	owned = true
	return r, nil
}

// execution is one statement on DuckDB: its connection, the tree it is
// planned from, what its names read, and the scans and views DuckDB reads
// them through, held from open until close (when the result is released,
// or the statement failed).
type execution struct {
	e *Engine
	c *conn
	// tree is DuckDB's parse tree of the statement, or with explain of the
	// query it explains (parsed false: DuckDB gave none); parsedText is
	// the text the tree's locations are in, text what DuckDB runs.
	tree       *plan.Object
	parsed     bool
	explain    bool
	parsedText string
	text       string
	// readsCatalog is set when a name is DuckDB's, not a flightd table
	// (information_schema, pg_class, duckdb_views): the statement may read
	// DuckDB's catalog.
	readsCatalog bool
	keys         []plan.ViewKey // the views it reads, in the order named
	uses         map[plan.ViewKey]*refUse
	// current is the schema unqualified names are looked up in: the
	// session's views, if the statement reads any, else main, which
	// holds no flightd views.
	current   string
	token     string // of its sources, registered with e.scans
	sources   []*scanSource
	guardDone func()
	closed    bool
}

// refUse is what one statement reads through one view: the table and the
// hints of its references.
type refUse struct {
	ref   plan.Ref
	hints plan.Hints
}

// open takes a connection and the tree of st: its own, or for an EXPLAIN
// [ANALYZE] that DuckDB does not serialise, the explained query's.
func (e *Engine) open(ctx context.Context, st *plan.Statement, schemaOnly bool) (*execution, error) {
	c, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	x := &execution{e: e, c: c, text: st.SQL(), parsedText: st.SQL(), current: "main"}
	if x.tree, x.parsed, err = e.parse(ctx, c, st); err != nil {
		e.release(c)
		return nil, fmt.Errorf("query: serialise statement: %w", err)
	}
	if inner, analyze := st.Explains(); !x.parsed && inner != nil {
		if x.tree, x.parsed, err = e.parse(ctx, c, inner); err != nil {
			e.release(c)
			return nil, fmt.Errorf("query: serialise statement: %w", err)
		}
		x.explain, x.parsedText = true, inner.SQL()
		if schemaOnly && analyze {
			x.text = "EXPLAIN " + inner.SQL() // its columns, without running the query
		}
	}
	return x, nil
}

// close gives back what the execution holds, once.
func (x *execution) close() {
	if x.closed {
		return
	}
	x.closed = true
	if x.token != "" {
		x.e.scans.remove(x.token)
		// A statement on the connection also ends the finished one's
		// execution in DuckDB, which holds its scans until then.
		_ = x.c.setToken(context.Background(), "")
	}
	x.e.release(x.c)
	if x.guardDone != nil {
		x.guardDone()
	}
}

// resolver is the engine's resolver in the session of ctx, noting the
// names that are DuckDB's.
func (x *execution) resolver(ctx context.Context) plan.Resolver {
	resolve := x.e.resolver(ctx)
	return func(schema, table string) (plan.Ref, bool, error) {
		r, ok, err := resolve(schema, table)
		if err == nil && !ok {
			x.readsCatalog = true
		}
		return r, ok, err
	}
}

// withoutDuckDB runs what DuckDB need not: a streaming read, and a plain
// scan of one table (plainScan). ok is false when DuckDB runs the
// statement.
func (x *execution) withoutDuckDB(ctx context.Context, schemaOnly, describe bool) (r array.RecordReader, ok bool, err error) {
	part, err := plan.PartOf(ctx)
	if err != nil {
		return nil, true, err
	}
	if engine.Streaming(ctx) && !describe {
		// EXPLAIN is not a streaming read
		r, err := x.e.streamQuery(ctx, x.tree, x.parsed && !x.explain, schemaOnly)
		return r, true, err
	}
	if x.parsed && !describe && !x.explain {
		if ps, ok := plan.PlainScan(x.tree, x.resolver(ctx)); ok {
			if r, ok, err := x.e.plainScan(ctx, ps, part, schemaOnly); ok || err != nil {
				return r, true, err
			}
		}
	}
	if part != nil {
		return nil, true, fmt.Errorf("%w: the ticket names a part of a result, and its statement is not a scan flightd splits into parts", engine.ErrInvalid)
	}
	return nil, false, nil
}

// bind finds what each name the statement reads is (the view DuckDB looks
// it up as, the table or snapshot behind it, the hints that prune its
// scan), drops stale views when the statement reads DuckDB's catalog, and
// rewrites the text of time travels.
func (x *execution) bind(ctx context.Context) error {
	if !x.parsed {
		return nil
	}
	session := strings.ToLower(engine.Database(ctx)) // the schema of unqualified names' views
	hs := plan.HintsOf(x.tree)
	var travels []plan.Travel
	x.uses = map[plan.ViewKey]*refUse{}
	err := plan.FindRefs(x.tree, x.resolver(ctx), session, func(k plan.ViewKey, r plan.Ref, node *plan.Object) error {
		if at, _ := node.Get("at_clause").(*plan.Object); at != nil {
			var err error
			if k, r, err = x.e.travel(ctx, x.parsedText, k, r, node, at, &travels); err != nil {
				return err
			}
		}
		h := hs.Of(node)
		if x.e.noPushdown.Load() {
			h = plan.Hints{}
		}
		if k.Schema == session {
			x.current = session
		}
		u, seen := x.uses[k]
		if !seen {
			x.uses[k] = &refUse{ref: r, hints: h}
			x.keys = append(x.keys, k)
			return nil
		}
		if u.ref != r {
			return fmt.Errorf("%w: %s.%s names both %s.%s and %s.%s in one statement; qualify it", engine.ErrInvalid, k.Schema, k.Name, u.ref.DB, u.ref.Table, r.DB, r.Table)
		}
		// Several references read one scan each, pruned by what
		// they all allow.
		if !reflect.DeepEqual(u.hints, h) {
			u.hints = plan.Hints{}
		}
		return nil
	})
	if err != nil {
		return err
	}
	shows, unqualified := plan.ShowsCatalog(x.tree)
	if x.readsCatalog || shows || plan.CallsCatalogFunction(x.tree) {
		// It lists the views: those of tables other processes
		// dropped, renamed or altered go first, and every table of
		// the warehouse has one.
		if err := x.e.dropStaleViews(ctx, x.c); err != nil {
			return err
		}
		x.addWarehouseTables(ctx)
		if unqualified {
			x.current = session // SHOW TABLES lists the session's database
		}
	}
	if len(travels) > 0 {
		// The statement reads the views of the snapshots it travels to.
		rewritten := plan.RewriteTravels(x.parsedText, travels)
		x.text = x.text[:len(x.text)-len(x.parsedText)] + rewritten
	}
	return nil
}

// addWarehouseTables makes the statement register a view for every table
// of the warehouse that has none (a table no statement named since the
// server started, or whose view went stale), so that DuckDB's catalog
// (information_schema, SHOW TABLES, duckdb_views()) lists every table.
// The views read nothing unless the statement scans them. A table whose
// schema cannot be read is left out of the listing.
func (x *execution) addWarehouseTables(ctx context.Context) {
	dbs, err := x.e.ls.Databases(ctx)
	if err != nil {
		x.e.lg.Warn("list databases for the catalog", "err", err)
		return
	}
	x.e.views.mu.Lock()
	have := make(map[plan.ViewKey]bool, len(x.e.views.have))
	for k := range x.e.views.have {
		have[k] = true
	}
	x.e.views.mu.Unlock()
	for _, db := range dbs {
		if strings.EqualFold(db, SystemDatabase) || plan.DuckSchema(db) {
			continue
		}
		tables, err := x.e.ls.Tables(ctx, db)
		if err != nil {
			x.e.lg.Warn("list tables for the catalog", "database", db, "err", err)
			continue
		}
		for _, t := range tables {
			k := plan.ViewKey{Schema: strings.ToLower(db), Name: strings.ToLower(t)}
			if _, used := x.uses[k]; used || have[k] {
				continue
			}
			r := plan.Ref{DB: db, Table: t}
			if _, err := x.e.refSchema(ctx, r); err != nil {
				continue // refused tables (merge engines flightd cannot read) are not listed
			}
			x.uses[k] = &refUse{ref: r}
			x.keys = append(x.keys, k)
		}
	}
}

// guard registers the statement with the memory guards, which cancel the
// context it returns when the process passes its memory ceiling or
// DuckDB's spill its bound.
func (x *execution) guard(ctx context.Context) context.Context {
	ctx, memDone := x.e.guard.Start(ctx)
	ctx, spillDone := x.e.spill.Start(ctx)
	x.guardDone = func() { spillDone(); memDone() }
	return ctx
}

// register makes each name the statement reads a view over the scan
// function (views.go, tablefn.go), whose source it registers under the
// statement's token: DuckDB's projection pushdown picks its columns, the
// hints' filters prune its files. The sources stay registered until the
// execution closes: DuckDB reads the scans as the caller reads the result.
func (x *execution) register(ctx context.Context) error {
	if len(x.keys) > 0 {
		srcs := make(map[plan.ViewKey]*scanSource, len(x.keys))
		schemas := make([]*arrow.Schema, len(x.keys))
		for i, k := range x.keys {
			u := x.uses[k]
			sc, err := x.e.refSchema(ctx, u.ref)
			if err != nil {
				return lakeerr.Map(err)
			}
			schemas[i] = sc
			src := &scanSource{e: x.e, ctx: ctx, ref: u.ref, hints: u.hints, schema: sc}
			srcs[k] = src
			x.sources = append(x.sources, src)
		}
		token, err := x.e.scans.add(srcs)
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		x.token = token
		if err := x.c.setToken(ctx, token); err != nil {
			return fmt.Errorf("query: %w", err)
		}
		for i, k := range x.keys {
			if err := x.e.ensureView(ctx, x.c, k, x.uses[k].ref, schemas[i]); err != nil {
				return fmt.Errorf("query: bind %s.%s: %w", x.uses[k].ref.DB, x.uses[k].ref.Table, err)
			}
		}
	}
	if x.current != "" && x.current != "main" {
		if err := x.e.ensureSchema(ctx, x.c, x.current); err != nil {
			return fmt.Errorf("query: schema %s: %w", x.current, err)
		}
	}
	return x.c.useSchema(ctx, x.current)
}

// schema is the result of the statement with no rows and the schema its
// run streams, from its prepared statement: nothing of it runs. A result
// with columns the row path builds (arrowResultTypes) takes its schema
// from the row path, which needs a result: the statement then runs under
// LIMIT 0, with the names of its own columns (renameColumns).
func (x *execution) schema(ctx context.Context) (array.RecordReader, error) {
	ds, err := x.c.prepareOne(x.text)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	if !x.e.forceRows.Load() && arrowResultTypes(ds) {
		sc, err := x.c.preparedSchema(ds)
		if err != nil {
			return nil, err
		}
		return array.NewRecordReader(sc, nil)
	}
	names, err := resultNames(ds)
	if err != nil {
		return nil, err
	}
	r, err := x.e.run(ctx, x.c, "SELECT * FROM ("+x.text+") AS __flightd_prepare LIMIT 0", x.close)
	if err != nil {
		return nil, err
	}
	return renameColumns(r, names)
}

// failure is the error a statement that failed on DuckDB with err
// reports: its scans' own errors first (a table that changed under it, the
// log unreachable), then the memory guards', then DuckDB's.
func (x *execution) failure(ctx context.Context, err error) error {
	for _, src := range x.sources {
		serr := src.firstErr()
		if serr != nil && errors.Is(serr, lakestream.ErrSchemaChanged) {
			return serr
		}
		// A scan that failed for a reason the engine has a code for
		// (the Kafka log unreachable: Unavailable) says so, rather
		// than as DuckDB's invalid statement.
		if m := lakeerr.Map(serr); serr != nil && m != serr {
			return m
		}
	}
	if viewAltered(err) {
		return fmt.Errorf("%w: %s", lakestream.ErrSchemaChanged, cleanDuckErr(err))
	}
	if cause := context.Cause(ctx); errors.Is(cause, memguard.ErrOverMemory) || errors.Is(cause, memguard.ErrOverSpill) {
		return cause
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, cause) {
		return err // cancelled while DuckDB started the statement
	}
	if errors.Is(err, engine.ErrInvalid) {
		return err
	}
	return fmt.Errorf("%w: %s", engine.ErrInvalid, cleanDuckErr(err))
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
