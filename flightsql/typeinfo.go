package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

// xdbcType is one row of GetXdbcTypeInfo (JDBC's getTypeInfo, which DBeaver
// reads when it connects): a column type CREATE TABLE takes, as Paimon
// names it, with the XDBC/JDBC type code.
type xdbcType struct {
	name        string
	code        int32 // XdbcDataType (the JDBC/ODBC code)
	size        int32 // largest precision or length; 0: none
	prefix      string
	params      []string // what CREATE TABLE takes in parentheses
	numeric     bool
	minScale    int32
	maxScale    int32
	subcode     int32 // date 1, time 2, timestamp 3 (sql_data_type 9)
	hasScale    bool
	caseMatters bool
}

// xdbcTypes are the scalar Paimon types (composites, ARRAY<...>, MAP<...>
// and ROW<...>, have no XDBC code), ordered by code as JDBC asks.
var xdbcTypes = []xdbcType{
	{name: "TINYINT", code: -6, size: 3, numeric: true},
	{name: "BIGINT", code: -5, size: 19, numeric: true},
	{name: "BYTES", code: -3, size: 2147483647},
	{name: "VARBINARY", code: -3, size: 2147483647, params: []string{"length"}},
	{name: "BINARY", code: -2, size: 2147483647, params: []string{"length"}},
	{name: "CHAR", code: 1, size: 2147483647, prefix: "'", params: []string{"length"}, caseMatters: true},
	{name: "DECIMAL", code: 3, size: 38, params: []string{"precision", "scale"}, numeric: true, hasScale: true, maxScale: 38},
	{name: "INT", code: 4, size: 10, numeric: true},
	{name: "SMALLINT", code: 5, size: 5, numeric: true},
	{name: "FLOAT", code: 7, size: 7, numeric: true},
	{name: "DOUBLE", code: 8, size: 15, numeric: true},
	{name: "STRING", code: 12, size: 2147483647, prefix: "'", caseMatters: true},
	{name: "VARCHAR", code: 12, size: 2147483647, prefix: "'", params: []string{"length"}, caseMatters: true},
	{name: "BOOLEAN", code: 16, size: 1},
	{name: "DATE", code: 91, size: 10, prefix: "DATE '", subcode: 1},
	{name: "TIME", code: 92, size: 18, prefix: "TIME '", params: []string{"precision"}, subcode: 2, hasScale: true, maxScale: 9},
	{name: "TIMESTAMP", code: 93, size: 29, prefix: "TIMESTAMP '", params: []string{"precision"}, subcode: 3, hasScale: true, maxScale: 9},
	{name: "TIMESTAMP_LTZ", code: 93, size: 35, params: []string{"precision"}, subcode: 3, hasScale: true, maxScale: 9},
}

// GetFlightInfoXdbcTypeInfo describes the type list.
func (s *Server) GetFlightInfoXdbcTypeInfo(ctx context.Context, cmd flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.XdbcTypeInfo), nil
}

// DoGetXdbcTypeInfo lists the types, or those of one code.
func (s *Server) DoGetXdbcTypeInfo(ctx context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, schema_ref.XdbcTypeInfo)
	defer b.Release()
	str := func(i int, v string) {
		if v == "" {
			b.Field(i).AppendNull()
			return
		}
		b.Field(i).(*array.StringBuilder).Append(v)
	}
	i32 := func(i int, v int32, ok bool) {
		if !ok {
			b.Field(i).AppendNull()
			return
		}
		b.Field(i).(*array.Int32Builder).Append(v)
	}
	for _, t := range xdbcTypes {
		if want := cmd.GetDataType(); want != nil && *want != t.code {
			continue
		}
		b.Field(0).(*array.StringBuilder).Append(t.name)
		b.Field(1).(*array.Int32Builder).Append(t.code)
		i32(2, t.size, t.size > 0)
		str(3, t.prefix)
		if t.prefix != "" {
			b.Field(4).(*array.StringBuilder).Append("'")
		} else {
			b.Field(4).AppendNull()
		}
		if t.params == nil {
			b.Field(5).AppendNull()
		} else {
			lb := b.Field(5).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).AppendValues(t.params, nil)
		}
		b.Field(6).(*array.Int32Builder).Append(1) // nullable
		b.Field(7).(*array.BooleanBuilder).Append(t.caseMatters)
		b.Field(8).(*array.Int32Builder).Append(3) // searchable in any WHERE
		if t.numeric {
			b.Field(9).(*array.BooleanBuilder).Append(false)
		} else {
			b.Field(9).AppendNull()
		}
		b.Field(10).(*array.BooleanBuilder).Append(false) // no money types
		b.Field(11).(*array.BooleanBuilder).Append(false) // no auto-increment
		str(12, t.name)
		i32(13, t.minScale, t.hasScale)
		i32(14, t.maxScale, t.hasScale)
		if t.subcode > 0 {
			b.Field(15).(*array.Int32Builder).Append(9) // SQL_DATETIME
		} else {
			b.Field(15).(*array.Int32Builder).Append(t.code)
		}
		i32(16, t.subcode, t.subcode > 0)
		i32(17, 10, t.numeric)
		b.Field(18).AppendNull()
	}
	return s.single(b.NewRecordBatch())
}
