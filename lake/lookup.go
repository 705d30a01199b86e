package lake

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/internal/arrowutil"
)

// Point lookups on primary-key tables. Once the pruner has chosen the
// bucket, the files whose key statistics hold the key and the row groups
// whose Parquet statistics do, a row group of 128K rows still holds one
// version of the key asked for. readRowGroup decodes the constrained key
// columns first, evaluates the filter on them (KeyRows, the evaluator the
// log rows go through) and decodes the other columns only when some key can
// match, returning only those rows. Every version of a key shares its key,
// so the merge of a bucket still sees every version of the keys it returns;
// append tables keep whole row groups (the caller filters their rows).

// keyFirst switches readRowGroup's narrowing (off only to measure it).
var keyFirst = true

// readRowGroup reads row group rg of pf by plan, as readPlanned, and on a
// primary-key table whose filter constrains key columns keeps only the rows
// whose key can match (narrow false, or a nil pruner, reads every row: the
// caller needs the rows' positions, e.g. for a deletion vector). It may
// return a batch without rows.
func (p *pruner) readRowGroup(ctx context.Context, pf *parquetFile, rg int, plan []fileColumn, want []arrow.Field, mem memory.Allocator, narrow bool) (arrow.RecordBatch, error) {
	if p == nil || !narrow || p.keyRows == nil || !keyFirst {
		return readPlanned(ctx, pf, rg, plan, want, mem)
	}
	// The key columns, named as the table names them: the wanted column
	// when the scan reads it, else the file's _KEY_ column.
	keyWant := make([]arrow.Field, len(p.keys))
	keyPlan := make([]fileColumn, len(p.keys))
	fromWant := make([]int, len(want)) // want index -> key index + 1
	for i, k := range p.keys {
		j := 0
		for j < len(want) && want[j].Name != k.name {
			j++
		}
		if j < len(want) {
			keyWant[i], keyPlan[i] = want[j], plan[j]
			fromWant[j] = i + 1
		} else {
			f := arrow.Field{Name: keyFieldPrefix + k.name, Type: k.typ.ArrowType(), Nullable: true}
			keyWant[i] = arrow.Field{Name: k.name, Type: f.Type, Nullable: true}
			keyPlan[i] = fileColumn{read: &f}
		}
		if r := keyPlan[i].read; r == nil || len(pf.fieldLeaves(r.Name)) == 0 {
			return readPlanned(ctx, pf, rg, plan, want, mem) // not in the file: no narrowing
		}
	}
	// Only the pages of the key that the column index lets through.
	cand, indexed := p.keyPages(pf, rg, keyPlan)
	if indexed && len(cand) == 0 {
		return arrowutil.EmptyBatch(mem, arrow.NewSchema(want, nil)), nil
	}
	keys, err := readPlannedRows(ctx, pf, rg, keyPlan, keyWant, cand, mem)
	if err != nil {
		return nil, err
	}
	defer keys.Release()
	keep := p.keyRows(keys)
	var rows rowRuns  // the rows to read of the other columns
	var local []int64 // their positions in keys
	switch {
	case keep != nil:
		var pos []int64
		at := newRunCursor(cand)
		for r, ok := range keep {
			if ok {
				local = append(local, int64(r))
				pos = append(pos, at.position(int64(r)))
			}
		}
		if len(pos) == 0 {
			return arrowutil.EmptyBatch(mem, arrow.NewSchema(want, nil)), nil
		}
		rows = runsOf(pos)
	case cand != nil:
		rows = cand
	}
	// The other wanted columns, of those rows only (see readRows).
	var restWant []arrow.Field
	var restPlan []fileColumn
	for j := range want {
		if fromWant[j] == 0 {
			restWant = append(restWant, want[j])
			restPlan = append(restPlan, plan[j])
		}
	}
	var rest arrow.RecordBatch
	if len(restWant) > 0 {
		if rest, err = readPlannedRows(ctx, pf, rg, restPlan, restWant, rows, mem); err != nil {
			return nil, err
		}
		defer rest.Release()
	}
	if keep != nil {
		taken, err := takeRecord(ctx, keys, local, mem)
		if err != nil {
			return nil, err
		}
		defer taken.Release()
		keys = taken
	}
	cols := make([]arrow.Array, len(want))
	next := 0
	for j := range want {
		if k := fromWant[j]; k > 0 {
			cols[j] = keys.Column(k - 1)
		} else {
			cols[j] = rest.Column(next)
			next++
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(want, nil), cols, keys.NumRows()), nil
}

// keyPages returns the rows of row group rg on the pages that
// can hold a matching key, by the Parquet column index of the first
// constrained key column of an integer type that has one in the file
// (flightd writes it for primary-key files); indexed is false when no such
// column does (all rows are candidates). A page of nulls only holds no
// match. A column index that cannot be read keeps every row.
func (p *pruner) keyPages(pf *parquetFile, rg int, keyPlan []fileColumn) (rows rowRuns, indexed bool) {
	pir := pf.pr.GetPageIndexReader()
	if pir == nil || !strings.HasPrefix(pf.pr.MetaData().GetCreatedBy(), "flightd") {
		return nil, false
	}
	defer func() {
		if recover() != nil { // arrow-go panics on a malformed index
			rows, indexed = nil, false
		}
	}()
	rgr, err := pir.RowGroup(rg)
	if err != nil || rgr == nil {
		return nil, false
	}
	nrows := pf.pr.MetaData().RowGroup(rg).NumRows()
	for i, k := range p.keys {
		if !kindOf(k.typ).Ints() || (keyPlan[i].cast && !sameStatsType(keyPlan[i].from, keyPlan[i].to)) {
			continue
		}
		leaves := pf.fieldLeaves(keyPlan[i].read.Name)
		if len(leaves) != 1 {
			continue
		}
		ci, err := rgr.GetColumnIndex(leaves[0])
		if err != nil || ci == nil {
			continue
		}
		oi, err := rgr.GetOffsetIndex(leaves[0])
		if err != nil || oi == nil {
			continue
		}
		var lo, hi []int64
		switch x := ci.(type) {
		case *metadata.TypedColumnIndex[int32]:
			for j := range x.MinValues() {
				lo, hi = append(lo, int64(x.MinValues()[j])), append(hi, int64(x.MaxValues()[j]))
			}
		case *metadata.TypedColumnIndex[int64]:
			lo, hi = x.MinValues(), x.MaxValues()
		default:
			continue
		}
		pages := oi.GetPageLocations()
		nulls := ci.GetNullPages()
		if len(pages) != len(lo) || len(nulls) != len(lo) {
			continue
		}
		for j, pg := range pages {
			if nulls[j] || !k.preds.MayMatchInts(lo[j], hi[j]) {
				continue
			}
			end := nrows
			if j+1 < len(pages) {
				end = pages[j+1].FirstRowIndex
			}
			if n := len(rows); n > 0 && rows[n-1][1] == pg.FirstRowIndex {
				rows[n-1][1] = end
			} else {
				rows = append(rows, [2]int64{pg.FirstRowIndex, end})
			}
		}
		return rows, true
	}
	return nil, false
}

// runCursor maps the i-th row of runs (ascending i) to its position; nil
// runs are every row, so the i-th row is at i.
type runCursor struct {
	runs rowRuns
	run  int   // current run
	base int64 // rows before it
}

func newRunCursor(runs rowRuns) *runCursor { return &runCursor{runs: runs} }

// position returns the position of the i-th row; i never decreases between
// calls.
func (c *runCursor) position(i int64) int64 {
	if c.runs == nil {
		return i
	}
	for c.run < len(c.runs) {
		r := c.runs[c.run]
		if i < c.base+r[1]-r[0] {
			return r[0] + i - c.base
		}
		c.base += r[1] - r[0]
		c.run++
	}
	panic("lake: row past its runs")
}
