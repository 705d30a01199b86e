package expr_test

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
)

// Bind converts constants as DuckDB casts a literal to the column's type,
// and refuses what it cannot convert exactly as DuckDB would.
func TestBind(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind expr.Kind
		p    expr.Predicate
		want []any // nil: refused
	}{
		{"int", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{int64(7)}}, []any{int64(7)}},
		{"int beyond a narrow type", expr.KindInt8, expr.Predicate{Op: expr.OpLt, Values: []any{int64(300)}}, []any{int64(300)}},
		{"int64 bounds", expr.KindInt64, expr.Predicate{Op: expr.OpIn, Values: []any{int64(math.MinInt64), int64(math.MaxInt64)}}, []any{int64(math.MinInt64), int64(math.MaxInt64)}},
		{"string to int", expr.KindInt32, expr.Predicate{Op: expr.OpEq, Values: []any{"-12"}}, []any{int64(-12)}},
		{"string to int, ASCII space and sign", expr.KindInt16, expr.Predicate{Op: expr.OpIn, Values: []any{" \t+5\n\v\f\r", "007"}}, []any{int64(5), int64(7)}},
		{"string in a narrow type's range", expr.KindInt8, expr.Predicate{Op: expr.OpIn, Values: []any{"-128", "127"}}, []any{int64(-128), int64(127)}},
		{"string beyond a narrow type", expr.KindInt8, expr.Predicate{Op: expr.OpLt, Values: []any{"128"}}, nil},
		{"string beyond int16", expr.KindInt16, expr.Predicate{Op: expr.OpLt, Values: []any{"-32769"}}, nil},
		{"string beyond int32", expr.KindInt32, expr.Predicate{Op: expr.OpLt, Values: []any{"2147483648"}}, nil},
		{"string beyond int64", expr.KindInt64, expr.Predicate{Op: expr.OpLt, Values: []any{"9223372036854775808"}}, nil},
		{"non-ASCII space", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{"\u00a05"}}, nil},
		{"decimal point", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{"5.0"}}, nil},
		{"hex", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{"0x5"}}, nil},
		{"underscore", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{"1_000"}}, nil},
		{"empty", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{""}}, nil},
		{"one bad IN value", expr.KindInt64, expr.Predicate{Op: expr.OpIn, Values: []any{int64(1), "x"}}, nil},
		{"date", expr.KindDate, expr.Predicate{Op: expr.OpGe, Values: []any{"2022-01-05"}}, []any{int64(18997)}},
		{"date before 1970", expr.KindDate, expr.Predicate{Op: expr.OpGe, Values: []any{"1969-12-31"}}, []any{int64(-1)}},
		{"date bounds", expr.KindDate, expr.Predicate{Op: expr.OpIn, Values: []any{"0000-01-01", "9999-12-31"}}, []any{int64(-719528), int64(2932896)}},
		{"Date32", expr.KindDate, expr.Predicate{Op: expr.OpIn, Values: []any{arrow.Date32(-3), arrow.Date32(19002)}}, []any{int64(-3), int64(19002)}},
		{"date as an integer", expr.KindDate, expr.Predicate{Op: expr.OpEq, Values: []any{int64(19002)}}, nil},
		{"Date32 for an integer column", expr.KindInt32, expr.Predicate{Op: expr.OpEq, Values: []any{arrow.Date32(1)}}, nil},
		{"not a day", expr.KindDate, expr.Predicate{Op: expr.OpEq, Values: []any{"2023-02-29"}}, nil},
		{"date with spaces", expr.KindDate, expr.Predicate{Op: expr.OpEq, Values: []any{" 2022-01-05"}}, nil},
		{"date without zeros", expr.KindDate, expr.Predicate{Op: expr.OpEq, Values: []any{"2022-1-5"}}, nil},
		{"string", expr.KindString, expr.Predicate{Op: expr.OpLe, Values: []any{"é"}}, []any{"é"}},
		{"int for a string column", expr.KindString, expr.Predicate{Op: expr.OpEq, Values: []any{int64(1)}}, nil},
		{"kind none", expr.KindNone, expr.Predicate{Op: expr.OpEq, Values: []any{int64(1)}}, nil},
		{"other value type", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{1}}, nil},
		{"no value", expr.KindInt64, expr.Predicate{Op: expr.OpIn}, nil},
		{"two values", expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{int64(1), int64(2)}}, nil},
		{"unknown op", expr.KindInt64, expr.Predicate{Op: -1, Values: []any{int64(1), int64(2)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := expr.Bind(tc.kind, tc.p)
			require.Equal(t, tc.want != nil, ok)
			if ok {
				require.Equal(t, tc.want, b.Values())
				require.Equal(t, tc.p.Op, b.Op())
			}
		})
	}
}

// KindOf knows the Arrow types the evaluator reads, and no other.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  arrow.DataType
		want expr.Kind
	}{
		{"int8", arrow.PrimitiveTypes.Int8, expr.KindInt8},
		{"int16", arrow.PrimitiveTypes.Int16, expr.KindInt16},
		{"int32", arrow.PrimitiveTypes.Int32, expr.KindInt32},
		{"int64", arrow.PrimitiveTypes.Int64, expr.KindInt64},
		{"date32", arrow.FixedWidthTypes.Date32, expr.KindDate},
		{"string", arrow.BinaryTypes.String, expr.KindString},
		{"large string", arrow.BinaryTypes.LargeString, expr.KindString},
		{"uint8", arrow.PrimitiveTypes.Uint8, expr.KindNone},
		{"float64", arrow.PrimitiveTypes.Float64, expr.KindNone},
		{"timestamp", arrow.FixedWidthTypes.Timestamp_us, expr.KindNone},
		{"boolean", arrow.FixedWidthTypes.Boolean, expr.KindNone},
		{"binary", arrow.BinaryTypes.Binary, expr.KindNone},
		{"string view", arrow.BinaryTypes.StringView, expr.KindNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, expr.KindOf(tc.typ))
		})
	}
}
