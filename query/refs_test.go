package query

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTreeOfDuckDBOutput(t *testing.T) {
	js := `{"error":false,"statements":[{"node":{"type":"SELECT_NODE","from_table":{"type":"BASE_TABLE","alias":"","query_location":21,"schema_name":"shop","table_name":"orders$rt","catalog_name":""},"x":18446744073709551615}}]}`
	tree, ok := parseTree(js)
	require.True(t, ok)
	var seen []tableRef
	var keys []viewKey
	err := findRefs(tree, func(schema, table string) (tableRef, bool, error) {
		r := tableRef{db: schema, table: table}
		seen = append(seen, r)
		return r, true, nil
	}, "default", func(k viewKey, _ tableRef, _ *object) error {
		keys = append(keys, k)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []tableRef{{db: "shop", table: "orders$rt"}}, seen)
	require.Equal(t, []viewKey{{schema: "shop", name: "orders$rt"}}, keys)
}
