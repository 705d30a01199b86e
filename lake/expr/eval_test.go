package expr_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/expr/exprtest"
)

// newMem is an allocator that fails the test if anything it gave is not
// released.
func newMem(t *testing.T) memory.Allocator {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// The row matcher (typed, no boxing) and MayMatchValue of the boxed value
// both say what a model of SQL's comparisons says for every row, over
// random arrays with nulls and random predicates of every op on integer,
// date and string columns.
func TestRowMatcherMatchesMayMatchValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mem := newMem(t)
	for _, dt := range exprtest.Types {
		kind := expr.KindOf(dt)
		require.NotEqual(t, expr.KindNone, kind, "%s", dt)
		for round := 0; round < 50; round++ {
			const n = 40
			small := func() int64 { return int64(rng.IntN(20) - 10) }
			// the column: values near the constants below, some null
			vals := make([]any, n)
			norm := make([]any, n) // each value as the model compares it: int64 (days for DATE), string, nil
			for i := range vals {
				switch v := small(); {
				case rng.IntN(8) == 0:
					vals[i] = nil
				case kind == expr.KindString:
					vals[i] = "k" + strconv.FormatInt(v, 10)
					norm[i] = vals[i]
				case kind == expr.KindDate:
					vals[i] = time.Unix((19000+v)*86400, 0).UTC().Format("2006-01-02")
					norm[i] = 19000 + v
				default:
					vals[i] = v
					norm[i] = v
				}
			}
			js, err := json.Marshal(vals)
			require.NoError(t, err)
			arr, _, err := array.FromJSON(mem, dt, bytes.NewReader(js))
			require.NoError(t, err, "%s", js)
			constant := func() any {
				switch kind {
				case expr.KindString:
					return "k" + strconv.FormatInt(small(), 10)
				case expr.KindDate:
					return fmt.Sprintf("2022-01-%02d", 1+rng.IntN(28)) // near day 19000 + [-10, 10)
				}
				if rng.IntN(4) == 0 {
					return strconv.FormatInt(small(), 10) // a string literal, as SQL casts it
				}
				return small()
			}
			var conj expr.Conj
			for range 1 + rng.IntN(3) {
				p := expr.Predicate{Column: "k", Op: expr.Op(rng.IntN(int(expr.OpIn) + 1))}
				p.Values = []any{constant()}
				if p.Op == expr.OpIn {
					for range rng.IntN(4) {
						p.Values = append(p.Values, constant())
					}
				}
				b, ok := expr.Bind(kind, p)
				require.True(t, ok, "%s %v", dt, p.Values)
				conj = append(conj, b)
			}
			match, ok := conj.Matcher(arr)
			require.True(t, ok)
			for r := 0; r < n; r++ {
				want := norm[r] != nil
				for _, b := range conj {
					want = want && satisfies(b, norm[r])
				}
				require.Equal(t, want, conj.MayMatchValue(boxed(arr, r)), "%s row %d (%v) %v: boxed", dt, r, norm[r], conj)
				require.Equal(t, want, match(r), "%s row %d (%v) %v", dt, r, norm[r], conj)
			}
			arr.Release()
		}
	}
}

// satisfies is the model: whether v (int64 or string, present) satisfies
// b, as SQL compares.
func satisfies(b expr.Bound, v any) bool {
	vals := b.Values()
	c := func(x any) int {
		if a, ok := v.(int64); ok {
			return cmp.Compare(a, x.(int64))
		}
		return cmp.Compare(v.(string), x.(string))
	}
	switch b.Op() {
	case expr.OpEq:
		return c(vals[0]) == 0
	case expr.OpLt:
		return c(vals[0]) < 0
	case expr.OpLe:
		return c(vals[0]) <= 0
	case expr.OpGt:
		return c(vals[0]) > 0
	case expr.OpGe:
		return c(vals[0]) >= 0
	}
	for _, x := range vals { // OpIn
		if c(x) == 0 {
			return true
		}
	}
	return false
}

// boxed is row r of arr as statistics and partition values decode it (the
// array's Go type, int32 days for dates), nil when null.
func boxed(arr arrow.Array, r int) any {
	if arr.IsNull(r) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return a.Value(r)
	case *array.Int16:
		return a.Value(r)
	case *array.Int32:
		return a.Value(r)
	case *array.Int64:
		return a.Value(r)
	case *array.Date32:
		return int32(a.Value(r))
	case *array.String:
		return a.Value(r)
	case *array.LargeString:
		return a.Value(r)
	}
	panic(fmt.Sprintf("type %s", arr.DataType()))
}

