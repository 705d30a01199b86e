package lake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// rowMatcher (typed, no boxing) and mayMatchValue of the boxed value both
// say what a model of SQL's comparisons says for every row, over random
// arrays with nulls and random predicates of every op on integer, date and
// string key columns.
func TestRowMatcherMatchesMayMatchValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mem := memory.DefaultAllocator
	for _, typ := range []string{"BIGINT", "INT", "SMALLINT", "TINYINT", "DATE", "STRING"} {
		dt, err := ParseType(typ)
		require.NoError(t, err)
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
				case typ == "STRING":
					vals[i] = "k" + strconv.FormatInt(v, 10)
					norm[i] = vals[i]
				case typ == "DATE":
					vals[i] = time.Unix((19000+v)*86400, 0).UTC().Format("2006-01-02")
					norm[i] = 19000 + v
				default:
					vals[i] = v
					norm[i] = v
				}
			}
			js, err := json.Marshal(vals)
			require.NoError(t, err)
			arr, _, err := array.FromJSON(mem, dt.ArrowType(), bytes.NewReader(js))
			require.NoError(t, err, "%s", js)
			constant := func() any {
				switch typ {
				case "STRING":
					return "k" + strconv.FormatInt(small(), 10)
				case "DATE":
					return fmt.Sprintf("2022-01-%02d", 1+rng.IntN(28)) // near day 19000 + [-10, 10)
				}
				if rng.IntN(4) == 0 {
					return strconv.FormatInt(small(), 10) // a string literal, as SQL casts it
				}
				return small()
			}
			var preds []colPred
			for range 1 + rng.IntN(3) {
				p := Predicate{Column: "k", Op: Op(rng.IntN(int(OpIn) + 1))}
				p.Values = []any{constant()}
				if p.Op == OpIn {
					for range rng.IntN(4) {
						p.Values = append(p.Values, constant())
					}
				}
				var cp colPred
				cp.op = p.Op
				for _, v := range p.Values {
					nv, ok := normConst(dt, v)
					require.True(t, ok, "%s %v", typ, v)
					cp.vals = append(cp.vals, nv)
				}
				preds = append(preds, cp)
			}
			match := rowMatcher(arr, dt, preds)
			for r := 0; r < n; r++ {
				want := norm[r] != nil
				for _, p := range preds {
					want = want && satisfies(p, norm[r])
				}
				require.Equal(t, want, mayMatchValue(preds, valueAt(arr, r, dt)), "%s row %d (%v) %+v: boxed", typ, r, norm[r], preds)
				require.Equal(t, want, match(r), "%s row %d (%v) %+v", typ, r, norm[r], preds)
			}
			arr.Release()
		}
	}
}

// satisfies is the model: whether v (int64 or string, present) satisfies p,
// as SQL compares.
func satisfies(p colPred, v any) bool {
	c := func(x any) int {
		if a, ok := v.(int64); ok {
			return cmp.Compare(a, x.(int64))
		}
		return cmp.Compare(v.(string), x.(string))
	}
	switch p.op {
	case OpEq:
		return c(p.vals[0]) == 0
	case OpLt:
		return c(p.vals[0]) < 0
	case OpLe:
		return c(p.vals[0]) <= 0
	case OpGt:
		return c(p.vals[0]) > 0
	case OpGe:
		return c(p.vals[0]) >= 0
	}
	for _, x := range p.vals { // OpIn
		if c(x) == 0 {
			return true
		}
	}
	return false
}
