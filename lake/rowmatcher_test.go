package lake

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
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
			var arr arrow.Array
			switch typ {
			case "BIGINT":
				b := array.NewInt64Builder(mem)
				for range n {
					if rng.IntN(8) == 0 {
						b.AppendNull()
					} else {
						b.Append(small())
					}
				}
				arr = b.NewArray()
			case "INT":
				b := array.NewInt32Builder(mem)
				for range n {
					b.Append(int32(small()))
				}
				arr = b.NewArray()
			case "SMALLINT":
				b := array.NewInt16Builder(mem)
				for range n {
					b.Append(int16(small()))
				}
				arr = b.NewArray()
			case "TINYINT":
				b := array.NewInt8Builder(mem)
				for range n {
					b.Append(int8(small()))
				}
				arr = b.NewArray()
			case "DATE":
				b := array.NewDate32Builder(mem)
				for range n {
					if rng.IntN(8) == 0 {
						b.AppendNull()
					} else {
						b.Append(arrow.Date32(19000 + small()))
					}
				}
				arr = b.NewArray()
			case "STRING":
				b := array.NewStringBuilder(mem)
				for range n {
					if rng.IntN(8) == 0 {
						b.AppendNull()
					} else {
						b.Append("k" + strconv.FormatInt(small(), 10))
					}
				}
				arr = b.NewArray()
			}
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
