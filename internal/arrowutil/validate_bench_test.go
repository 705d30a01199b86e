package arrowutil

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkValidateRecord: a 10k-row ingest batch of an int64 and a
// 20-byte string column, per row.
func BenchmarkValidateRecord(b *testing.B) {
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 10000 {
		ib.Append(int64(i))
		sb.Append(fmt.Sprintf("customer-%011d", i))
	}
	ia, sa := ib.NewArray(), sb.NewArray()
	sc := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{ia, sa}, 10000)
	b.SetBytes(10000 * 28)
	for b.Loop() {
		if err := ValidateRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
}
