//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// Partitioned reads. A plain scan (plan.PlainScan) of a large table is planned
// as several parts, one per DoGet, which clients read in parallel (ADBC's
// partitioned reads, a distributed client's workers). Every part reads the
// same cut of the table (lakestream.Cut: one snapshot, and for t$rt the
// same log range), so together they are the rows one read would have
// returned when the statement was planned, whatever tiering or writers do
// in between. A part is a lake.Split of that cut: a primary-key table's
// part holds whole buckets, so each key merges in one part.

// DefaultPartRows is the least rows of a part by default: a smaller result
// stays one.
const DefaultPartRows = 1 << 20

// Partition implements engine.Engine.
func (e *Engine) Partition(ctx context.Context, est engine.Statement, max int) ([]string, int64, error) {
	st := statementOf(est)
	if max < 2 || st.Check() != nil || st.Class() != sqlparse.KindQuery {
		return nil, -1, nil
	}
	ps, ok, err := e.plainScanOf(ctx, st)
	if err != nil || !ok || ps.Ref.Whole() {
		return nil, -1, err
	}
	cut, err := e.ls.Cut(ctx, ps.Ref.DB, ps.Ref.Table, ps.Ref.Realtime)
	if err != nil {
		return nil, -1, lakeerr.Map(err)
	}
	rows := cut.Rows
	if len(ps.Filter) > 0 {
		rows = -1
	}
	n := min(int(cut.Size/e.partRows), max)
	if cut.Buckets > 0 {
		n = min(n, cut.Buckets) // a primary-key table splits by bucket
	}
	if n < 2 {
		return nil, rows, nil
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = plan.EncodePart(plan.Part{Cut: cut, Split: lake.Split{Index: i, Count: n}})
	}
	return parts, rows, nil
}

// plainScanOf is st's plain scan, if it is one.
func (e *Engine) plainScanOf(ctx context.Context, st *plan.Statement) (plan.Scan, bool, error) {
	tree, parsed, err := e.treeOf(ctx, st)
	if err != nil || !parsed {
		return plan.Scan{}, false, err
	}
	ps, ok := plan.PlainScan(tree, e.resolver(ctx))
	return ps, ok, nil
}

// partErr is err of opening the scan of part p (nil: not a part): a cut
// that is gone (its snapshot expired since the query was planned, on this
// node or another) is ErrRejected, which tells the client to run the query
// again for new tickets, not that the server failed.
func partErr(p *plan.Part, err error) error {
	if p != nil && errors.Is(err, fs.ErrNotExist) && !errors.Is(err, engine.ErrRejected) {
		return fmt.Errorf("%w: %w", engine.ErrRejected, err)
	}
	return err
}
