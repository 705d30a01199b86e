package query

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTreeOfDuckDBOutput(t *testing.T) {
	js := `{"error":false,"statements":[{"node":{"type":"SELECT_NODE","from_table":{"type":"BASE_TABLE","alias":"","query_location":21,"schema_name":"shop","table_name":"orders$rt","catalog_name":""},"x":18446744073709551615}}]}`
	tree, ok := parseTree(js)
	require.True(t, ok)
	var seen []tableRef
	err := rewriteTree(tree, func(schema, table string) (tableRef, bool, error) {
		r := tableRef{db: schema, table: table}
		seen = append(seen, r)
		return r, true, nil
	}, func(tableRef, *object) string { return "__v0" })
	require.NoError(t, err)
	require.Equal(t, []tableRef{{db: "shop", table: "orders$rt"}}, seen)
	out, err := json.Marshal(tree)
	require.NoError(t, err)
	require.Equal(t, `{"error":false,"statements":[{"node":{"type":"SELECT_NODE","from_table":{"type":"BASE_TABLE","alias":"orders$rt","query_location":21,"schema_name":"","table_name":"__v0","catalog_name":""},"x":18446744073709551615}}]}`, string(out), "key order and numbers are kept")
}
