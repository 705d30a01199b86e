package lakestream

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/union"
)

// ChangeKindColumn names the optional column of an ingested batch that says
// what each row is, as Paimon's row kind: "+I" insert, "-U" update before,
// "+U" update after, "-D" delete (strings), or the same as integers 0..3.
// Without it every row is an upsert (+I). Primary-key tables apply -U and -D
// as deletes of the row's key; append tables accept only +I. The column is
// consumed, not stored as data; a table that has a column of this name keeps
// it as data.
const ChangeKindColumn = "_rowkind"

var kindNames = map[string]byte{"+I": union.KindInsert, "-U": union.KindUpdateBefore, "+U": union.KindUpdateAfter, "-D": union.KindDelete}

// splitKinds removes ChangeKindColumn from rec when schema has no column of
// that name. It returns rec itself (retained) and nil kinds when there is
// none, and nil kinds when every row is +I.
func splitKinds(schema *arrow.Schema, rec arrow.RecordBatch, table string) (arrow.RecordBatch, []byte, error) {
	idx := rec.Schema().FieldIndices(ChangeKindColumn)
	if len(idx) == 0 || len(schema.FieldIndices(ChangeKindColumn)) > 0 {
		rec.Retain()
		return rec, nil, nil
	}
	if len(idx) > 1 {
		return nil, nil, fmt.Errorf("%w: %s: column %q appears %d times", ErrInvalidBatch, table, ChangeKindColumn, len(idx))
	}
	col := rec.Column(idx[0])
	kinds := make([]byte, col.Len())
	allInserts := true
	for i := range kinds {
		if col.IsNull(i) {
			return nil, nil, fmt.Errorf("%w: %s: %s is null in row %d", ErrInvalidBatch, table, ChangeKindColumn, i)
		}
		var k byte
		var ok bool
		switch a := col.(type) {
		case *array.String:
			k, ok = kindNames[a.Value(i)]
		case *array.LargeString:
			k, ok = kindNames[a.Value(i)]
		case *array.Int8:
			k, ok = byte(a.Value(i)), a.Value(i) >= 0 && a.Value(i) <= 3
		case *array.Int32:
			k, ok = byte(a.Value(i)), a.Value(i) >= 0 && a.Value(i) <= 3
		case *array.Int64:
			k, ok = byte(a.Value(i)), a.Value(i) >= 0 && a.Value(i) <= 3
		default:
			return nil, nil, fmt.Errorf("%w: %s: %s must be a string (+I, -U, +U, -D) or an integer 0..3, not %s", ErrInvalidBatch, table, ChangeKindColumn, col.DataType())
		}
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s: row %d has %s %q; want +I, -U, +U or -D (or 0..3)", ErrInvalidBatch, table, i, ChangeKindColumn, array.NewSlice(col, int64(i), int64(i+1)).ValueStr(0))
		}
		kinds[i] = k
		allInserts = allInserts && k == union.KindInsert
	}
	cols := make([]arrow.Array, 0, rec.NumCols()-1)
	fields := make([]arrow.Field, 0, rec.NumCols()-1)
	for i, c := range rec.Columns() {
		if i != idx[0] {
			cols = append(cols, c)
			fields = append(fields, rec.Schema().Field(i))
		}
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	if allInserts {
		return out, nil, nil
	}
	return out, kinds, nil
}
