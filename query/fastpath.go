package query

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/lake"
)

// plainScan describes a statement that is only a scan of one flightd table:
// SELECT * | col, ... FROM t | t$rt [WHERE conjuncts], with nothing else,
// where every conjunct is column op constant as pushdown.go reads them. Such
// statements skip DuckDB and stream the scan straight to the client (the
// filter evaluated by filter.go), because passing a large result through
// DuckDB costs more than the scan itself, and planning a point query on
// DuckDB costs more than the lookup.
type plainScan struct {
	ref     tableRef
	columns []string // nil = all
	filter  []lake.Predicate
}

// asPlainScan recognises a plain scan in DuckDB's parse tree.
func asPlainScan(tree *object, resolve resolver) (plainScan, bool) {
	return asScan(tree, resolve, nil)
}

// asScan is asPlainScan where a WHERE conjunct that is not a predicate is
// passed to other, which says whether the scan takes it (nil: none is).
func asScan(tree *object, resolve resolver, other func(*object) bool) (plainScan, bool) {
	stmts, _ := tree.get("statements").([]any)
	if len(stmts) != 1 {
		return plainScan{}, false
	}
	st, _ := stmts[0].(*object)
	if st == nil {
		return plainScan{}, false
	}
	if params, _ := st.get("named_param_map").([]any); len(params) > 0 {
		return plainScan{}, false
	}
	node, _ := st.get("node").(*object)
	if node == nil || node.get("type") != "SELECT_NODE" {
		return plainScan{}, false
	}
	for _, k := range []string{"having", "sample", "qualify"} {
		if node.get(k) != nil {
			return plainScan{}, false
		}
	}
	for _, k := range []string{"modifiers", "group_expressions", "group_sets"} {
		if l, _ := node.get(k).([]any); len(l) > 0 {
			return plainScan{}, false
		}
	}
	if cm, _ := node.get("cte_map").(*object); cm != nil {
		if l, _ := cm.get("map").([]any); len(l) > 0 {
			return plainScan{}, false
		}
	}
	if node.get("aggregate_handling") != "STANDARD_HANDLING" {
		return plainScan{}, false
	}
	from, _ := node.get("from_table").(*object)
	if from == nil || from.get("type") != "BASE_TABLE" || from.get("sample") != nil || from.get("at_clause") != nil {
		return plainScan{}, false
	}
	if l, _ := from.get("column_name_alias").([]any); len(l) > 0 {
		return plainScan{}, false
	}
	schema, _ := from.get("schema_name").(string)
	table, _ := from.get("table_name").(string)
	if c, _ := from.get("catalog_name").(string); c != "" {
		return plainScan{}, false
	}
	ref, ok, err := resolve(schema, table)
	if err != nil || !ok {
		return plainScan{}, false
	}
	var filter []lake.Predicate
	if where, _ := node.get("where_clause").(*object); where != nil {
		alias, _ := from.get("alias").(string)
		for _, c := range conjuncts(where, nil) {
			col, p, ok := predicateOf(c)
			if !ok {
				if other != nil && other(c) {
					continue
				}
				return plainScan{}, false
			}
			if len(col) == 2 && !strings.EqualFold(col[0], table) && !strings.EqualFold(col[0], alias) {
				return plainScan{}, false
			}
			p.Column = col[len(col)-1]
			filter = append(filter, p)
		}
		filter = expandBetween(filter)
	}
	sel, _ := node.get("select_list").([]any)
	if len(sel) == 0 {
		return plainScan{}, false
	}
	var cols []string
	for i, e := range sel {
		ex, _ := e.(*object)
		if ex == nil {
			return plainScan{}, false
		}
		switch ex.get("class") {
		case "STAR":
			if len(sel) != 1 || i != 0 || !emptyStar(ex) {
				return plainScan{}, false
			}
			return plainScan{ref: ref, filter: filter}, true
		case "COLUMN_REF":
			names, _ := ex.get("column_names").([]any)
			if len(names) != 1 {
				return plainScan{}, false
			}
			name, _ := names[0].(string)
			if a, _ := ex.get("alias").(string); a != "" && a != name {
				return plainScan{}, false
			}
			cols = append(cols, name)
		default:
			return plainScan{}, false
		}
	}
	return plainScan{ref: ref, columns: cols, filter: filter}, true
}

func emptyStar(ex *object) bool {
	if r, _ := ex.get("relation_name").(string); r != "" {
		return false
	}
	if ex.get("expr") != nil {
		return false
	}
	if c, _ := ex.get("columns").(bool); c {
		return false
	}
	for _, k := range []string{"exclude_list", "replace_list", "qualified_exclude_list", "rename_list"} {
		if l, _ := ex.get(k).([]any); len(l) > 0 {
			return false
		}
	}
	return true
}

// project returns the indexes of columns in s (case-insensitive, as DuckDB
// matches), or ok=false when one is missing (DuckDB then reports it).
func project(s *arrow.Schema, columns []string) ([]int, bool) {
	idx := make([]int, len(columns))
	for i, c := range columns {
		idx[i] = -1
		for j, f := range s.Fields() {
			if strings.EqualFold(f.Name, c) {
				idx[i] = j
				break
			}
		}
		if idx[i] < 0 {
			return nil, false
		}
	}
	return idx, true
}
