package flightsql

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
)

// TestColumnMetadataNamesSQLTypes: JDBC showed Arrow names (int64, utf8,
// timestamp[us]) and precision 0 for decimals, because no schema carried
// Flight SQL's column metadata. Declared types win for tables; results are
// named from their Arrow types as DuckDB spells them.
func TestColumnMetadataNamesSQLTypes(t *testing.T) {
	for _, c := range []struct {
		dt   arrow.DataType
		want engine.ColumnInfo
	}{
		{arrow.PrimitiveTypes.Int64, engine.ColumnInfo{TypeName: "BIGINT"}},
		{arrow.PrimitiveTypes.Int32, engine.ColumnInfo{TypeName: "INTEGER"}},
		{arrow.BinaryTypes.String, engine.ColumnInfo{TypeName: "VARCHAR"}},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, engine.ColumnInfo{TypeName: "DECIMAL(38, 10)", Precision: 38, Scale: 10}},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, engine.ColumnInfo{TypeName: "TIMESTAMP", Precision: 6}},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, engine.ColumnInfo{TypeName: "TIMESTAMP WITH TIME ZONE", Precision: 3}},
		{arrow.FixedWidthTypes.Time64us, engine.ColumnInfo{TypeName: "TIME", Precision: 6}},
		{arrow.ListOf(arrow.BinaryTypes.String), engine.ColumnInfo{TypeName: "VARCHAR[]"}},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}), engine.ColumnInfo{TypeName: `STRUCT("a" INTEGER)`}},
	} {
		require.Equal(t, c.want, sqlColumn(c.dt), c.dt.String())
	}

	src := arrow.NewSchema([]arrow.Field{
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"3"})},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	got := resultSchema(src)
	require.True(t, resultSchema(src).Equal(got), "the same schema describes the same way every time")
	m0 := got.Field(0).Metadata
	md := flightsql.ColumnMetadata{Data: &m0}
	name, _ := md.TypeName()
	p, _ := md.Precision()
	s, _ := md.Scale()
	require.Equal(t, []any{"DECIMAL(10, 2)", int32(10), int32(2)}, []any{name, p, s})
	require.Equal(t, "3", got.Field(0).Metadata.Values()[got.Field(0).Metadata.FindKey("PARQUET:field_id")], "existing metadata is kept")

	tbl := tableSchema(engine.TableInfo{Database: "shop", Name: "t$rt", Type: "VIEW", Schema: src,
		Columns: []engine.ColumnInfo{{TypeName: "DECIMAL(10, 2)", Precision: 10, Scale: 2}, {TypeName: "VARCHAR(100)", Precision: 100}}})
	m1 := tbl.Field(1).Metadata
	md = flightsql.ColumnMetadata{Data: &m1}
	name, _ = md.TypeName()
	p, _ = md.Precision()
	ro, _ := md.IsReadOnly()
	tn, _ := md.TableName()
	require.Equal(t, []any{"VARCHAR(100)", int32(100), true, "t$rt"}, []any{name, p, ro, tn})
}
