//go:build duckdb_arrow

package query

import (
	"context"
	"strings"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/sqlparse"
)

// maxShortText bounds the text ShortWork looks at: the server asks before
// the statement has a slot, so the question itself must be cheap, and
// short work is short to write (a longer INSERT ... VALUES is a bulk load
// written as SQL).
const maxShortText = 16 << 10

// ShortWork reports whether sql's cost is bounded by its text rather than
// by the data it reads, so that it may run in the short admission lane
// (package internal/admit): USE and SET; CALL; an INSERT ... VALUES of a
// few rows; a query that reads no flightd table but system tables
// (SELECT 1, sys.statements, information_schema); and a plain scan of one
// primary-key table whose WHERE fixes every key column with = or IN (a
// point lookup: pages of one bucket, lake/lookup.go). Anything else, text
// longer than maxShortText, or anything it cannot tell without running,
// is long work.
func (e *Engine) ShortWork(ctx context.Context, sql string) bool {
	if len(sql) > maxShortText {
		return false
	}
	switch sqlparse.Classify(sql) {
	case sqlparse.KindUse, sqlparse.KindSet, sqlparse.KindCall:
		return true
	case sqlparse.KindInsert:
		ins, err := sqlparse.ParseInsert(sql)
		return err == nil && len(ins.Query) >= 6 && strings.EqualFold(ins.Query[:6], "values")
	case sqlparse.KindQuery:
		return e.shortQuery(ctx, sql)
	}
	return false
}

// shortQuery is ShortWork of a query.
func (e *Engine) shortQuery(ctx context.Context, sql string) bool {
	ctx = lakestream.Planning(ctx) // each table checked once
	c, err := e.connect(ctx)
	if err != nil {
		return false
	}
	defer e.release(c)
	tree, parsed, err := e.parse(ctx, c, sql)
	if err != nil || !parsed {
		return false
	}
	resolve := e.resolver(ctx)
	if ps, ok := asPlainScan(tree, resolve); ok {
		return ps.ref.system || e.pointLookup(ctx, ps)
	}
	return readsNoData(tree, resolve)
}

// pointLookup reports whether ps fixes every primary-key column of its
// table with = or IN.
func (e *Engine) pointLookup(ctx context.Context, ps plainScan) bool {
	if ps.ref.whole() || ps.ref.snapshot > 0 || ps.ref.tag != "" {
		return false
	}
	t, err := e.ls.Table(ctx, ps.ref.db, ps.ref.table)
	if err != nil || !t.Schema().HasPrimaryKey() {
		return false
	}
	for _, k := range t.Schema().PrimaryKeys {
		fixed := false
		for _, p := range ps.filter {
			if strings.EqualFold(p.Column, k) && (p.Op == lake.OpEq || p.Op == lake.OpIn && len(p.Values) <= 64) {
				fixed = true
				break
			}
		}
		if !fixed {
			return false
		}
	}
	return true
}

// readsNoData reports whether every table the parse tree reads is a system
// table or none (FROM-less SELECTs, DuckDB's catalog views): no scan of a
// flightd table, no table function such as range().
func readsNoData(n any, resolve resolver) bool {
	switch v := n.(type) {
	case []any:
		for _, c := range v {
			if !readsNoData(c, resolve) {
				return false
			}
		}
	case *object:
		switch v.get("type") {
		case "TABLE_FUNCTION":
			return false
		case "BASE_TABLE":
			schema, _ := v.get("schema_name").(string)
			table, _ := v.get("table_name").(string)
			ref, ours, err := resolve(schema, table)
			if err != nil {
				return false
			}
			if ours {
				return ref.system
			}
			return duckSchema(schema)
		}
		for _, k := range v.keys {
			if !readsNoData(v.vals[k], resolve) {
				return false
			}
		}
	}
	return true
}
