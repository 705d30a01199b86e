package plan

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
)

func TestBind(t *testing.T) {
	two := []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}
	batch := func(rowsJSON string) arrow.RecordBatch {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema(two, nil), strings.NewReader(rowsJSON))
		require.NoError(t, err)
		t.Cleanup(rec.Release)
		return rec
	}
	rows := batch(`[{"a": 1, "b": "x'y"}, {"a": null, "b": "?"}]`)
	one := batch(`[{"a": 7, "b": "k"}]`)
	bind := func(sql string, params arrow.RecordBatch) ([]string, error) { return Bind(Analyze(sql), params) }

	got, err := bind("SELECT * FROM t WHERE a = ? AND b = ? AND c = '?'", one)
	require.NoError(t, err)
	require.Equal(t, []string{"SELECT * FROM t WHERE a = CAST(7 AS BIGINT) AND b = 'k' AND c = '?'"}, got)

	// A one-row VALUES insert takes every row in one statement.
	got, err = bind("INSERT INTO t (a, b) VALUES (?, upper(?));", rows)
	require.NoError(t, err)
	require.Equal(t, []string{"INSERT INTO t (a, b) VALUES (CAST(1 AS BIGINT), upper('x''y')), (CAST(NULL AS BIGINT), upper('?'));"}, got)

	// A row with something evaluated per row stays a statement per row.
	got, err = bind("INSERT INTO t VALUES (?, (SELECT max(x) FROM u) || ?)", rows)
	require.NoError(t, err)
	require.Len(t, got, 2)
	// Anything else runs once per row.
	got, err = bind("INSERT INTO t SELECT $2, $1", rows)
	require.NoError(t, err)
	require.Equal(t, []string{"INSERT INTO t SELECT 'x''y', CAST(1 AS BIGINT)", "INSERT INTO t SELECT '?', CAST(NULL AS BIGINT)"}, got)

	got, err = bind("SELECT 1", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"SELECT 1"}, got)

	_, err = bind("SELECT ?", rows)
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, "takes 1 parameter(s) but 2 value column(s)")
	_, err = bind("SELECT 1", one)
	require.ErrorContains(t, err, "takes 0 parameter(s) but 2")
	_, err = bind("SELECT ?, $1", one)
	require.ErrorContains(t, err, "mixes")
}