// The three evaluators agree, over random columns of every type with
// nulls and boundary values (sliced at times) and random conjunctions of
// predicates with constants as SQL gives them: for every row, the row
// matcher, MayMatchValue and MayMatchRange of [v, v] say what the model
// says; and the range test of any [lo, hi] (the column's [min, max]
// included) is true whenever a row in it matches, so that pruning never
// skips a matching row.
func TestEvaluatorsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mem := newMem(t)
	bound, refused := 0, 0
	for _, dt := range exprtest.Types {
		kind := expr.KindOf(dt)
		for round := 0; round < 300; round++ {
			whole, wholeVals := exprtest.Column(rng, mem, dt, 64)
			arr, vals := whole, wholeVals
			if rng.IntN(3) == 0 { // a slice: the matcher reads from its offset
				i, j := rng.IntN(20), 44+rng.IntN(21)
				arr, vals = array.NewSlice(whole, int64(i), int64(j)), wholeVals[i:j]
				whole.Release()
			}
			var conj expr.Conj
			for range 1 + rng.IntN(3) {
				p := exprtest.Predicate(rng, "c", dt, vals)
				b, ok := expr.Bind(kind, p)
				if !ok {
					refused++
					continue
				}
				bound++
				conj = append(conj, b)
			}
			if len(conj) == 0 {
				arr.Release()
				continue
			}
			match, ok := conj.Matcher(arr)
			require.True(t, ok)
			matched := make([]bool, len(vals))
			for r, v := range vals {
				want := v != nil
				for _, b := range conj {
					want = want && satisfies(b, v)
				}
				matched[r] = want
				bv := boxed(arr, r)
				require.Equal(t, want, match(r), "%s row %d (%q) %v", dt, r, v, conj)
				require.Equal(t, want, conj.MayMatchValue(bv), "%s row %d (%q) %v: value", dt, r, v, conj)
				if v != nil {
					require.Equal(t, want, conj.MayMatchRange(bv, bv), "%s row %d (%q) %v: range", dt, r, v, conj)
				}
			}
			// ranges: the column's [min, max], and between two of its values
			var lo, hi int = -1, -1
			for r, v := range vals {
				if v == nil {
					continue
				}
				if lo < 0 || less(v, vals[lo]) {
					lo = r
				}
				if hi < 0 || less(vals[hi], v) {
					hi = r
				}
			}
			if lo < 0 {
				arr.Release()
				continue
			}
			ranges := [][2]int{{lo, hi}}
			for range 8 {
				a, b := rng.IntN(len(vals)), rng.IntN(len(vals))
				if vals[a] == nil || vals[b] == nil {
					continue
				}
				if less(vals[b], vals[a]) {
					a, b = b, a
				}
				ranges = append(ranges, [2]int{a, b})
			}
			for _, rg := range ranges {
				l, h := vals[rg[0]], vals[rg[1]]
				hit := false
				for r, v := range vals {
					hit = hit || (matched[r] && !less(v, l) && !less(h, v))
				}
				if hit {
					require.True(t, conj.MayMatchRange(boxed(arr, rg[0]), boxed(arr, rg[1])), "%s [%q, %q] %v: a row in it matches", dt, l, h, conj)
				}
			}
			arr.Release()
		}
	}
	require.Greater(t, bound, 5*refused, "most constants bind")
}

// less orders two present values of one column (int64 or string).
func less(a, b any) bool {
	if x, ok := a.(int64); ok {
		return x < b.(int64)
	}
	return a.(string) < b.(string)
}

// A conjunction prunes only values of its own kind; a matcher reads only
// arrays of its kind; the empty conjunction matches everything, nulls too.
func TestKindsAndEmptyConjunction(t *testing.T) {
	mem := newMem(t)
	ints, ok := expr.Bind(expr.KindInt64, expr.Predicate{Op: expr.OpEq, Values: []any{int64(5)}})
	require.True(t, ok)
	strs, ok := expr.Bind(expr.KindString, expr.Predicate{Op: expr.OpEq, Values: []any{"x"}})
	require.True(t, ok)
	require.False(t, expr.Conj{ints}.MayMatchInts(6, 9))
	require.True(t, expr.Conj{ints}.MayMatchStrings("a", "b"), "strings cannot tell of an integer predicate")
	require.False(t, expr.Conj{strs}.MayMatchStrings("a", "b"))
	require.True(t, expr.Conj{strs}.MayMatchInts(6, 9))
	require.True(t, expr.Conj{ints}.MayMatchRange(1.5, 2.5), "bounds of another type")
	require.True(t, expr.Conj{ints}.MayMatchRange(int64(1), "x"), "bounds of two types")
	require.False(t, expr.Conj{ints}.MayMatchValue(nil))
	require.True(t, expr.Conj{}.MayMatchValue(nil))

	b := array.NewInt32Builder(mem)
	b.AppendValues([]int32{5, 6}, nil)
	b.AppendNull()
	arr := b.NewArray()
	b.Release()
	defer arr.Release()
	_, ok = expr.Conj{ints}.Matcher(arr)
	require.False(t, ok, "an INT64 predicate on an int32 array")
	_, ok = expr.Conj{strs}.Matcher(arr)
	require.False(t, ok)
	all, ok := expr.Conj{}.Matcher(arr)
	require.True(t, ok)
	require.True(t, all(2), "the empty conjunction matches a null")
	i32, ok := expr.Bind(expr.KindInt32, expr.Predicate{Op: expr.OpIn, Values: []any{int64(6), "5"}})
	require.True(t, ok)
	m, ok := expr.Conj{i32}.Matcher(arr)
	require.True(t, ok)
	require.Equal(t, []bool{true, true, false}, []bool{m(0), m(1), m(2)})
	require.Nil(t, expr.Narrow(nil, 2, m), "every row kept: nil")
	require.Equal(t, []bool{true, true, false}, expr.Narrow(nil, 3, m))
	require.Equal(t, []bool{false, true, false}, expr.Narrow([]bool{false, true, true}, 3, m))
}
