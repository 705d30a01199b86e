package plan

import (
	"fmt"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lakestream"
)

// Ref is what a table name in a statement stands for: a flightd table,
// one of its read-only names (t$rt, t$ro, t$changelog, t$snapshots, ...),
// a snapshot of it (time travel) or a system table.
type Ref struct {
	DB, Table string
	Realtime  bool   // t$rt: the lake and the log merged
	RO        bool   // t$ro: the top-level files only
	Changelog bool   // t$changelog
	System    bool   // sys.tiering, sys.statements, sys.nodes (Table)
	Meta      string // a Paimon system table: lakestream.SnapshotsSuffix, ...
	// Snapshot and Tag: a time travel (t AT (...)) reads that snapshot of
	// the lake, or that tag's; 0 and "": the latest.
	Snapshot int64
	Tag      string
}

// Whole reports whether the reference is read whole: it has no
// projection, pruning or parts (sys.tiering, t$changelog, t$snapshots, ...).
func (r Ref) Whole() bool { return r.System || r.Changelog || r.Meta != "" }

// Written is the name the reference was written with (t$rt,
// t$changelog, ...).
func (r Ref) Written() string {
	switch {
	case r.Realtime:
		return r.Table + lakestream.RealtimeSuffix
	case r.RO:
		return r.Table + lakestream.ReadOptimizedSuffix
	case r.Changelog:
		return r.Table + lakestream.ChangelogSuffix
	case r.Meta != "":
		return r.Table + r.Meta
	}
	return r.Table
}

// Resolver decides what a BASE_TABLE reference names. It returns ok=false
// for names that are not flightd tables (they are left to DuckDB) and an
// error for names that look like flightd tables but do not exist.
type Resolver func(schema, table string) (ref Ref, ok bool, err error)

// ViewKey is where DuckDB looks a base-table reference up: the schema as
// written (the session's database when unqualified) and the name, lower
// case, as DuckDB compares names. A flightd table is a view of that name,
// so the statement runs as written.
type ViewKey struct{ Schema, Name string }

// FindRefs calls visit for every base-table reference in DuckDB's JSON
// parse tree that resolve accepts, with where DuckDB looks it up: an
// unqualified name in session, the schema of the session database's views.
// CTE names shadow tables of the same name when unqualified.
func FindRefs(tree any, resolve Resolver, session string, visit func(ViewKey, Ref, *Object) error) error {
	w := refWalk{resolve: resolve, session: session, visit: visit}
	return w.walk(tree, map[string]bool{})
}

type refWalk struct {
	resolve Resolver
	session string
	visit   func(ViewKey, Ref, *Object) error
}

func (w *refWalk) walk(n any, ctes map[string]bool) error {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if err := w.walk(c, ctes); err != nil {
				return err
			}
		}
	case *Object:
		if cm, ok := v.Get("cte_map").(*Object); ok {
			if entries, ok := cm.Get("map").([]any); ok && len(entries) > 0 {
				inner := make(map[string]bool, len(ctes)+len(entries))
				for k := range ctes {
					inner[k] = true
				}
				for _, e := range entries {
					if em, ok := e.(*Object); ok {
						if k, ok := em.Get("key").(string); ok {
							inner[strings.ToLower(k)] = true
						}
					}
				}
				ctes = inner
			}
		}
		if v.Get("type") == "BASE_TABLE" {
			schema, _ := v.Get("schema_name").(string)
			table, _ := v.Get("table_name").(string)
			if schema == "" && ctes[strings.ToLower(table)] {
				return nil
			}
			ref, ok, err := w.resolve(schema, table)
			if err != nil || !ok {
				return err
			}
			if catalog, _ := v.Get("catalog_name").(string); catalog != "" {
				return fmt.Errorf("%w: %s.%s.%s: flightd tables are named db.table, without a catalog", engine.ErrInvalid, catalog, schema, table)
			}
			k := ViewKey{Schema: strings.ToLower(schema), Name: strings.ToLower(table)}
			if k.Schema == "" {
				k.Schema = w.session
			}
			return w.visit(k, ref, v)
		}
		for _, k := range v.keys {
			if err := w.walk(v.vals[k], ctes); err != nil {
				return err
			}
		}
	}
	return nil
}

// DuckSchema reports whether schema is one of DuckDB's own, whose tables
// and views describe the catalog (information_schema.tables) and are left
// to DuckDB unless a flightd database has that name.
func DuckSchema(schema string) bool {
	switch strings.ToLower(schema) {
	case "information_schema", "pg_catalog":
		return true
	}
	return false
}

// CallsCatalogFunction reports whether the parse tree calls one of
// DuckDB's table functions that list its catalog (duckdb_views(),
// duckdb_columns(), pragma_table_info(), ...).
func CallsCatalogFunction(n any) bool {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if CallsCatalogFunction(c) {
				return true
			}
		}
	case *Object:
		if v.Get("type") == "TABLE_FUNCTION" {
			if f, _ := v.Get("function").(*Object); f != nil {
				name, _ := f.Get("function_name").(string)
				name = strings.ToLower(name)
				if strings.HasPrefix(name, "duckdb_") || strings.HasPrefix(name, "pragma_") {
					return true
				}
			}
		}
		for _, k := range v.keys {
			if CallsCatalogFunction(v.vals[k]) {
				return true
			}
		}
	}
	return false
}

// ShowsCatalog reports whether the parse tree lists DuckDB's catalog with
// SHOW: SHOW TABLES, SHOW ALL TABLES, SHOW TABLES FROM db (DESCRIBE of a
// table reads that table, and is found as its reference). unqualified
// says a SHOW TABLES without FROM, which lists the current schema.
func ShowsCatalog(n any) (shows, unqualified bool) {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if s, u := ShowsCatalog(c); s {
				return s, u
			}
		}
	case *Object:
		if v.Get("type") == "SHOW_REF" && v.Get("query") == nil {
			return true, v.Get("show_type") == "SHOW_UNQUALIFIED"
		}
		for _, k := range v.keys {
			if s, u := ShowsCatalog(v.vals[k]); s {
				return s, u
			}
		}
	}
	return false, false
}

// ReadsNoData reports whether every table the parse tree reads is a system
// table or none (FROM-less SELECTs, DuckDB's catalog views): no scan of a
// flightd table, no table function such as range().
func ReadsNoData(n any, resolve Resolver) bool {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if !ReadsNoData(c, resolve) {
				return false
			}
		}
	case *Object:
		switch v.Get("type") {
		case "TABLE_FUNCTION":
			return false
		case "BASE_TABLE":
			schema, _ := v.Get("schema_name").(string)
			table, _ := v.Get("table_name").(string)
			ref, ours, err := resolve(schema, table)
			if err != nil {
				return false
			}
			if ours {
				return ref.System
			}
			return DuckSchema(schema)
		}
		for _, k := range v.keys {
			if !ReadsNoData(v.vals[k], resolve) {
				return false
			}
		}
	}
	return true
}

// QuoteIdent quotes an identifier for DuckDB.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
