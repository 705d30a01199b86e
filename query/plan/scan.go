package plan

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/lake/expr"
)

// Scan describes a statement that is only a scan of one flightd table:
// SELECT * | col, ... FROM t | t$rt [WHERE conjuncts], with nothing else,
// where every conjunct is column op constant as HintsOf reads them. Such
// statements skip DuckDB and stream the scan straight to the client (the
// filter evaluated by expr.NewReader), because passing a large result through
// DuckDB costs more than the scan itself, and planning a point query on
// DuckDB costs more than the lookup.
type Scan struct {
	Ref     Ref
	Columns []string // nil = all
	Filter  []expr.Predicate
}

// PlainScan recognises a plain scan in DuckDB's parse tree.
func PlainScan(tree *Object, resolve Resolver) (Scan, bool) {
	return ScanWith(tree, resolve, nil)
}

// ScanWith is PlainScan where a WHERE conjunct that is not a predicate is
// passed to other, which says whether the scan takes it (nil: none is).
func ScanWith(tree *Object, resolve Resolver, other func(*Object) bool) (Scan, bool) {
	stmts, _ := tree.Get("statements").([]any)
	if len(stmts) != 1 {
		return Scan{}, false
	}
	st, _ := stmts[0].(*Object)
	if st == nil {
		return Scan{}, false
	}
	if params, _ := st.Get("named_param_map").([]any); len(params) > 0 {
		return Scan{}, false
	}
	node, _ := st.Get("node").(*Object)
	if node == nil || node.Get("type") != "SELECT_NODE" {
		return Scan{}, false
	}
	for _, k := range []string{"having", "sample", "qualify"} {
		if node.Get(k) != nil {
			return Scan{}, false
		}
	}
	for _, k := range []string{"modifiers", "group_expressions", "group_sets"} {
		if l, _ := node.Get(k).([]any); len(l) > 0 {
			return Scan{}, false
		}
	}
	if cm, _ := node.Get("cte_map").(*Object); cm != nil {
		if l, _ := cm.Get("map").([]any); len(l) > 0 {
			return Scan{}, false
		}
	}
	if node.Get("aggregate_handling") != "STANDARD_HANDLING" {
		return Scan{}, false
	}
	from, _ := node.Get("from_table").(*Object)
	if from == nil || from.Get("type") != "BASE_TABLE" || from.Get("sample") != nil || from.Get("at_clause") != nil {
		return Scan{}, false
	}
	if l, _ := from.Get("column_name_alias").([]any); len(l) > 0 {
		return Scan{}, false
	}
	schema, _ := from.Get("schema_name").(string)
	table, _ := from.Get("table_name").(string)
	if c, _ := from.Get("catalog_name").(string); c != "" {
		return Scan{}, false
	}
	ref, ok, err := resolve(schema, table)
	if err != nil || !ok {
		return Scan{}, false
	}
	var filter []expr.Predicate
	if where, _ := node.Get("where_clause").(*Object); where != nil {
		alias, _ := from.Get("alias").(string)
		for _, c := range conjuncts(where, nil) {
			col, p, ok := predicateOf(c)
			if !ok {
				if other != nil && other(c) {
					continue
				}
				return Scan{}, false
			}
			if len(col) == 2 && !strings.EqualFold(col[0], table) && !strings.EqualFold(col[0], alias) {
				return Scan{}, false
			}
			p.Column = col[len(col)-1]
			filter = append(filter, p)
		}
		filter = expandBetween(filter)
	}
	sel, _ := node.Get("select_list").([]any)
	if len(sel) == 0 {
		return Scan{}, false
	}
	var cols []string
	for i, e := range sel {
		ex, _ := e.(*Object)
		if ex == nil {
			return Scan{}, false
		}
		switch ex.Get("class") {
		case "STAR":
			if len(sel) != 1 || i != 0 || !emptyStar(ex) {
				return Scan{}, false
			}
			return Scan{Ref: ref, Filter: filter}, true
		case "COLUMN_REF":
			names, _ := ex.Get("column_names").([]any)
			if len(names) != 1 {
				return Scan{}, false
			}
			name, _ := names[0].(string)
			if a, _ := ex.Get("alias").(string); a != "" && a != name {
				return Scan{}, false
			}
			cols = append(cols, name)
		default:
			return Scan{}, false
		}
	}
	return Scan{Ref: ref, Columns: cols, Filter: filter}, true
}

func emptyStar(ex *Object) bool {
	if r, _ := ex.Get("relation_name").(string); r != "" {
		return false
	}
	if ex.Get("expr") != nil {
		return false
	}
	if c, _ := ex.Get("columns").(bool); c {
		return false
	}
	for _, k := range []string{"exclude_list", "replace_list", "qualified_exclude_list", "rename_list"} {
		if l, _ := ex.Get(k).([]any); len(l) > 0 {
			return false
		}
	}
	return true
}

// Project returns the indexes of columns in s (case-insensitive, as DuckDB
// matches), or ok=false when one is missing (DuckDB then reports it).
func Project(s *arrow.Schema, columns []string) ([]int, bool) {
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
