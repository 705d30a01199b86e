package union

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkFilterLakeBatch: dropping the rows the log replaces from a lake
// batch of 64k rows of the read benchmark's 8 columns, 1 row in 100
// dropped (t$rt with 1% of the keys in the log drops rows from nearly
// every lake batch).
func BenchmarkFilterLakeBatch(b *testing.B) {
	const n = 64 * 1024
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "token", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.Int32Builder).Append(int32(i % 1000))
		rb.Field(2).(*array.Float64Builder).Append(float64(i))
		rb.Field(3).(*array.Float64Builder).Append(float64(i) / 3)
		rb.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("customer-%d", i%50000))
		rb.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("%016x", i*7919))
		rb.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		rb.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)))
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = i%100 != 37
	}
	for b.Loop() {
		out, err := filterBatch(context.Background(), memory.DefaultAllocator, rec, keep)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
