package paimontype

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustType(t *testing.T, s string) DataType {
	t.Helper()
	dt, err := ParseType(s)
	require.NoError(t, err)
	return dt
}

func TestParseTypeRoundTrip(t *testing.T) {
	cases := []struct{ in, want string }{
		{"BIGINT NOT NULL", "BIGINT NOT NULL"},
		// DuckDB's array spelling.
		{"INT[]", "ARRAY<INT>"},
		{"varchar(10)[][] NOT NULL", "ARRAY<ARRAY<VARCHAR(10)>> NOT NULL"},
		{"MAP<STRING, BIGINT[]>", "MAP<STRING, ARRAY<BIGINT>>"},
		{"ROW<a INT[]>[]", "ARRAY<ROW<`a` ARRAY<INT>>>"},
		{"bigint not null", "BIGINT NOT NULL"},
		{"INTEGER", "INT"},
		{"int null", "INT"},
		{"VARCHAR", "STRING"},
		{"varchar(10)", "VARCHAR(10)"},
		{"VARCHAR(2147483647)", "STRING"},
		{"TEXT", "STRING"},
		{"STRING", "STRING"},
		{"CHAR(3)", "CHAR(3)"},
		{"CHAR", "CHAR(1)"},
		{"BINARY(4)", "BINARY(4)"},
		{"VARBINARY(8)", "VARBINARY(8)"},
		{"BYTES", "BYTES"},
		{"DECIMAL", "DECIMAL(10, 0)"},
		{"DECIMAL(10,2)", "DECIMAL(10, 2)"},
		{"DECIMAL(10, 2) NOT NULL", "DECIMAL(10, 2) NOT NULL"},
		{"NUMERIC(38, 4)", "DECIMAL(38, 4)"},
		{"DEC(5)", "DECIMAL(5, 0)"},
		{"TIMESTAMP", "TIMESTAMP(6)"},
		{"TIMESTAMP(3)", "TIMESTAMP(3)"},
		{"TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3) WITH LOCAL TIME ZONE"},
		{"TIMESTAMP_LTZ(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"},
		{"TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP(6)"},
		{"DATE", "DATE"},
		{"TIME", "TIME(0)"},
		{"TIME(3)", "TIME(3)"},
		{"BOOL", "BOOLEAN"},
		{"TINYINT", "TINYINT"},
		{"SMALLINT", "SMALLINT"},
		{"REAL", "FLOAT"},
		{"DOUBLE PRECISION", "DOUBLE"},
		{"ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"},
		{"MAP<STRING, BIGINT> NOT NULL", "MAP<STRING, BIGINT> NOT NULL"},
		{"ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			dt, err := ParseType(c.in)
			require.NoError(t, err)
			require.Equal(t, c.want, dt.String())
			again, err := ParseType(dt.String())
			require.NoError(t, err)
			require.Equal(t, dt.String(), again.String())
		})
	}
	for _, bad := range []string{"", "FOO", "DECIMAL(50, 2)", "VARCHAR(", "INT NOT", "ARRAY<INT"} {
		_, err := ParseType(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", bad))
	}
}

func TestSchemaJSONGolden(t *testing.T) {
	ts, err := NewTableSchema(Schema{
		Columns: []Column{
			{Name: "id", Type: mustType(t, "BIGINT")},
			{Name: "name", Type: mustType(t, "STRING"), Comment: "the name"},
			{Name: "tags", Type: mustType(t, "ARRAY<STRING>")},
			{Name: "dt", Type: mustType(t, "STRING")},
		},
		PrimaryKeys:   []string{"dt", "id"},
		PartitionKeys: []string{"dt"},
		Options:       map[string]string{"bucket": "4"},
	}, 1735689600000)
	require.NoError(t, err)
	got, err := ts.MarshalJSON()
	require.NoError(t, err)
	want := `{
  "version" : 3,
  "id" : 0,
  "fields" : [ {
    "id" : 0,
    "name" : "id",
    "type" : "BIGINT NOT NULL"
  }, {
    "id" : 1,
    "name" : "name",
    "type" : "STRING",
    "description" : "the name"
  }, {
    "id" : 2,
    "name" : "tags",
    "type" : {
      "type" : "ARRAY",
      "element" : "STRING"
    }
  }, {
    "id" : 3,
    "name" : "dt",
    "type" : "STRING NOT NULL"
  } ],
  "highestFieldId" : 3,
  "partitionKeys" : [ "dt" ],
  "primaryKeys" : [ "dt", "id" ],
  "options" : {
    "bucket" : "4"
  },
  "timeMillis" : 1735689600000
}`
	require.Equal(t, want, string(got))
	var back TableSchema
	require.NoError(t, json.Unmarshal(got, &back))
	again, _ := back.MarshalJSON()
	require.Equal(t, want, string(again))
	require.Equal(t, 4, back.NumBuckets())
	require.True(t, back.HasPrimaryKey())
	as := back.ArrowSchema()
	require.False(t, as.Field(0).Nullable)
	id, _ := as.Field(3).Metadata.GetValue("PARQUET:field_id")
	require.Equal(t, "3", id)
}
