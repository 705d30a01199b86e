//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/plan"
)

// DuckDB reads flightd's tables through views in its own catalog, one per
// name a statement uses: the view shop."t$rt" is
//
//	SELECT * FROM __flightd_scan('shop', 't$rt', getvariable('__flightd_query'))
//
// and an unqualified t is the view of the session's database (shop.t after
// USE shop), DuckDB's current schema while the statement runs. So the
// statement runs exactly as the client wrote it: DuckDB's binder resolves
// the names (CTEs shadow them, as in DuckDB), and column names built from
// expressions are DuckDB's own. Before it runs, the engine registers the
// statement's scans under a token (scanRegistry) and sets the token as the
// connection's variable, which the view hands to the scan function's bind:
// the same view serves every connection, each with its own scans.
//
// A view stores the types it was bound with; it is created the first time
// a name is used, or for every table a statement that reads the catalog
// finds without one (execution.addWarehouseTables), and replaced when its
// table's schema changes. A statement
// bound while another replaces the view fails with "Contents of view were
// altered", which is retried as a schema change (query).
//
// Other processes (flightd nodes on the same warehouse, Java Paimon) drop,
// rename and alter tables behind this one's views. A statement that reads
// a table checks it (lakestream), so its views never answer for a table
// that is gone; a statement that reads DuckDB's catalog (information_schema,
// pg_catalog, duckdb_views(), ...) first drops the views whose table is
// gone, whose log is off (t$rt, t$changelog) or whose columns changed
// (dropStaleViews), so the catalog lists what this process's statements
// would read now.

// queryVariable is the DuckDB variable that holds the running statement's
// token on its connection.
const queryVariable = "__flightd_query"

// viewSet is the views the engine created, with the schema each was bound
// with.
type viewSet struct {
	mu      sync.Mutex
	have    map[plan.ViewKey]*viewEntry
	schemas map[string]bool
	// known is every name a view was made for, also after dropViews
	// removed it: such a name, unqualified, is flightd's (see has).
	known map[plan.ViewKey]bool
}

// viewEntry is a view the engine made: what it reads and the schema it
// was bound with.
type viewEntry struct {
	ref    plan.Ref
	schema *arrow.Schema
}

// ensureView creates or replaces the view k of ref, bound with sc, on c,
// whose token variable names a source for k of that schema.
func (e *Engine) ensureView(ctx context.Context, c *conn, k plan.ViewKey, ref plan.Ref, sc *arrow.Schema) error {
	e.views.mu.Lock()
	defer e.views.mu.Unlock()
	if old, ok := e.views.have[k]; ok && old.schema.Equal(sc) {
		return nil
	}
	if err := e.ensureSchemaLocked(ctx, c, k.Schema); err != nil {
		return fmt.Errorf("query: schema for %s.%s: %w", k.Schema, k.Name, err)
	}
	q := fmt.Sprintf("CREATE OR REPLACE VIEW %s.%s AS SELECT * FROM %s(%s, %s, getvariable(%s))",
		plan.QuoteIdent(k.Schema), plan.QuoteIdent(k.Name), scanFunction, quoteString(k.Schema), quoteString(k.Name), quoteString(queryVariable))
	if err := c.exec(ctx, q); err != nil {
		delete(e.views.have, k)
		return fmt.Errorf("query: view of %s.%s: %w", k.Schema, k.Name, err)
	}
	if e.views.have == nil {
		e.views.have = map[plan.ViewKey]*viewEntry{}
	}
	e.views.have[k] = &viewEntry{ref: ref, schema: sc}
	if e.views.known == nil {
		e.views.known = map[plan.ViewKey]bool{}
	}
	e.views.known[k] = true
	return nil
}

// ensureSchema creates DuckDB's schema of a flightd database, where its
// views go (SHOW TABLES lists the session's database's schema, which has
// no view while the database has no table).
func (e *Engine) ensureSchema(ctx context.Context, c *conn, schema string) error {
	e.views.mu.Lock()
	defer e.views.mu.Unlock()
	return e.ensureSchemaLocked(ctx, c, schema)
}

func (e *Engine) ensureSchemaLocked(ctx context.Context, c *conn, schema string) error {
	if e.views.schemas[schema] {
		return nil
	}
	if err := c.exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+plan.QuoteIdent(schema)); err != nil {
		return err
	}
	if e.views.schemas == nil {
		e.views.schemas = map[string]bool{}
	}
	e.views.schemas[schema] = true
	return nil
}

// has reports whether the view k was created (and maybe dropped since): an
// unqualified name that is not a table any more is reported as missing,
// not left to DuckDB.
func (v *viewSet) has(k plan.ViewKey) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.known[k]
}

