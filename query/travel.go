//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// Time travel. DuckDB's parser reads t AT (VERSION => n), AT (VERSION =>
// 'tag') and AT (TIMESTAMP => t), but its binder refuses the clause on a
// view, and every flightd table is one. So a reference that travels gets a
// view of its own, named after the snapshot (t$at3), whose scan reads that
// snapshot of the lake, and the statement runs with the reference's text
// (the name and its AT clause, found from the parse tree's location) put
// as that view's name; the rest of the text runs as written.

// travel resolves the time travel of the reference node (at is its AT
// clause) to a snapshot, and returns the key and reference of the view that
// reads it; the text's rewrite goes to travels.
func (e *Engine) travel(ctx context.Context, text string, k plan.ViewKey, r plan.Ref, node, at *plan.Object, travels *[]plan.Travel) (plan.ViewKey, plan.Ref, error) {
	if r.Realtime || r.RO || r.Whole() {
		return k, r, fmt.Errorf("%w: %s.%s has no history to travel in: AT (...) reads a past snapshot of the lake table %s.%s", engine.ErrInvalid, r.DB, r.Written(), r.DB, r.Table)
	}
	tr, err := plan.TravelOf(at)
	if err != nil {
		return k, r, fmt.Errorf("%w: %s.%s AT (...): %w", engine.ErrInvalid, r.DB, r.Table, err)
	}
	loc, err := plan.Location(node)
	if err != nil {
		return k, r, fmt.Errorf("%w: the statement's AT clause of %s.%s could not be located", engine.ErrInvalid, r.DB, r.Table)
	}
	span, ok := sqlparse.AtClause(text, loc)
	if !ok {
		return k, r, fmt.Errorf("%w: the AT clause of %s.%s could not be read from the statement's text; write it right after the table's name: %s AT (VERSION => n)", engine.ErrInvalid, r.DB, r.Table, r.Table)
	}
	if tr.Tag != "" && strings.Contains(text[span.AtStart:span.AtEnd], sqlparse.VersionMarker) {
		// Spark's VERSION AS OF, the hint scan.version: a tag, or else
		// a snapshot id.
		tr = lakestream.Travel{Version: tr.Tag}
	}
	cut, err := e.ls.TravelCut(ctx, r.DB, r.Table, tr)
	if err != nil {
		return k, r, lakeerr.Map(err)
	}
	r.Snapshot, r.Tag = cut.Snapshot, cut.Tag
	name := k.Name + "$at" + strconv.FormatInt(cut.Snapshot, 10)
	if cut.Tag != "" {
		name += "$" + cut.Tag
	}
	k.Name = strings.ToLower(name)
	repl := plan.QuoteIdent(k.Name)
	if s, _ := node.Get("schema_name").(string); s != "" {
		repl = plan.QuoteIdent(k.Schema) + "." + repl
	}
	*travels = append(*travels, plan.Travel{Span: span, Name: repl})
	return k, r, nil
}
