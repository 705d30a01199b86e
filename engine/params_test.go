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

func TestBindParams(t *testing.T) {
	two := []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}
	rows := params(t, two, `[{"a": 1, "b": "x'y"}, {"a": null, "b": "?"}]`)
	one := params(t, two, `[{"a": 7, "b": "k"}]`)

	got, err := BindParams("SELECT * FROM t WHERE a = ? AND b = ? AND c = '?'", one)
	require.NoError(t, err)
	require.Equal(t, []string{"SELECT * FROM t WHERE a = CAST(7 AS BIGINT) AND b = 'k' AND c = '?'"}, got)

	// A one-row VALUES insert takes every row in one statement.
	got, err = BindParams("INSERT INTO t (a, b) VALUES (?, upper(?));", rows)
	require.NoError(t, err)
	require.Equal(t, []string{"INSERT INTO t (a, b) VALUES (CAST(1 AS BIGINT), upper('x''y')), (CAST(NULL AS BIGINT), upper('?'));"}, got)

	// A row with something evaluated per row stays a statement per row.
	got, err = BindParams("INSERT INTO t VALUES (?, (SELECT max(x) FROM u) || ?)", rows)
	require.NoError(t, err)
	require.Len(t, got, 2)
	// Anything else runs once per row.
	got, err = BindParams("INSERT INTO t SELECT $2, $1", rows)
	require.NoError(t, err)
	require.Equal(t, []string{"INSERT INTO t SELECT 'x''y', CAST(1 AS BIGINT)", "INSERT INTO t SELECT '?', CAST(NULL AS BIGINT)"}, got)

	got, err = BindParams("SELECT 1", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"SELECT 1"}, got)

	_, err = BindParams("SELECT ?", rows)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "takes 1 parameter(s) but 2 value column(s)")
	_, err = BindParams("SELECT 1", one)
	require.ErrorContains(t, err, "takes 0 parameter(s) but 2")
	_, err = BindParams("SELECT ?, $1", one)
	require.ErrorContains(t, err, "mixes")
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
