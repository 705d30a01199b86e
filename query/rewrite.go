package query

import "strings"

// tableRef is a reference to a flightd table found in a statement.
type tableRef struct {
	db, table string
	realtime  bool
	changelog bool // t$changelog
	system    bool // sys.tiering
}

// resolver decides what a BASE_TABLE reference names. It returns ok=false
// for names that are not flightd tables (they are left to DuckDB) and an
// error for names that look like flightd tables but do not exist.
type resolver func(schema, table string) (ref tableRef, ok bool, err error)

// rewriteTree replaces, in DuckDB's JSON parse tree, every base-table
// reference that resolve accepts by a reference to a view name chosen by
// name(ref). CTE names shadow tables of the same name when unqualified.
func rewriteTree(tree any, resolve resolver, name func(tableRef, *object) string) error {
	return walk(tree, map[string]bool{}, resolve, name)
}

func walk(n any, ctes map[string]bool, resolve resolver, name func(tableRef, *object) string) error {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if err := walk(c, ctes, resolve, name); err != nil {
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
			ref, ok, err := resolve(schema, table)
			if err != nil {
				return err
			}
			if ok {
				v.set("catalog_name", "")
				v.set("schema_name", "")
				v.set("table_name", name(ref, v))
				if a, _ := v.get("alias").(string); a == "" {
					v.set("alias", table)
				}
			}
			return nil
		}
		for _, k := range v.keys {
			if err := walk(v.vals[k], ctes, resolve, name); err != nil {
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
