// Package exprtest generates the cases of the tests of package expr's
// evaluator: random columns of every type expr evaluates, with nulls and
// boundary values, and random predicates on them whose constants are what
// SQL's literals give (integer literals as int64, string literals as
// string), including some that expr.Bind must refuse. Package expr's
// property test and package query's differential test against DuckDB
// share them.
package exprtest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lake/expr"
)

// Types are the Arrow types expr evaluates.
var Types = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.FixedWidthTypes.Date32, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
}

// Strings are strings that sort apart by bytes, not by any collation:
// cases, accents, a NUL, code points of 1 to 4 bytes, a non-breaking space.
var Strings = []string{"", "a", "A", "b", "Z", "z", "ab", "aB", "a\x00", "é", "e\u0301", "ÿ", "ß", "\u00a0", "\ufffd", "😀", "中文", " a", "a ", "'", "it's"}

// intRange is the range of the integer type of kind k.
func intRange(k expr.Kind) (lo, hi int64) {
	switch k {
	case expr.KindInt8:
		return math.MinInt8, math.MaxInt8
	case expr.KindInt16:
		return math.MinInt16, math.MaxInt16
	case expr.KindInt32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// Days of the first and last dates of years 0000 to 9999, the dates a
// 'YYYY-MM-DD' literal names.
const (
	MinLiteralDay = -719528
	MaxLiteralDay = 2932896
)

// Column returns n random values for a column of type t (one of Types),
// int64 for integers and dates (days), string or nil (null), and an array
// holding them. Integers are near zero, near one another or at the
// bounds of their type; dates near 1970, near one another, or at the
// first and last days of years 0000 and 9999 and beyond them.
func Column(rng *rand.Rand, mem memory.Allocator, t arrow.DataType, n int) (arrow.Array, []any) {
	k := expr.KindOf(t)
	vals := make([]any, n)
	for i := range vals {
		if rng.IntN(8) == 0 {
			continue // null
		}
		switch {
		case k == expr.KindString:
			vals[i] = randString(rng)
		case k == expr.KindDate:
			vals[i] = randDay(rng)
		default:
			vals[i] = randInt(rng, k)
		}
	}
	b := array.NewBuilder(mem, t)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch x := b.(type) {
		case *array.Int8Builder:
			x.Append(int8(v.(int64)))
		case *array.Int16Builder:
			x.Append(int16(v.(int64)))
		case *array.Int32Builder:
			x.Append(int32(v.(int64)))
		case *array.Int64Builder:
			x.Append(v.(int64))
		case *array.Date32Builder:
			x.Append(arrow.Date32(v.(int64)))
		case *array.StringBuilder:
			x.Append(v.(string))
		case *array.LargeStringBuilder:
			x.Append(v.(string))
		}
	}
	return b.NewArray(), vals
}

func randInt(rng *rand.Rand, k expr.Kind) int64 {
	lo, hi := intRange(k)
	switch rng.IntN(4) {
	case 0:
		return []int64{lo, lo + 1, -1, 0, 1, hi - 1, hi}[rng.IntN(7)]
	case 1:
		return max(lo, min(hi, int64(rng.IntN(2001)-1000)))
	}
	return int64(rng.Uint64()>>(64-bits(k))) + lo // uniform over the type
}

// bits is the width of the integer type of kind k.
func bits(k expr.Kind) uint {
	switch k {
	case expr.KindInt8:
		return 8
	case expr.KindInt16:
		return 16
	case expr.KindInt32:
		return 32
	}
	return 64
}

func randDay(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return []int64{MinLiteralDay - 1, MinLiteralDay, MinLiteralDay + 1, -1, 0, 1, MaxLiteralDay - 1, MaxLiteralDay, MaxLiteralDay + 1}[rng.IntN(9)]
	case 1:
		return int64(rng.IntN(4_000_000) - 1_000_000)
	}
	return int64(19000 + rng.IntN(60) - 30)
}

func randString(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return Strings[rng.IntN(len(Strings))]
	}
	var sb strings.Builder
	for range rng.IntN(4) {
		sb.WriteString(Strings[rng.IntN(len(Strings))])
	}
	return sb.String()
}

// Predicate returns a random predicate (any Op; IN of one to four values)
// on column col of type t whose column holds vals (Column's), its constants
// often a value of the column or next to one.
func Predicate(rng *rand.Rand, col string, t arrow.DataType, vals []any) expr.Predicate {
	p := expr.Predicate{Column: col, Op: expr.Op(rng.IntN(int(expr.OpIn) + 1))}
	for range 1 + rng.IntN(4) {
		p.Values = append(p.Values, Constant(rng, t, vals))
		if p.Op != expr.OpIn {
			break
		}
	}
	return p
}

// Constant returns a random constant for a column of type t holding vals,
// as SQL's literals give them: for integer columns mostly an int64 (the
// whole int64 range at times), else a string, often one Bind must
// refuse (out of the type's range, a decimal point, a non-ASCII space);
// for DATE columns a 'YYYY-MM-DD' string, at times not a date; for string
// columns a string without NUL, at times an int64.
func Constant(rng *rand.Rand, t arrow.DataType, vals []any) any {
	k := expr.KindOf(t)
	var near any // a value of the column, or next to one
	if v := vals[rng.IntN(len(vals))]; v != nil {
		near = v
		if n, ok := v.(int64); ok {
			if d := int64(rng.IntN(3) - 1); !(d > 0 && n == math.MaxInt64) && !(d < 0 && n == math.MinInt64) {
				near = n + d
			}
		}
	}
	switch {
	case k == expr.KindString:
		s := randString(rng)
		switch {
		case rng.IntN(20) == 0:
			return int64(rng.IntN(10))
		case near != nil && rng.IntN(2) == 0:
			s = near.(string)
		}
		return strings.ReplaceAll(s, "\x00", "") // SQL text holds no NUL
	case k == expr.KindDate:
		switch rng.IntN(20) {
		case 0:
			return []string{"2022-02-29", " 2022-01-05", "2022-1-5", "2022-01-05 00:00:00", "0000-00-00", ""}[rng.IntN(6)]
		case 1:
			return int64(19000)
		}
		d, ok := near.(int64)
		if !ok || d < MinLiteralDay || d > MaxLiteralDay {
			d = randDay(rng)
		}
		d = max(MinLiteralDay, min(MaxLiteralDay, d))
		return time.Unix(d*86400, 0).UTC().Format(time.DateOnly)
	}
	n, ok := near.(int64)
	if !ok {
		n = randInt(rng, k)
	}
	switch rng.IntN(24) {
	case 0:
		return []int64{math.MinInt64, math.MaxInt64}[rng.IntN(2)]
	case 1:
		lo, hi := intRange(k)
		if k == expr.KindInt64 {
			return []string{"-9223372036854775809", "9223372036854775808"}[rng.IntN(2)]
		}
		return strconv.FormatInt([]int64{lo - 1, hi + 1}[rng.IntN(2)], 10)
	case 2:
		return []string{"1.0", "\u00a01", "1\u2002", "", "+", "0x1", "1e0", "1_0", "٣"}[rng.IntN(9)]
	case 3, 4, 5, 6, 7, 8:
		s := strconv.FormatInt(n, 10)
		if n >= 0 && rng.IntN(2) == 0 {
			s = "+" + s
		}
		ws := []string{"", " ", "\t", "\n", "\r", "\v", "\f", "  "}
		return ws[rng.IntN(len(ws))] + s + ws[rng.IntN(len(ws))]
	}
	return n
}
