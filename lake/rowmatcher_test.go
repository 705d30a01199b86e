package lake

import (
	"bytes"
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

// rowMatcher (typed, no boxing) agrees with mayMatchValue of the boxed
// value for every row, over random arrays with nulls and random predicates
// of every op on integer, date and string key columns.
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
			for i := range vals {
				switch v := small(); {
				case rng.IntN(8) == 0:
					vals[i] = nil
				case typ == "STRING":
					vals[i] = "k" + strconv.FormatInt(v, 10)
				case typ == "DATE":
					vals[i] = time.Unix((19000+v)*86400, 0).UTC().Format("2006-01-02")
				default:
					vals[i] = v
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
				require.Equal(t, mayMatchValue(preds, valueAt(arr, r, dt)), match(r), "%s row %d (%v) %+v", typ, r, valueAt(arr, r, dt), preds)
			}
			arr.Release()
		}
	}
}
