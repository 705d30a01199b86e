//go:build duckdb_arrow

package query

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

// The row path builds results from DuckDB's row interface with Arrow
// builders. It serves statements with a column whose DuckDB Arrow type
// differs from the types below (arrowResultTypes in arrowresult.go), so
// that clients keep getting the same types; every other result streams
// as Arrow. Its results are materialised by DuckDB before the first row.

// resultBatchRows and resultBatchBytes bound result batches (Arrow
// results: one DuckDB chunk, 2048 rows, cut by bytes): a batch ends
// at whichever comes first (values counted by their length, others as 8
// bytes), so that wide values do not build a batch of gigabytes (or past
// the 2 GiB a string column's offsets reach) before the server cuts it
// into messages.
const (
	resultBatchRows  = 8192
	resultBatchBytes = 8 << 20
)

// rowReader turns driver.Rows into Arrow batches.
type rowReader struct {
	ctx     context.Context
	refs    atomic.Int64
	rows    driver.Rows
	schema  *arrow.Schema
	mem     memory.Allocator
	builder *array.RecordBuilder
	cur     arrow.RecordBatch
	vals    []driver.Value
	err     error
	done    bool
	onClose func()
}

// newRowReader reads rows until ctx ends (then its cause is the error).
func newRowReader(ctx context.Context, mem memory.Allocator, rows driver.Rows, onClose func()) (*rowReader, error) {
	cols := rows.Columns()
	typed, ok := rows.(driver.RowsColumnTypeDatabaseTypeName)
	if !ok {
		return nil, errors.New("query: duckdb rows carry no type names")
	}
	ps, _ := rows.(driver.RowsColumnTypePrecisionScale)
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		var p, s int64
		if ps != nil {
			p, s, _ = ps.ColumnTypePrecisionScale(i)
		}
		fields[i] = arrow.Field{Name: c, Type: arrowTypeOf(typed.ColumnTypeDatabaseTypeName(i), p, s), Nullable: true}
	}
	sc := arrow.NewSchema(fields, nil)
	r := &rowReader{ctx: ctx, rows: rows, schema: sc, mem: mem, builder: array.NewRecordBuilder(mem, sc), vals: make([]driver.Value, len(cols)), onClose: onClose}
	r.refs.Store(1)
	return r, nil
}

// arrowTypeOf maps a DuckDB type name to the Arrow type of its results.
func arrowTypeOf(name string, precision, scale int64) arrow.DataType {
	switch {
	case name == "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean
	case name == "TINYINT":
		return arrow.PrimitiveTypes.Int8
	case name == "SMALLINT":
		return arrow.PrimitiveTypes.Int16
	case name == "INTEGER":
		return arrow.PrimitiveTypes.Int32
	case name == "BIGINT":
		return arrow.PrimitiveTypes.Int64
	case name == "UTINYINT":
		return arrow.PrimitiveTypes.Uint8
	case name == "USMALLINT":
		return arrow.PrimitiveTypes.Uint16
	case name == "UINTEGER":
		return arrow.PrimitiveTypes.Uint32
	case name == "UBIGINT":
		return arrow.PrimitiveTypes.Uint64
	case name == "FLOAT":
		return arrow.PrimitiveTypes.Float32
	case name == "DOUBLE":
		return arrow.PrimitiveTypes.Float64
	case name == "HUGEINT", name == "UHUGEINT":
		return &arrow.Decimal128Type{Precision: 38, Scale: 0}
	case strings.HasPrefix(name, "DECIMAL"):
		// The type name carries the width and scale: DECIMAL(38,2).
		var p, s int32
		if _, err := fmt.Sscanf(name, "DECIMAL(%d,%d)", &p, &s); err == nil {
			return &arrow.Decimal128Type{Precision: p, Scale: s}
		}
		return &arrow.Decimal128Type{Precision: int32(precision), Scale: int32(scale)}
	case name == "DATE":
		return arrow.FixedWidthTypes.Date32
	case name == "TIME":
		return arrow.FixedWidthTypes.Time64us
	case name == "TIMESTAMP":
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case name == "TIMESTAMP_S":
		return &arrow.TimestampType{Unit: arrow.Second}
	case name == "TIMESTAMP_MS":
		return &arrow.TimestampType{Unit: arrow.Millisecond}
	case name == "TIMESTAMP_NS":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case name == "TIMESTAMPTZ", name == "TIMESTAMP WITH TIME ZONE":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case name == "BLOB":
		return arrow.BinaryTypes.Binary
	}
	if t, ok := nestedTypeOf(name); ok {
		return t
	}
	// VARCHAR, and every other type (UUID, INTERVAL, ...) rendered as text.
	return arrow.BinaryTypes.String
}

