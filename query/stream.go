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
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
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
func (e *Engine) streamQuery(ctx context.Context, tree *object, parsed, schemaOnly bool) (array.RecordReader, error) {
	if !parsed {
		return nil, errNotStreamable("this statement is not a query flightd can stream")
	}
	var pos position
	ps, ok := asScan(tree, e.resolver(ctx), pos.take)
	if !ok {
		return nil, errNotStreamable("this query is not one")
	}
	if pos.err != nil {
		return nil, pos.err
	}
	if !ps.ref.realtime && !ps.ref.changelog {
		return nil, errNotStreamable(fmt.Sprintf("%s.%s is not t$rt or t$changelog", ps.ref.db, ps.ref.table))
	}
	sc, err := e.ls.StreamSchema(ctx, ps.ref.db, ps.ref.table)
	if err != nil {
		return nil, mapErr(err)
	}
	preds, ok := bindPredicates(sc, ps.filter)
	if !ok {
		return nil, fmt.Errorf("%w: a condition of the streaming read names a column %s.%s does not have, or compares it with a value of another type", engine.ErrInvalid, ps.ref.db, ps.ref.table)
	}
	opts := lakestream.StreamOptions{Changelog: ps.ref.changelog, After: pos.after}
	for i, p := range ps.filter {
		name := sc.Field(preds[i].col).Name
		switch {
		case name == union.LogOffsetColumn:
			if n, ok := offsetAfter(p); ok && (opts.AfterAll == nil || n > *opts.AfterAll) {
				opts.AfterAll = &n
			}
		case preds[i].col >= changeColumns: // a table column: it prunes too
			q := p
			q.Column = name
			opts.Filter = append(opts.Filter, q)
		}
	}
	out := []int{0} // _change_type first
	if ps.columns == nil {
		out = out[:0]
		for i := range sc.Fields() {
			out = append(out, i)
		}
	} else {
		idx, ok := project(sc, ps.columns)
		if !ok {
			return nil, fmt.Errorf("%w: the streaming read selects a column %s.%s does not have (its changes have %s)", engine.ErrInvalid, ps.ref.db, ps.ref.table, fieldNames(sc))
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
	r, err := e.ls.Stream(ctx, ps.ref.db, ps.ref.table, opts)
	if err != nil {
		return nil, mapErr(err)
	}
	if len(preds) > 0 {
		r = newFilterReader(ctx, e.mem, r, preds)
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

// offsetAfter reads _log_offset > n or >= n as "after n".
func offsetAfter(p lake.Predicate) (int64, bool) {
	if len(p.Values) != 1 {
		return 0, false
	}
	n, ok := p.Values[0].(int64)
	if !ok {
		return 0, false
	}
	switch p.Op {
	case lake.OpGt:
		return n, true
	case lake.OpGe:
		return n - 1, true
	}
	return 0, false
}

// position collects the per-bucket resume position of a streaming read:
// one conjunct (_bucket = b AND _log_offset > n) OR ...
type position struct {
	after map[int32]int64
	err   error
}

// take takes c if it is the resume disjunction.
func (p *position) take(c *object) bool {
	if c.get("class") != "CONJUNCTION" || c.get("type") != "CONJUNCTION_OR" {
		return false
	}
	if p.after != nil {
		p.err = fmt.Errorf("%w: the streaming read has two resume positions (OR of _bucket = b AND _log_offset > n); give one", engine.ErrInvalid)
		return true
	}
	l, _ := c.get("children").([]any)
	after := map[int32]int64{}
	for _, x := range l {
		xo, _ := x.(*object)
		if xo == nil {
			return false
		}
		bucket, offset := int64(-1), int64(0)
		hasOffset := false
		for _, t := range conjuncts(xo, nil) {
			col, pr, ok := predicateOf(t)
			if !ok || len(col) != 1 {
				return false
			}
			switch {
			case strings.EqualFold(col[0], union.BucketColumn) && pr.Op == lake.OpEq:
				b, ok := pr.Values[0].(int64)
				if !ok || b < 0 || b > 1<<31-1 {
					return false
				}
				bucket = b
			case strings.EqualFold(col[0], union.LogOffsetColumn):
				n, ok := offsetAfter(pr)
				if !ok || hasOffset {
					return false
				}
				offset, hasOffset = n, true
			default:
				return false
			}
		}
		if bucket < 0 || !hasOffset {
			return false
		}
		if _, dup := after[int32(bucket)]; dup {
			p.err = fmt.Errorf("%w: the streaming read's resume position names bucket %d twice", engine.ErrInvalid, bucket)
			return true
		}
		after[int32(bucket)] = offset
	}
	p.after = after
	return true
}
