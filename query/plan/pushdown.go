package plan

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/lake/expr"
)

// Hints are what a statement's WHERE clauses say about each table
// reference, found in DuckDB's parse tree of the statement. DuckDB's
// projection pushdown reaches the scans (package query's scan function),
// its filters do not (the C API's table functions have none), so flightd
// prunes from the parse tree: top-level AND-ed conjuncts of a SELECT's
// WHERE of the form column op constant (=, <, <=, >, >=, IN, BETWEEN) on a
// table of that SELECT's FROM. They only prune partitions, buckets and files (see
// lake.ScanOptions); DuckDB still applies the whole WHERE, so pruning
// cannot change a result. For outer joins this holds too: a WHERE conjunct
// on a table's column is false for rows that cannot match it and for the
// NULL rows an outer join makes up.
type Hints struct {
	Filter []expr.Predicate
}

// HintSet holds the hints of every base-table node of one statement.
type HintSet struct {
	filters map[*Object][]expr.Predicate
}

// HintsOf finds the hints of every base-table node of tree.
func HintsOf(tree *Object) *HintSet {
	h := &HintSet{filters: map[*Object][]expr.Predicate{}}
	h.collect(tree)
	return h
}

// Of returns the hints of one base-table node.
func (h *HintSet) Of(node *Object) Hints {
	return Hints{Filter: h.filters[node]}
}

// collect walks the whole tree for SELECT nodes' WHERE conjuncts.
func (h *HintSet) collect(n any) {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			h.collect(c)
		}
	case *Object:
		if v.Get("type") == "SELECT_NODE" {
			h.selectNode(v)
		}
		for _, k := range v.keys {
			h.collect(v.vals[k])
		}
	}
}

func strList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// fromTables lists the base tables of a FROM clause (through joins, not
// into subqueries); only reports whether nothing else is there.
func fromTables(n any, out []*Object) (tables []*Object, only bool) {
	ref, _ := n.(*Object)
	if ref == nil {
		return out, true
	}
	switch ref.Get("type") {
	case "BASE_TABLE":
		return append(out, ref), true
	case "JOIN":
		out, a := fromTables(ref.Get("left"), out)
		out, b := fromTables(ref.Get("right"), out)
		return out, a && b
	case "EMPTY":
		return out, true
	}
	return out, false
}

func refName(t *Object) string {
	if a, _ := t.Get("alias").(string); a != "" {
		return strings.ToLower(a)
	}
	s, _ := t.Get("table_name").(string)
	return strings.ToLower(s)
}

func (h *HintSet) selectNode(node *Object) {
	tables, only := fromTables(node.Get("from_table"), nil)
	if len(tables) == 0 {
		return
	}
	byName := map[string]*Object{}
	for _, t := range tables {
		byName[refName(t)] = t
	}
	where, _ := node.Get("where_clause").(*Object)
	if where == nil {
		return
	}
	for _, c := range conjuncts(where, nil) {
		col, p, ok := predicateOf(c)
		if !ok {
			continue
		}
		var t *Object
		switch len(col) {
		case 1:
			if len(tables) == 1 && only {
				t = tables[0]
			}
		case 2:
			t = byName[strings.ToLower(col[0])]
		}
		if t == nil {
			continue
		}
		p.Column = col[len(col)-1]
		h.filters[t] = append(h.filters[t], p)
	}
}

func conjuncts(e *Object, out []*Object) []*Object {
	if e.Get("class") == "CONJUNCTION" && e.Get("type") == "CONJUNCTION_AND" {
		l, _ := e.Get("children").([]any)
		for _, c := range l {
			if co, ok := c.(*Object); ok {
				out = conjuncts(co, out)
			}
		}
		return out
	}
	return append(out, e)
}

var compareOps = map[string]expr.Op{
	"COMPARE_EQUAL":                expr.OpEq,
	"COMPARE_LESSTHAN":             expr.OpLt,
	"COMPARE_LESSTHANOREQUALTO":    expr.OpLe,
	"COMPARE_GREATERTHAN":          expr.OpGt,
	"COMPARE_GREATERTHANOREQUALTO": expr.OpGe,
}

// flipped is the operator with its operands swapped (5 < c is c > 5).
var flipped = map[expr.Op]expr.Op{expr.OpEq: expr.OpEq, expr.OpLt: expr.OpGt, expr.OpLe: expr.OpGe, expr.OpGt: expr.OpLt, expr.OpGe: expr.OpLe}