func (r *rowReader) Schema() *arrow.Schema { return r.schema }

func (r *rowReader) Retain() { r.refs.Add(1) }

func (r *rowReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.builder.Release()
	_ = r.rows.Close()
	if r.onClose != nil {
		r.onClose()
	}
}

func (r *rowReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done || r.err != nil {
		return false
	}
	if r.ctx.Err() != nil {
		r.err = context.Cause(r.ctx)
		return false
	}
	n, size := 0, 0
	for n < resultBatchRows && size < resultBatchBytes {
		if err := r.rows.Next(r.vals); err != nil {
			if !errors.Is(err, io.EOF) {
				r.err = err
				return false
			}
			r.done = true
			break
		}
		for i, v := range r.vals {
			switch v := v.(type) {
			case string:
				size += len(v)
			case []byte:
				size += len(v)
			default:
				size += 8
			}
			if err := appendValue(r.builder.Field(i), v); err != nil {
				r.err = fmt.Errorf("query: column %q: %w", r.schema.Field(i).Name, err)
				return false
			}
		}
		n++
	}
	if n == 0 {
		return false
	}
	r.cur = r.builder.NewRecordBatch()
	return true
}

func (r *rowReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated spelling of RecordBatch.
func (r *rowReader) Record() arrow.RecordBatch { return r.cur }

func (r *rowReader) Err() error { return r.err }

func appendValue(b array.Builder, v driver.Value) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	if nested, err := appendNested(b, v); nested {
		return err
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(v.(uint8))
	case *array.Uint16Builder:
		b.Append(v.(uint16))
	case *array.Uint32Builder:
		b.Append(v.(uint32))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Date32Builder:
		b.Append(arrow.Date32FromTime(v.(time.Time)))
	case *array.Time64Builder:
		t := v.(time.Time)
		b.Append(arrow.Time64(t.Sub(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())).Microseconds()))
	case *array.TimestampBuilder:
		t := v.(time.Time)
		switch b.Type().(*arrow.TimestampType).Unit {
		case arrow.Second:
			b.Append(arrow.Timestamp(t.Unix()))
		case arrow.Millisecond:
			b.Append(arrow.Timestamp(t.UnixMilli()))
		case arrow.Nanosecond:
			b.Append(arrow.Timestamp(t.UnixNano()))
		default:
			b.Append(arrow.Timestamp(t.UnixMicro()))
		}
	case *array.Decimal128Builder:
		switch d := v.(type) {
		case duckdb.Decimal:
			b.Append(decimal128.FromBigInt(d.Value))
		case *big.Int:
			b.Append(decimal128.FromBigInt(d))
		default:
			return fmt.Errorf("unexpected %T for a decimal", v)
		}
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			b.Append(x)
		default:
			b.Append([]byte(fmt.Sprint(v)))
		}
	case *array.StringBuilder:
		switch x := v.(type) {
		case string:
			b.Append(x)
		case []byte:
			b.Append(string(x))
		default:
			b.Append(fmt.Sprint(v))
		}
	default:
		return fmt.Errorf("no builder for %T", b)
	}
	return nil
}
