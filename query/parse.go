//go:build duckdb_arrow

package query

import (
	"context"
	"strconv"
	"strings"
)

// parse returns DuckDB's parse tree of sql, from the cache when its shape
// is known; parsed is false when DuckDB gives none (not a SELECT, a syntax
// error).
func (e *Engine) parse(ctx context.Context, c *conn, sql string) (tree *object, parsed bool, err error) {
	key, lits, cacheable := shapeOf(sql)
	var known *parsedShape
	if cacheable {
		e.shapes.mu.Lock()
		known = e.shapes.m[key]
		e.shapes.mu.Unlock()
		if known != nil && known.tree != nil {
			return known.instance(lits), true, nil
		}
	}
	js, err := c.serialize(ctx, sql)
	if err != nil {
		return nil, false, err
	}
	tree, parsed = parseTree(js)
	// A time travel's rewrite (travel.go) needs the locations of its own
	// text, which a cached tree of the same shape does not have.
	if !cacheable || !parsed || known != nil || strings.Contains(js, `"at_clause":{`) {
		return tree, parsed, nil
	}
	sh, err := e.learnShape(ctx, c, key, lits, tree)
	if err != nil || sh == nil {
		return tree, parsed, err
	}
	e.shapes.mu.Lock()
	if e.shapes.m == nil || len(e.shapes.m) >= parseCacheEntries {
		e.shapes.m = map[string]*parsedShape{}
	}
	e.shapes.m[key] = sh
	e.shapes.mu.Unlock()
	return tree, parsed, nil
}

// learnShape parses the shape again with sentinel literals and returns
// tree's slots, a shape with no tree when the trees differ elsewhere, or
// nil (learn it next time) when a literal has a sentinel's value.
func (e *Engine) learnShape(ctx context.Context, c *conn, key string, lits []literal, tree *object) (*parsedShape, error) {
	if len(lits) == 0 {
		return &parsedShape{tree: copyTree(tree).(*object)}, nil
	}
	sentinels := make([]literal, len(lits))
	index := map[string]int{} // a sentinel's JSON value -> its literal
	for i, l := range lits {
		s := literal{kind: l.kind}
		switch l.kind {
		case 'i':
			s.n = 1_000_000_007 + int64(i)
		case 'l':
			s.n = 5_000_000_000_017 + int64(i)
		default:
			s.s = "flightd\x01slot\x01" + strconv.Itoa(i)
		}
		sentinels[i] = s
		index[constKey(s)] = i
	}
	for _, l := range lits {
		if _, clash := index[constKey(l)]; clash {
			return nil, nil
		}
	}
	js, err := c.serialize(ctx, render(key, sentinels))
	if err != nil {
		return nil, err
	}
	other, ok := parseTree(js)
	if !ok {
		return &parsedShape{}, nil
	}
	sh := &parsedShape{slots: make([][]any, len(lits))}
	if !matchShape(tree, other, nil, lits, index, sh.slots) {
		return &parsedShape{}, nil
	}
	for _, s := range sh.slots {
		if s == nil {
			return &parsedShape{}, nil
		}
	}
	sh.tree = copyTree(tree).(*object)
	return sh, nil
}
