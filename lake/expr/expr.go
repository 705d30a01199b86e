package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Op is the comparison of a Predicate.
type Op int

// Comparisons a Predicate can make: column = v, < v, <= v, > v, >= v, IN (v...).
const (
	OpEq Op = iota
	OpLt
	OpLe
	OpGt
	OpGe
	OpIn
)

// Predicate is "Column Op Values" as SQL evaluates it: a null column value
// never matches. Values are SQL's literals, int64 or string, converted to
// the column's type by Bind; an arrow.Date32 is a date (DATE columns
// only).
type Predicate struct {
	Column string
	Op     Op
	Values []any // one value, or the list of OpIn
}

// Kind is a column's comparison domain: how its values compare and how a
// constant converts to them.
type Kind uint8

// The kinds. Integers of every width and dates compare as int64, strings
// as bytes; no predicate binds to KindNone.
const (
	KindNone Kind = iota
	KindInt8
	KindInt16
	KindInt32
	KindInt64
	KindDate // days since 1970-01-01
	KindString
)

// KindOf is the Kind of the columns of Arrow type t: INT8 to INT64,
// DATE32, STRING and LARGE_STRING; KindNone for any other type.
func KindOf(t arrow.DataType) Kind {
	switch t.ID() {
	case arrow.INT8:
		return KindInt8
	case arrow.INT16:
		return KindInt16
	case arrow.INT32:
		return KindInt32
	case arrow.INT64:
		return KindInt64
	case arrow.DATE32:
		return KindDate
	case arrow.STRING, arrow.LARGE_STRING:
		return KindString
	}
	return KindNone
}

// Ints reports whether values of kind k compare as int64.
func (k Kind) Ints() bool { return k >= KindInt8 && k <= KindDate }

// Bound is a Predicate bound to a column's Kind, its values converted.
type Bound struct {
	op   Op
	kind Kind
	vals any // []int64 (Kind.Ints) or []string (KindString)
}

// Op is the comparison.
func (b Bound) Op() Op { return b.op }

// Values are the converted values: int64 for integer and DATE columns
// (days), string for string columns.
func (b Bound) Values() []any {
	var out []any
	switch vals := b.vals.(type) {
	case []int64:
		for _, v := range vals {
			out = append(out, v)
		}
	case []string:
		for _, v := range vals {
			out = append(out, v)
		}
	}
	return out
}

// Bind converts p's values for a column of kind k (see the package
// documentation for the conversions). ok is false when p cannot be
// evaluated exactly as SQL would: an unknown Op, no value or (but for
// OpIn) more than one, a column of KindNone, or a value that does not
// convert.
func Bind(k Kind, p Predicate) (b Bound, ok bool) {
	if p.Op < OpEq || p.Op > OpIn || len(p.Values) == 0 || (p.Op != OpIn && len(p.Values) != 1) {
		return Bound{}, false
	}
	var ints []int64
	var strs []string
	for _, v := range p.Values {
		switch {
		case k.Ints():
			n, ok := intConst(k, v)
			if !ok {
				return Bound{}, false
			}
			ints = append(ints, n)
		case k == KindString:
			s, ok := v.(string)
			if !ok {
				return Bound{}, false
			}
			strs = append(strs, s)
		default:
			return Bound{}, false
		}
	}
	if k == KindString {
		return Bound{op: p.Op, kind: k, vals: strs}, true
	}
	return Bound{op: p.Op, kind: k, vals: ints}, true
}

// intRanges are the ranges of the integer kinds.
var intRanges = [...][2]int64{
	KindInt8:  {math.MinInt8, math.MaxInt8},
	KindInt16: {math.MinInt16, math.MaxInt16},
	KindInt32: {math.MinInt32, math.MaxInt32},
	KindInt64: {math.MinInt64, math.MaxInt64},
}

// intConst converts v for a column of integer or DATE kind k.
func intConst(k Kind, v any) (int64, bool) {
	if k == KindDate {
		switch x := v.(type) {
		case arrow.Date32:
			return int64(x), true
		case string:
			return ParseDate(x)
		}
		return 0, false
	}
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		return ParseInt(k, x)
	}
	return 0, false
}

// ParseInt converts a string literal to an integer of kind k (KindInt8 to
// KindInt64) as Bind does: a base-10 integer with an optional sign,
// surrounded by ASCII white space or not, in k's range.
func ParseInt(k Kind, s string) (int64, bool) {
	if k < KindInt8 || k > KindInt64 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.Trim(s, " \t\n\v\f\r"), 10, 64)
	r := intRanges[k]
	return n, err == nil && n >= r[0] && n <= r[1]
}

// ParseDate converts a 'YYYY-MM-DD' literal (years 0000 to 9999, as the
// proleptic Gregorian calendar counts them) to days since 1970-01-01.
func ParseDate(s string) (int64, bool) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, false
	}
	return d.Unix() / 86400, true
}
