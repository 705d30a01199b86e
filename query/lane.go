//go:build duckdb_arrow

package query

import (
	"context"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// maxShortText bounds the text ShortWork looks at: the server asks before
// the statement has a slot, so the question itself must be cheap, and
// short work is short to write (a longer INSERT ... VALUES is a bulk load
// written as SQL).
const maxShortText = 16 << 10

// ShortWork reports whether sql's cost is bounded by its text rather than
// by the data it reads, so that it may run in the short admission lane
// (package internal/admit): USE and SET; CALL sys.cancel; an INSERT ... VALUES of a
// few rows; a query that reads no flightd table but system tables
// (SELECT 1, sys.statements, information_schema); and a plain scan of one
// primary-key table whose WHERE fixes every key column with = or IN (a
// point lookup: pages of one bucket, lake/lookup.go). Anything else, text
// longer than maxShortText, or anything it cannot tell without running,
// is long work.
func (e *Engine) ShortWork(ctx context.Context, est engine.Statement) bool {
	st := statementOf(est)
	if len(st.SQL()) > maxShortText {
		return false
	}
	switch st.Class() {
	case sqlparse.KindUse, sqlparse.KindSet:
		return true
	case sqlparse.KindCall:
		// sys.cancel; Paimon's procedures read and write the lake
		c, err := sqlparse.ParseCall(st.SQL())
		return err != nil || strings.EqualFold(c.Name.Table, "cancel")
	case sqlparse.KindInsert:
		ins, err := st.Insert()
		return err == nil && len(ins.Query) >= 6 && strings.EqualFold(ins.Query[:6], "values")
	case sqlparse.KindQuery:
		return e.shortQuery(ctx, st)
	}
	return false
}

// shortQuery is ShortWork of a query. The tree it reads is the one the
// statement then runs from (plan.Statement.Tree).
func (e *Engine) shortQuery(ctx context.Context, st *plan.Statement) bool {
	ctx = lakestream.Planning(ctx) // each table checked once
	tree, parsed, err := e.treeOf(ctx, st)
	if err != nil || !parsed {
		return false
	}
	resolve := e.resolver(ctx)
	if ps, ok := plan.PlainScan(tree, resolve); ok {
		return ps.Ref.System || e.pointLookup(ctx, ps)
	}
	return plan.ReadsNoData(tree, resolve)
}

// pointLookup reports whether ps fixes every primary-key column of its
// table with = or IN.
func (e *Engine) pointLookup(ctx context.Context, ps plan.Scan) bool {
	if ps.Ref.Whole() || ps.Ref.Snapshot > 0 || ps.Ref.Tag != "" {
		return false
	}
	t, err := e.ls.Table(ctx, ps.Ref.DB, ps.Ref.Table)
	if err != nil || !t.Schema().HasPrimaryKey() {
		return false
	}
	for _, k := range t.Schema().PrimaryKeys {
		fixed := false
		for _, p := range ps.Filter {
			if strings.EqualFold(p.Column, k) && (p.Op == expr.OpEq || p.Op == expr.OpIn && len(p.Values) <= 64) {
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
