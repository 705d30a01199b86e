package lake

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// TestEvolveRecordByFieldID: rows of an older schema become rows of a newer
// one by field id (rename kept, added null, widened cast, dropped left out,
// a nested ROW field renamed and one added), and what cannot be evolved is
// an error naming the column.
func TestEvolveRecordByFieldID(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	typ := func(s string) paimontype.DataType {
		dt, err := paimontype.ParseType(s)
		require.NoError(t, err)
		return dt
	}
	from := &paimontype.TableSchema{ID: 0, Fields: []paimontype.DataField{
		{ID: 0, Name: "id", Type: typ("BIGINT NOT NULL")},
		{ID: 1, Name: "a", Type: typ("INT")},
		{ID: 2, Name: "b", Type: typ("STRING")},
		{ID: 3, Name: "gone", Type: typ("STRING")},
		{ID: 4, Name: "r", Type: paimontype.DataType{Root: paimontype.TypeRow, Fields: []paimontype.DataField{{ID: 5, Name: "x", Type: typ("INT")}}}},
	}, HighestFieldID: 5}
	to := &paimontype.TableSchema{ID: 3, Fields: []paimontype.DataField{
		{ID: 0, Name: "id", Type: typ("BIGINT NOT NULL")},
		{ID: 6, Name: "added", Type: typ("STRING")},
		{ID: 2, Name: "b2", Type: typ("STRING")},
		{ID: 1, Name: "a", Type: typ("BIGINT")},
		{ID: 4, Name: "r", Type: paimontype.DataType{Root: paimontype.TypeRow, Fields: []paimontype.DataField{{ID: 5, Name: "x2", Type: typ("BIGINT")}, {ID: 7, Name: "y", Type: typ("STRING")}}}},
	}, HighestFieldID: 7}
	rec, _, err := array.RecordFromJSON(mem, from.ArrowSchema(), strings.NewReader(
		`[{"id": 1, "a": -5, "b": "one", "gone": "g", "r": {"x": 7}}, {"id": 2, "a": null, "b": null, "gone": null, "r": null}]`))
	require.NoError(t, err)
	defer rec.Release()

	out, err := EvolveRecord(ctx, rec, from, to, mem)
	require.NoError(t, err)
	defer out.Release()
	require.True(t, out.Schema().Equal(to.ArrowSchema()))
	got, err := out.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, `[{"id": 1, "added": null, "b2": "one", "a": -5, "r": {"x2": 7, "y": null}},
		{"id": 2, "added": null, "b2": null, "a": null, "r": null}]`, string(got))
	require.False(t, SameColumns(from, to))
	require.True(t, SameColumns(to, to))

	// Back from BIGINT to INT: a value that does not fit is an error naming the column.
	big, _, err := array.RecordFromJSON(mem, to.ArrowSchema(), strings.NewReader(`[{"id": 1, "a": 5000000000}]`))
	require.NoError(t, err)
	defer big.Release()
	_, err = EvolveRecord(ctx, big, to, from, mem)
	require.ErrorContains(t, err, "column a")
	// A NOT NULL column the rows do not have.
	strict := &paimontype.TableSchema{ID: 4, Fields: append(append([]paimontype.DataField(nil), to.Fields...), paimontype.DataField{ID: 8, Name: "must", Type: typ("INT NOT NULL")})}
	_, err = EvolveRecord(ctx, rec, from, strict, mem)
	require.ErrorContains(t, err, "must")
	// Rows that are not of from.
	_, err = EvolveRecord(ctx, rec, to, from, mem)
	require.ErrorContains(t, err, "rows of schema 3 hold column")
}
