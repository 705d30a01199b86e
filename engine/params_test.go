package engine

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// params builds a parameter batch from JSON rows.
func params(t *testing.T, fields []arrow.Field, rowsJSON string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema(fields, nil), stringReader(rowsJSON))
	require.NoError(t, err)
	t.Cleanup(rec.Release)
	return rec
}

func TestLiteral(t *testing.T) {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	for _, tc := range []struct {
		typ  arrow.DataType
		json string
		want string
	}{
		{arrow.FixedWidthTypes.Boolean, `true`, "TRUE"},
		{arrow.PrimitiveTypes.Int32, `-5`, "-5"},
		{arrow.PrimitiveTypes.Uint64, `18446744073709551615`, "CAST(18446744073709551615 AS UBIGINT)"},
		{arrow.PrimitiveTypes.Int64, `7`, "CAST(7 AS BIGINT)"},
		{arrow.PrimitiveTypes.Int8, `-7`, "CAST(-7 AS TINYINT)"},
		{arrow.PrimitiveTypes.Float64, `0.1`, "CAST('0.1' AS DOUBLE)"},
		{arrow.PrimitiveTypes.Float32, `1.5`, "CAST('1.5' AS FLOAT)"},
		{arrow.BinaryTypes.String, `"it's"`, "'it''s'"},
		{arrow.BinaryTypes.LargeString, `"\\x41"`, `'\x41'`},
		{arrow.BinaryTypes.Binary, `"AAH/"`, `CAST('\x00\x01\xff' AS BLOB)`},
		{arrow.FixedWidthTypes.Date32, `"2024-02-29"`, "DATE '2024-02-29'"},
		{ts, `"2024-02-29T10:11:12.345678"`, "CAST('2024-02-29 10:11:12.345678' AS TIMESTAMP)"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, `"2024-02-29T10:11:12.000000001"`, "CAST('2024-02-29 10:11:12.000000001' AS TIMESTAMP_NS)"},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Berlin"}, `"2024-02-29T10:11:12Z"`, "CAST('2024-02-29 10:11:12+00' AS TIMESTAMPTZ)"},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, `"-12.30"`, "CAST('-12.30' AS DECIMAL(10, 2))"},
		{arrow.Null, `null`, "NULL"},
		{arrow.PrimitiveTypes.Int64, `null`, "CAST(NULL AS BIGINT)"},
		{arrow.BinaryTypes.String, `null`, "CAST(NULL AS VARCHAR)"},
	} {
		rec := params(t, []arrow.Field{{Name: "p", Type: tc.typ, Nullable: true}}, `[{"p": `+tc.json+`}]`)
		got, err := Literal(rec.Column(0), 0)
		require.NoError(t, err, tc.typ)
		require.Equal(t, tc.want, got, tc.typ)
	}
	rec := params(t, []arrow.Field{{Name: "p", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, `[{"p": [1]}]`)
	_, err := Literal(rec.Column(0), 0)
	require.ErrorContains(t, err, "cannot be bound")
}

func stringReader(s string) *strings.Reader { return strings.NewReader(s) }
