//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/union"
)

// Streaming reads. In a session with the option streaming, a query is a
// streaming read, SELECT * | cols FROM t$rt | t$changelog [WHERE ...], that
// runs without DuckDB and never ends by itself (lakestream.Stream): the
// table's current rows (or its retained changelog), then every change as it
// is written, with _change_type first. Any other query is refused, so that
// a streaming session never quietly gets a bounded answer.
//
// WHERE takes the conjuncts plain scans take (column op constant, IN,
// BETWEEN), on the table's columns and on _change_type, _log_offset,
// _bucket and _commit_timestamp; they filter every row. Conditions on
// _log_offset are also the resume position: _log_offset > n (or >= n)
// makes every bucket continue after n, and one conjunct
// (_bucket = b AND _log_offset > n) OR (_bucket = c AND _log_offset > m) ...
// makes each bucket named continue after its offset, while the buckets it
// does not name start again with their current rows.

// errNotStreamable refuses a query in a streaming session.
func errNotStreamable(why string) error {
	return fmt.Errorf("%w: the session streams (SET streaming = false, or the session option streaming, turns it off), and a streaming read is SELECT * | columns FROM db.\"t$rt\" | db.\"t$changelog\" [WHERE column op constant AND ...]; %s", engine.ErrInvalid, why)
}

// streamQuery runs sql's tree as a streaming read.
func (e *Engine) streamQuery(ctx context.Context, tree *plan.Object, parsed, schemaOnly bool) (array.RecordReader, error) {
	if !parsed {
		return nil, errNotStreamable("this statement is not a query flightd can stream")
	}
	var pos plan.Position
	ps, ok := plan.ScanWith(tree, e.resolver(ctx), pos.Take)
	if !ok {
		return nil, errNotStreamable("this query is not one")
	}
	if pos.Err != nil {
		return nil, pos.Err
	}
	if !ps.Ref.Realtime && !ps.Ref.Changelog {
		return nil, errNotStreamable(fmt.Sprintf("%s.%s is not t$rt or t$changelog", ps.Ref.DB, ps.Ref.Table))
	}
	sc, err := e.ls.StreamSchema(ctx, ps.Ref.DB, ps.Ref.Table)
	if err != nil {
		return nil, lakeerr.Map(err)
	}
	preds, ok := expr.BindSchema(sc, ps.Filter)
	if !ok {
		return nil, fmt.Errorf("%w: a condition of the streaming read names a column %s.%s does not have, or compares it with a value of another type", engine.ErrInvalid, ps.Ref.DB, ps.Ref.Table)
	}
	opts := lakestream.StreamOptions{Changelog: ps.Ref.Changelog, After: pos.After}
	for i, p := range ps.Filter {
		name := sc.Field(preds[i].Col).Name
		switch {
		case name == union.LogOffsetColumn:
			if n, ok := plan.OffsetAfter(p); ok && (opts.AfterAll == nil || n > *opts.AfterAll) {
				opts.AfterAll = &n
			}
		case preds[i].Col >= changeColumns: // a table column: it prunes too
			q := p
			q.Column = name
			opts.Filter = append(opts.Filter, q)
		}
	}
	out := []int{0} // _change_type first
	if ps.Columns == nil {
		out = out[:0]
		for i := range sc.Fields() {
			out = append(out, i)
		}
	} else {
		idx, ok := plan.Project(sc, ps.Columns)
		if !ok {
			return nil, fmt.Errorf("%w: the streaming read selects a column %s.%s does not have (its changes have %s)", engine.ErrInvalid, ps.Ref.DB, ps.Ref.Table, fieldNames(sc))
		}
		for _, i := range idx {
			if i != 0 {
				out = append(out, i)
			}
		}
	}
	if schemaOnly {
		empty, err := array.NewRecordReader(sc, nil)
		if err != nil {
			return nil, err
		}
		return arrowutil.NewProjectReader(empty, out), nil
	}
	r, err := e.ls.Stream(ctx, ps.Ref.DB, ps.Ref.Table, opts)
	if err != nil {
		return nil, lakeerr.Map(err)
	}
	if len(preds) > 0 {
		r = expr.NewReader(ctx, e.mem, r, preds)
	}
	return arrowutil.NewProjectReader(r, out), nil
}

// changeColumns is how many columns a changelog has before the table's:
// _change_type, _log_offset, _bucket, _commit_timestamp.
const changeColumns = 4

func fieldNames(sc *arrow.Schema) string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
