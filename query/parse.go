//go:build duckdb_arrow

package query

import (
	"context"
	"strings"

	"github.com/flightd/flightd/query/plan"
)

// treeOf is parse of st on a connection of its own, taken only when st's
// tree is not known yet.
func (e *Engine) treeOf(ctx context.Context, st *plan.Statement) (tree *plan.Object, parsed bool, err error) {
	if tree, parsed, ok := st.Tree(); ok {
		return tree, parsed, nil
	}
	c, err := e.connect(ctx)
	if err != nil {
		return nil, false, err
	}
	defer e.release(c)
	return e.parse(ctx, c, st)
}

// parse returns DuckDB's parse tree of st: the one an earlier stage of
// the statement had (plan.Statement.Tree), else from the cache when its
// shape is known (plan.ShapeCache), else DuckDB's (json_serialize_sql).
// parsed is false when DuckDB gives none (not a SELECT, a syntax error).
// The tree is shared, to be read only.
func (e *Engine) parse(ctx context.Context, c *conn, st *plan.Statement) (tree *plan.Object, parsed bool, err error) {
	if tree, parsed, ok := st.Tree(); ok {
		return tree, parsed, nil
	}
	tree, parsed, err = e.parseText(ctx, c, st)
	if err == nil {
		st.SetTree(tree, parsed)
	}
	return tree, parsed, err
}

// parseText is parse without st's tree.
func (e *Engine) parseText(ctx context.Context, c *conn, st *plan.Statement) (tree *plan.Object, parsed bool, err error) {
	key, lits, cacheable := st.Shape()
	var known *plan.Shape
	if cacheable {
		known = e.shapes.Get(key)
		if known.Cached() {
			return known.Instance(lits), true, nil
		}
	}
	js, err := c.serialize(ctx, st.SQL())
	if err != nil {
		return nil, false, err
	}
	tree, parsed = plan.ParseTree(js)
	// A time travel's rewrite (travel.go) needs the locations of its own
	// text, which a cached tree of the same shape does not have.
	if !cacheable || !parsed || known != nil || strings.Contains(js, `"at_clause":{`) {
		return tree, parsed, nil
	}
	sh, err := plan.LearnShape(key, lits, tree, func(sql string) (*plan.Object, bool, error) {
		js, err := c.serialize(ctx, sql)
		if err != nil {
			return nil, false, err
		}
		t, ok := plan.ParseTree(js)
		return t, ok, nil
	})
	if err != nil || sh == nil {
		return tree, parsed, err
	}
	e.shapes.Put(key, sh)
	return tree, parsed, nil
}
