package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
)

// ParamTypes types the parameters of the INSERT ins: a placeholder
// that is a whole element of a VALUES row takes its column's type (a
// string, an integer as Int64, a float as Float64, a timestamp in
// milliseconds, as the Arrow Flight SQL JDBC driver binds them), any other
// one is a string (the INSERT casts it to the column).
func (w *Writer) ParamTypes(ctx context.Context, ins *plan.Statement) ([]arrow.DataType, error) {
	ps, n, _ := ins.Params()
	st, err := ins.Insert()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrInvalid, err)
	}
	db := engine.DatabaseOf(ctx, st.Name.Database)
	schema, err := w.ls.ArrowSchema(ctx, db, st.Name.Table)
	if err != nil {
		return nil, lakeerr.Map(err)
	}
	cols := Columns(st, schema)
	if _, err := CheckValuesCount(db, st, cols); err != nil {
		return nil, err
	}
	types := make([]arrow.DataType, n)
	for i := range types {
		types[i] = arrow.BinaryTypes.String
	}
	row, ok := ins.ValuesRow()
	if !ok {
		return types, nil
	}
	for i, el := range row.Elems {
		col := -1
		if i < len(cols) {
			col = FieldIndex(schema, cols[i])
		}
		if col < 0 {
			continue
		}
		for _, p := range ps {
			if p.Pos == el[0] && p.End == el[1] {
				types[p.Index] = columnParamType(schema.Field(col).Type)
			}
		}
	}
	return types, nil
}

// columnParamType is the Arrow type a parameter written into a column of
// type t is declared with (see ParamTypes; a decimal column keeps
// its decimal type, so that its values stay exact).
func columnParamType(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return t
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return arrow.PrimitiveTypes.Int64
	case *arrow.Float32Type, *arrow.Float64Type:
		return arrow.PrimitiveTypes.Float64
	case *arrow.Decimal128Type, *arrow.BinaryType, *arrow.Date32Type:
		return t
	case *arrow.TimestampType:
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: t.TimeZone}
	}
	return arrow.BinaryTypes.String
}

// InsertParams writes the parameter rows of params as the rows of the
// INSERT ins whose one VALUES row holds nothing but placeholders, each
// once (engine.Engine's InsertParams): the parameter batch, its columns
// renamed to the INSERT's target columns, goes to the table's write path as
// an ingested batch would (cast to the column types there). Values the
// write path cannot cast (it casts as Arrow does, which refuses some
// conversions DuckDB makes) leave ok false so that the INSERT runs as SQL.
func (w *Writer) InsertParams(ctx context.Context, ins *plan.Statement, params arrow.RecordBatch) (int64, bool, error) {
	if params == nil || params.NumRows() == 0 {
		return 0, false, nil
	}
	row, ok := ins.ValuesRow()
	if !ok {
		return 0, false, nil
	}
	ps, n, err := ins.Params()
	if err != nil || n != int(params.NumCols()) || len(ps) != len(row.Elems) {
		return 0, false, nil
	}
	st, err := ins.Insert()
	if err != nil {
		return 0, false, nil
	}
	db := engine.DatabaseOf(ctx, st.Name.Database)
	schema, err := w.ls.ArrowSchema(ctx, db, st.Name.Table)
	if err != nil {
		return 0, false, nil // the SQL path reports it
	}
	cols := Columns(st, schema)
	if len(cols) != len(row.Elems) {
		return 0, false, nil
	}
	used := make([]bool, n)
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for i, el := range row.Elems {
		p := ps[i] // one placeholder per element, both in text order
		idx := FieldIndex(schema, cols[i])
		if p.Pos != el[0] || p.End != el[1] || used[p.Index] || idx < 0 {
			return 0, false, nil
		}
		used[p.Index] = true
		arrs[i] = params.Column(p.Index)
		fields[i] = arrow.Field{Name: schema.Field(idx).Name, Type: arrs[i].DataType(), Nullable: true}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, params.NumRows())
	defer rec.Release()
	written, err := w.ls.Write(ctx, db, st.Name.Table, rec)
	if errors.Is(err, lakestream.ErrInvalidBatch) && strings.Contains(err.Error(), "cannot convert") {
		return 0, false, nil
	}
	if err != nil {
		return written, true, lakeerr.Map(err)
	}
	return written, true, nil
}
