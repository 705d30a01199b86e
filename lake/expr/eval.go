package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Conj is the conjunction of the bound predicates on one column; the empty
// conjunction matches every value, null included.
type Conj []Bound

// MayMatchInts reports whether some value in [lo, hi] can satisfy every
// predicate; a predicate on strings cannot tell, and does not prune.
func (c Conj) MayMatchInts(lo, hi int64) bool { return mayMatch(c, lo, hi) }

// MayMatchStrings reports whether some string in [lo, hi] (as bytes) can
// satisfy every predicate; a predicate on integers cannot tell, and does
// not prune.
func (c Conj) MayMatchStrings(lo, hi string) bool { return mayMatch(c, lo, hi) }

// mayMatch reports whether some value in [lo, hi] can satisfy every
// predicate of c whose values are of type T: the evaluator.
func mayMatch[T int64 | string](c Conj, lo, hi T) bool {
	for i := range c {
		vals, ok := c[i].vals.([]T)
		if !ok {
			continue
		}
		switch c[i].op {
		case OpEq:
			if vals[0] < lo || vals[0] > hi {
				return false
			}
		case OpLt:
			if lo >= vals[0] {
				return false
			}
		case OpLe:
			if lo > vals[0] {
				return false
			}
		case OpGt:
			if hi <= vals[0] {
				return false
			}
		case OpGe:
			if hi < vals[0] {
				return false
			}
		case OpIn:
			hit := false
			for _, v := range vals {
				if v >= lo && v <= hi {
					hit = true
					break
				}
			}
			if !hit {
				return false
			}
		}
	}
	return true
}

// MayMatchRange is MayMatchInts or MayMatchStrings of bounds as statistics
// and partition values decode: int8 to int64 or string, both of one kind.
// Bounds of any other type cannot tell: the result is true.
func (c Conj) MayMatchRange(lo, hi any) bool {
	if l, ok := asInt(lo); ok {
		if h, ok := asInt(hi); ok {
			return c.MayMatchInts(l, h)
		}
		return true
	}
	if l, ok := lo.(string); ok {
		if h, ok := hi.(string); ok {
			return c.MayMatchStrings(l, h)
		}
	}
	return true
}

// MayMatchValue is MayMatchRange of [v, v]; a null (nil) matches only the
// empty conjunction.
func (c Conj) MayMatchValue(v any) bool {
	if v == nil {
		return len(c) == 0
	}
	return c.MayMatchRange(v, v)
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Matcher returns whether row r of arr matches every predicate, as
// MayMatchValue of its value, reading the array's values without boxing
// them (a point query tests every un-tiered row of its key's bucket). ok
// is false when arr is not of the conjunction's kind (KindOf).
func (c Conj) Matcher(arr arrow.Array) (match func(r int) bool, ok bool) {
	if len(c) == 0 {
		return func(int) bool { return true }, true
	}
	k := KindOf(arr.DataType())
	for i := range c {
		if c[i].kind != k {
			return nil, false
		}
	}
	switch a := arr.(type) {
	case *array.Int64:
		return intMatcher(a, a.Int64Values(), c), true
	case *array.Int32:
		return intMatcher(a, a.Int32Values(), c), true
	case *array.Int16:
		return intMatcher(a, a.Int16Values(), c), true
	case *array.Int8:
		return intMatcher(a, a.Int8Values(), c), true
	case *array.Date32:
		return intMatcher(a, a.Date32Values(), c), true
	case *array.String:
		if x, ok := c.eq(); ok {
			return func(r int) bool { return a.IsValid(r) && a.Value(r) == x }, true
		}
		return func(r int) bool { v := a.Value(r); return a.IsValid(r) && mayMatch(c, v, v) }, true
	case *array.LargeString:
		if x, ok := c.eq(); ok {
			return func(r int) bool { return a.IsValid(r) && a.Value(r) == x }, true
		}
		return func(r int) bool { v := a.Value(r); return a.IsValid(r) && mayMatch(c, v, v) }, true
	}
	return nil, false
}

// eq returns the string of a conjunction that is "= x" alone.
func (c Conj) eq() (x string, ok bool) {
	if len(c) == 1 && c[0].op == OpEq {
		if vals, ok := c[0].vals.([]string); ok {
			return vals[0], true
		}
	}
	return "", false
}

func intMatcher[T ~int8 | ~int16 | ~int32 | ~int64](arr arrow.Array, vals []T, c Conj) func(r int) bool {
	if len(c) == 1 && c[0].op == OpEq { // a point query's key
		x := c[0].vals.([]int64)[0]
		if arr.NullN() == 0 {
			return func(r int) bool { return int64(vals[r]) == x }
		}
		return func(r int) bool { return arr.IsValid(r) && int64(vals[r]) == x }
	}
	if arr.NullN() == 0 {
		return func(r int) bool { v := int64(vals[r]); return mayMatch(c, v, v) }
	}
	return func(r int) bool { v := int64(vals[r]); return arr.IsValid(r) && mayMatch(c, v, v) }
}

// Narrow drops from keep, which says which of a batch's n rows are kept
// (nil: all of them), the rows that match does not match, testing only
// the rows still kept; it returns keep, nil while every row is kept.
func Narrow(keep []bool, n int, match func(r int) bool) []bool {
	for r := 0; r < n; r++ {
		if keep != nil && !keep[r] {
			continue
		}
		if !match(r) {
			if keep == nil {
				keep = make([]bool, n)
				for i := range keep {
					keep[i] = true
				}
			}
			keep[r] = false
		}
	}
	return keep
}
