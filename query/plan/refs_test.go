package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTreeOfDuckDBOutput(t *testing.T) {
	js := `{"error":false,"statements":[{"node":{"type":"SELECT_NODE","from_table":{"type":"BASE_TABLE","alias":"","query_location":21,"schema_name":"shop","table_name":"orders$rt","catalog_name":""},"x":18446744073709551615}}]}`
	tree, ok := ParseTree(js)
	require.True(t, ok)
	var seen []Ref
	var keys []ViewKey
	err := FindRefs(tree, func(schema, table string) (Ref, bool, error) {
		r := Ref{DB: schema, Table: table}
		seen = append(seen, r)
		return r, true, nil
	}, "default", func(k ViewKey, _ Ref, _ *Object) error {
		keys = append(keys, k)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []Ref{{DB: "shop", Table: "orders$rt"}}, seen)
	require.Equal(t, []ViewKey{{Schema: "shop", Name: "orders$rt"}}, keys)
}
