package lake

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
	keys, err := readPlanned(ctx, pf, rg, keyPlan, keyWant, mem)
	if err != nil {
		return nil, err
	}
	defer keys.Release()
	keep := p.keyRows(keys)
	var rows []int64
	if keep != nil {
		for r, ok := range keep {
			if ok {
				rows = append(rows, int64(r))
			}
		}
		if len(rows) == 0 {
			return emptyRecord(want, mem), nil
		}
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
		taken, err := takeRecord(ctx, keys, rows, mem)
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

// emptyRecord returns a batch of the fields with no rows.
func emptyRecord(fields []arrow.Field, mem memory.Allocator) arrow.RecordBatch {
	cols := make([]arrow.Array, len(fields))
	for i, f := range fields {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}
