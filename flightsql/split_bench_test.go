package flightsql

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkSplitBatch: cutting a 131072-row batch of eight columns (ints,
// doubles, strings) into messages of DefaultMaxBatchBytes.
func BenchmarkSplitBatch(b *testing.B) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64},
		{Name: "c", Type: arrow.PrimitiveTypes.Float64}, {Name: "d", Type: arrow.PrimitiveTypes.Float64},
		{Name: "e", Type: arrow.BinaryTypes.String}, {Name: "f", Type: arrow.BinaryTypes.String},
		{Name: "g", Type: arrow.PrimitiveTypes.Int32}, {Name: "h", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	const n = 131072
	for i := range n {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Int64Builder).Append(int64(i))
		bld.Field(2).(*array.Float64Builder).Append(float64(i))
		bld.Field(3).(*array.Float64Builder).Append(float64(i))
		bld.Field(4).(*array.StringBuilder).Append(fmt.Sprint("customer-", i%1000))
		bld.Field(5).(*array.StringBuilder).Append(fmt.Sprint("a somewhat longer value ", i))
		bld.Field(6).(*array.Int32Builder).Append(int32(i))
		bld.Field(7).(*array.BooleanBuilder).Append(i%2 == 0)
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	defer rec.Release()
	b.ResetTimer()
	parts := 0
	for b.Loop() {
		ps := splitBatch(rec, DefaultMaxBatchBytes)
		parts = len(ps)
		for _, p := range ps {
			p.Release()
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(parts), "messages")
}
