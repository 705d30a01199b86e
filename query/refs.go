package query

import (
	"fmt"
	"strings"

	"github.com/flightd/flightd/engine"
)

// tableRef is a reference to a flightd table found in a statement.
type tableRef struct {
	db, table string
	realtime  bool
	ro        bool   // t$ro: the top-level files only
	changelog bool   // t$changelog
	system    bool   // sys.tiering, sys.statements, sys.nodes (table)
	meta      string // a Paimon system table: lakestream.SnapshotsSuffix, ...
	// snapshot and tag: a time travel (t AT (...)) reads that snapshot of
	// the lake, or that tag's (travel.go); 0 and "": the latest.
	snapshot int64
	tag      string
}

// whole reports whether the reference is read whole, through Engine.scan:
// it has no projection, pruning or parts (sys.tiering, t$changelog, t$snapshots, ...).
func (r tableRef) whole() bool { return r.system || r.changelog || r.meta != "" }

// resolver decides what a BASE_TABLE reference names. It returns ok=false
// for names that are not flightd tables (they are left to DuckDB) and an
// error for names that look like flightd tables but do not exist.
type resolver func(schema, table string) (ref tableRef, ok bool, err error)

// viewKey is where DuckDB looks a base-table reference up: the schema as
// written (the session's database when unqualified) and the name, lower
// case, as DuckDB compares names. A flightd table is a view of that name
// (views.go), so the statement runs as written.
type viewKey struct{ schema, name string }

// findRefs calls visit for every base-table reference in DuckDB's JSON
// parse tree that resolve accepts, with where DuckDB looks it up: an
// unqualified name in session, the schema of the session database's views.
// CTE names shadow tables of the same name when unqualified.
func findRefs(tree any, resolve resolver, session string, visit func(viewKey, tableRef, *object) error) error {
	w := refWalk{resolve: resolve, session: session, visit: visit}
	return w.walk(tree, map[string]bool{})
}

type refWalk struct {
	resolve resolver
	session string
	visit   func(viewKey, tableRef, *object) error
}

func (w *refWalk) walk(n any, ctes map[string]bool) error {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if err := w.walk(c, ctes); err != nil {
				return err
			}
		}
	case *object:
		if cm, ok := v.get("cte_map").(*object); ok {
			if entries, ok := cm.get("map").([]any); ok && len(entries) > 0 {
				inner := make(map[string]bool, len(ctes)+len(entries))
				for k := range ctes {
					inner[k] = true
				}
				for _, e := range entries {
					if em, ok := e.(*object); ok {
						if k, ok := em.get("key").(string); ok {
							inner[strings.ToLower(k)] = true
						}
					}
				}
				ctes = inner
			}
		}
		if v.get("type") == "BASE_TABLE" {
			schema, _ := v.get("schema_name").(string)
			table, _ := v.get("table_name").(string)
			if schema == "" && ctes[strings.ToLower(table)] {
				return nil
			}
			ref, ok, err := w.resolve(schema, table)
			if err != nil || !ok {
				return err
			}
			if catalog, _ := v.get("catalog_name").(string); catalog != "" {
				return fmt.Errorf("%w: %s.%s.%s: flightd tables are named db.table, without a catalog", engine.ErrInvalid, catalog, schema, table)
			}
			k := viewKey{schema: strings.ToLower(schema), name: strings.ToLower(table)}
			if k.schema == "" {
				k.schema = w.session
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

// parseTree decodes json_serialize_sql output. ok is false when DuckDB could
// not serialise the statement (not a plain SELECT, or a syntax error).
func parseTree(js string) (tree *object, ok bool) {
	v, err := decodeOrdered(js)
	if err != nil {
		return nil, false
	}
	tree, _ = v.(*object)
	if tree == nil {
		return nil, false
	}
	if e, _ := tree.get("error").(bool); e {
		return nil, false
	}
	return tree, true
}