// useSchema makes schema DuckDB's current schema on c, where it looks
// unqualified names up: the session database's views, or main, which
// holds none of flightd's.
func (c *conn) useSchema(ctx context.Context, schema string) error {
	if c.schema == schema || c.schema == "" && schema == "main" {
		return nil
	}
	if err := c.exec(ctx, "SET schema = "+quoteString(schema)); err != nil {
		return fmt.Errorf("query: current schema %s: %w", schema, err)
	}
	c.schema = schema
	return nil
}

// setToken makes tok the statement token of c's next statement.
func (c *conn) setToken(ctx context.Context, tok string) error {
	return c.exec(ctx, "SET VARIABLE "+queryVariable+" = "+quoteString(tok))
}

func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// viewAltered reports whether err is DuckDB's refusal of a view whose
// table changed between its creation and a statement's binding.
func viewAltered(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Contents of view were altered")
}

// dropViews removes the views of table db.name and of its read-only names
// (t$rt, t$changelog, ...) once the table is gone from that name (dropped
// or renamed): DuckDB's catalog (information_schema, SHOW TABLES) no longer
// lists them, and a table made under the name later gets views of its own.
// The names stay known (has), so a statement naming them is told the table
// does not exist.
func (e *Engine) dropViews(ctx context.Context, db, name string) error {
	schema, base := strings.ToLower(db), strings.ToLower(name)
	e.views.mu.Lock()
	defer e.views.mu.Unlock()
	var gone []plan.ViewKey
	for k := range e.views.have {
		if k.Schema != schema {
			continue
		}
		if suffix := lakestream.ReservedSuffix(k.Name); k.Name == base || suffix != "" && k.Name[:len(k.Name)-len(suffix)] == base {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	c, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer e.release(c)
	for _, k := range gone {
		if err := c.exec(ctx, "DROP VIEW IF EXISTS "+plan.QuoteIdent(k.Schema)+"."+plan.QuoteIdent(k.Name)); err != nil {
			return fmt.Errorf("query: drop the view of %s.%s: %w", k.Schema, k.Name, err)
		}
		delete(e.views.have, k)
	}
	return nil
}

// dropStaleViews drops, on c, the views whose table is gone (dropped or
// renamed, by any process), whose log was switched off (t$rt,
// t$changelog) or whose columns changed since the view was made: a
// statement about to read DuckDB's catalog then finds the tables as this
// process's next statement would read them, not as it last read them. A
// view dropped here is made again by the next statement that reads it. It
// costs a metadata check (lakestream) per view, so it runs only for such
// statements; a view that cannot be checked stays.
func (e *Engine) dropStaleViews(ctx context.Context, c *conn) error {
	e.views.mu.Lock()
	have := make(map[plan.ViewKey]*viewEntry, len(e.views.have))
	for k, v := range e.views.have {
		have[k] = v
	}
	e.views.mu.Unlock()
	var stale []plan.ViewKey
	for k, v := range have {
		if e.viewStale(ctx, v) {
			stale = append(stale, k)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	e.views.mu.Lock()
	defer e.views.mu.Unlock()
	for _, k := range stale {
		if e.views.have[k] != have[k] {
			continue // replaced meanwhile, by a statement that read its table
		}
		if err := c.exec(ctx, "DROP VIEW IF EXISTS "+plan.QuoteIdent(k.Schema)+"."+plan.QuoteIdent(k.Name)); err != nil {
			return fmt.Errorf("query: drop the view of %s.%s: %w", k.Schema, k.Name, err)
		}
		delete(e.views.have, k)
	}
	return nil
}

// viewStale reports whether the view v no longer reads what it was made
// for (see dropStaleViews).
func (e *Engine) viewStale(ctx context.Context, v *viewEntry) bool {
	r := v.ref
	if r.System {
		return false
	}
	gone := func(err error) bool {
		return errors.Is(err, lake.ErrTableNotFound) || errors.Is(err, lake.ErrDatabaseNotFound) ||
			errors.Is(err, lakestream.ErrNotRealtime) || errors.Is(err, lakestream.ErrNoSnapshot) || errors.Is(err, fs.ErrNotExist)
	}
	if r.Realtime || r.Changelog {
		t, err := e.ls.Table(ctx, r.DB, r.Table)
		if err != nil {
			return gone(err)
		}
		if !lakestream.Realtime(t) {
			return true
		}
	}
	sc, err := e.refSchema(ctx, r)
	if err != nil {
		return gone(err)
	}
	return !sc.Equal(v.schema)
}
