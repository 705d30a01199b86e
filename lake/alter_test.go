package lake

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// commitJSON commits rows, given as Arrow JSON of the table's columns, to
// an append table.
func commitJSON(t *testing.T, tb *Table, rows string) *Snapshot {
	t.Helper()
	ctx := context.Background()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, tb.Schema().ArrowSchema(), strings.NewReader(rows))
	require.NoError(t, err)
	defer rec.Release()
	prev, err := tb.latestSnapshotID(ctx)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	require.NoError(t, w.Write(ctx, 0, rec, nil, nil))
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: prev + 1, ExpectedLatest: prev})
	require.NoError(t, err)
	return s
}

// nestedIDs lists the ids of the ROW fields inside t, depth first.
func nestedIDs(t paimontype.DataType) []int {
	var ids []int
	switch t.Root {
	case paimontype.TypeArray, paimontype.TypeMultiset:
		ids = nestedIDs(*t.Elem)
	case paimontype.TypeMap:
		ids = append(nestedIDs(*t.Key), nestedIDs(*t.Value)...)
	case paimontype.TypeRow:
		for _, f := range t.Fields {
			ids = append(append(ids, f.ID), nestedIDs(f.Type)...)
		}
	}
	return ids
}

// TestAlterColumnNamesElementsAndValues: the paths of Java's
// UpdateColumnType reach an ARRAY's elements ("element") and a MAP's
// values ("value"), at any depth and through ROWs; the type there widens,
// the ids of the ROW fields inside stay, and files written before read
// under the new types. A MAP's keys, a MULTISET's elements, other names
// for what an ARRAY or MAP holds, narrowing and comments on elements are
// refused with the reason.
func TestAlterColumnNamesElementsAndValues(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	typ := func(s string) paimontype.DataType {
		dt, err := paimontype.ParseType(s)
		require.NoError(t, err)
		return dt
	}
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: []paimontype.Column{
		{Name: "a", Type: typ("ARRAY<INT>")},
		{Name: "m", Type: typ("MAP<STRING, SMALLINT NOT NULL>")},
		{Name: "ar", Type: typ("ARRAY<ROW<x INT, y ARRAY<FLOAT>>>")},
		{Name: "mr", Type: typ("MAP<INT, ROW<x INT, z MAP<INT, INT>>>")},
		{Name: "aa", Type: typ("ARRAY<ARRAY<INT NOT NULL>>")},
		{Name: "ms", Type: typ("MULTISET<INT>")},
	}}, false)
	require.NoError(t, err)
	before := tb.Schema()
	commitJSON(t, tb, `[{"a": [2147483647, null], "m": [{"key": "k", "value": 32767}],
		"ar": [{"x": -1, "y": [1.5]}, null], "mr": [{"key": 7, "value": {"x": 5, "z": [{"key": 1, "value": -2147483648}]}}],
		"aa": [[1, 2], []], "ms": null}]`)

	alter := func(path string, ch ColumnChange) (*Table, error) {
		return c.AlterColumn(ctx, "db", "t", strings.Split(path, "."), ch)
	}
	for _, tc := range []struct {
		path string
		ch   ColumnChange
	}{
		{"a.element", ColumnChange{Type: typ("BIGINT")}},
		{"m.value", ColumnChange{Type: typ("INT")}},
		{"ar.element.x", ColumnChange{Type: typ("BIGINT"), Comment: "ex", SetComment: true}},
		{"ar.element.y.element", ColumnChange{Type: typ("DOUBLE")}},
		{"mr.Value.x", ColumnChange{Type: typ("BIGINT")}},
		{"mr.value.z.value", ColumnChange{Type: typ("BIGINT")}},
		{"aa.ELEMENT.element", ColumnChange{Type: typ("BIGINT")}},
		{"aa.element.element", ColumnChange{DropNotNull: true}},
	} {
		tb, err = alter(tc.path, tc.ch)
		require.NoError(t, err, tc.path)
	}
	got := map[string]string{}
	for i, f := range tb.Schema().Fields {
		got[f.Name] = f.Type.String()
		require.Equal(t, before.Fields[i].ID, f.ID, f.Name)
		require.Equal(t, nestedIDs(before.Fields[i].Type), nestedIDs(f.Type), f.Name)
	}
	require.Equal(t, map[string]string{
		"a":  "ARRAY<BIGINT>",
		"m":  "MAP<STRING, INT NOT NULL>", // the value keeps its nullability
		"ar": "ARRAY<ROW<`x` BIGINT 'ex', `y` ARRAY<DOUBLE>>>",
		"mr": "MAP<INT, ROW<`x` BIGINT, `z` MAP<INT, BIGINT>>>",
		"aa": "ARRAY<ARRAY<BIGINT>>",
		"ms": "MULTISET<INT>",
	}, got)
	require.Equal(t, before.HighestFieldID, tb.Schema().HighestFieldID)

	// The file of the first schema reads under the new types, with a file of the last.
	snap := commitJSON(t, tb, `[{"a": [9223372036854775807], "m": [{"key": "h", "value": 2147483647}],
		"ar": [{"x": 9223372036854775807, "y": [1e300]}], "mr": null, "aa": [[null, 9223372036854775807]], "ms": null}]`)
	require.Equal(t, []string{
		`[2147483647,null],[{"key":"k","value":32767}],[{"x":-1,"y":[1.5]},null],[{"key":7,"value":{"x":5,"z":[{"key":1,"value":-2147483648}]}}],[[1,2],[]],null`,
		`[9223372036854775807],[{"key":"h","value":2147483647}],[{"x":9223372036854775807,"y":[1e+300]}],null,[[null,9223372036854775807]],null`,
	}, scanAll(t, tb, snap, nil))

	for _, tc := range []struct {
		path string
		ch   ColumnChange
		kind error
		says string
	}{
		{"a.element", ColumnChange{Type: typ("INT")}, ErrUnsupported, `"a.element" cannot change from BIGINT to INT`},
		{"m.value", ColumnChange{Type: typ("STRING")}, ErrUnsupported, `"m.value" cannot change from INT NOT NULL to STRING`},
		{"m.key", ColumnChange{Type: typ("VARCHAR(10)")}, ErrUnsupported, `"m" is of type MAP<STRING, INT NOT NULL>, whose keys keep their type`},
		{"mr.value.z.key", ColumnChange{Type: typ("BIGINT")}, ErrUnsupported, `"mr.value.z" is of type MAP<INT, BIGINT>, whose keys keep their type`},
		{"ms.element", ColumnChange{Type: typ("BIGINT")}, ErrUnsupported, `"ms" is of type MULTISET<INT>, whose elements keep their type`},
		{"a.element", ColumnChange{Comment: "c", SetComment: true}, ErrUnsupported, "has no comment"},
		{"a", ColumnChange{Type: typ("ARRAY<DOUBLE>")}, ErrUnsupported, "ALTER COLUMN a.element TYPE"},
		{"m", ColumnChange{Type: typ("MAP<STRING, BIGINT>")}, ErrUnsupported, "ALTER COLUMN m.value TYPE"},
		{"ar.element", ColumnChange{Type: typ("ROW<x BIGINT>")}, ErrUnsupported, "ALTER COLUMN ar.element.<field> TYPE"},
		{"a.x", ColumnChange{Type: typ("BIGINT")}, ErrInvalidName, `"a" is of type ARRAY<BIGINT>: name its elements a.element`},
		{"m.values", ColumnChange{Type: typ("BIGINT")}, ErrInvalidName, `name its values m.value`},
		{"ar.x", ColumnChange{Type: typ("BIGINT")}, ErrInvalidName, `name its elements ar.element`},
		{"a.element.x", ColumnChange{Type: typ("BIGINT")}, ErrInvalidName, `"a.element" is of type BIGINT, which has no field "x"`},
		{"ar.element.q", ColumnChange{Type: typ("BIGINT")}, ErrInvalidName, `ROW column "ar.element" has no field "q"`},
		{"a.element.element", ColumnChange{Type: typ("BIGINT")}, ErrInvalidName, `"a.element" is of type BIGINT`},
	} {
		_, err := alter(tc.path, tc.ch)
		require.True(t, errors.Is(err, tc.kind), "%s: %v", tc.path, err)
		require.ErrorContains(t, err, tc.says, tc.path)
	}
}