// predicateOf reads "column op constant" (either side), "column IN
// (constants)" and "column BETWEEN constant AND constant" (opBetween,
// expanded later).
func predicateOf(e *Object) (col []string, p expr.Predicate, ok bool) {
	switch e.Get("class") {
	case "COMPARISON":
		op, known := compareOps[e.Get("type").(string)]
		if !known {
			return nil, p, false
		}
		l, _ := e.Get("left").(*Object)
		r, _ := e.Get("right").(*Object)
		if l == nil || r == nil {
			return nil, p, false
		}
		if c := columnOf(l); c != nil {
			if v, ok := constantOf(r); ok {
				return c, expr.Predicate{Op: op, Values: []any{v}}, true
			}
		}
		if c := columnOf(r); c != nil {
			if v, ok := constantOf(l); ok {
				return c, expr.Predicate{Op: flipped[op], Values: []any{v}}, true
			}
		}
	case "OPERATOR":
		if e.Get("type") != "COMPARE_IN" {
			return nil, p, false
		}
		l, _ := e.Get("children").([]any)
		if len(l) < 2 {
			return nil, p, false
		}
		first, _ := l[0].(*Object)
		c := columnOf(first)
		if c == nil {
			return nil, p, false
		}
		p = expr.Predicate{Op: expr.OpIn}
		for _, x := range l[1:] {
			xo, _ := x.(*Object)
			v, ok := constantOf(xo)
			if !ok {
				return nil, p, false
			}
			p.Values = append(p.Values, v)
		}
		return c, p, true
	case "BETWEEN":
		in, _ := e.Get("input").(*Object)
		lo, _ := e.Get("lower").(*Object)
		hi, _ := e.Get("upper").(*Object)
		c := columnOf(in)
		if c == nil {
			return nil, p, false
		}
		lv, ok1 := constantOf(lo)
		hv, ok2 := constantOf(hi)
		if !ok1 || !ok2 {
			return nil, p, false
		}
		return c, expr.Predicate{Op: opBetween, Values: []any{lv, hv}}, true
	}
	return nil, p, false
}

// opBetween is expanded by expandBetween before predicates reach the lake.
const opBetween expr.Op = -1

func expandBetween(ps []expr.Predicate) []expr.Predicate {
	out := make([]expr.Predicate, 0, len(ps))
	for _, p := range ps {
		if p.Op == opBetween {
			out = append(out,
				expr.Predicate{Column: p.Column, Op: expr.OpGe, Values: p.Values[:1]},
				expr.Predicate{Column: p.Column, Op: expr.OpLe, Values: p.Values[1:]})
			continue
		}
		out = append(out, p)
	}
	return out
}

func columnOf(e *Object) []string {
	if e == nil || e.Get("class") != "COLUMN_REF" {
		return nil
	}
	names := strList(e.Get("column_names"))
	if len(names) == 0 || len(names) > 2 {
		return nil
	}
	return names
}

// constantOf reads an integer or string constant, a string cast to DATE
// (DATE '2024-01-01') or an integer cast to an integer type it fits
// (CAST(7 AS BIGINT), how a bound parameter reads). Anything else is not
// used for pruning.
func constantOf(e *Object) (any, bool) {
	if e == nil {
		return nil, false
	}
	if e.Get("class") == "CAST" {
		ct, _ := e.Get("cast_type").(*Object)
		if ct == nil {
			return nil, false
		}
		child, _ := e.Get("child").(*Object)
		v, ok := constantOf(child)
		switch id, _ := ct.Get("id").(string); id {
		case "DATE":
			if _, isStr := v.(string); !ok || !isStr {
				return nil, false
			}
			return v, true
		case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
			// A bound integer parameter (engine.Literal), in the cast's range.
			n, isInt := v.(int64)
			if !ok || !isInt || !fitsInteger(id, n) {
				return nil, false
			}
			return n, true
		}
		return nil, false
	}
	if e.Get("class") != "CONSTANT" {
		return nil, false
	}
	val, _ := e.Get("value").(*Object)
	if val == nil {
		return nil, false
	}
	if null, _ := val.Get("is_null").(bool); null {
		return nil, false
	}
	typ, _ := val.Get("type").(*Object)
	if typ == nil {
		return nil, false
	}
	switch typ.Get("id") {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
		n, ok := val.Get("value").(json.Number)
		if !ok {
			return nil, false
		}
		i, err := n.Int64()
		return i, err == nil
	case "VARCHAR":
		s, ok := val.Get("value").(string)
		return s, ok
	}
	return nil, false
}

// FilterFor is the pruning filter of hints for a table with schema sc,
// its columns spelled as sc spells them.
func (s Hints) FilterFor(sc *arrow.Schema) (filter []expr.Predicate) {
	for _, p := range expandBetween(s.Filter) {
		for _, f := range sc.Fields() {
			if strings.EqualFold(f.Name, p.Column) {
				p.Column = f.Name
				filter = append(filter, p)
				break
			}
		}
	}
	return filter
}

// integerRanges are the ranges of DuckDB's integer types that hold int64s.
var integerRanges = map[string][2]int64{
	"TINYINT": {math.MinInt8, math.MaxInt8}, "SMALLINT": {math.MinInt16, math.MaxInt16},
	"INTEGER": {math.MinInt32, math.MaxInt32}, "BIGINT": {math.MinInt64, math.MaxInt64},
	"UTINYINT": {0, math.MaxUint8}, "USMALLINT": {0, math.MaxUint16}, "UINTEGER": {0, math.MaxUint32},
}

// fitsInteger reports whether n is in the range of DuckDB's integer type id.
func fitsInteger(id string, n int64) bool {
	r, ok := integerRanges[id]
	return ok && n >= r[0] && n <= r[1]
}
