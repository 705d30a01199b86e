//go:build duckdb_arrow

package query

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResultStrings guards the reason results are built from rows (see
// rowreader.go): strings must read back intact.
func TestResultStrings(t *testing.T) {
	e := newTestEngine(t)
	res, err := e.Execute(context.Background(), `SELECT repeat('ab', 20) AS long, 'x' AS short, 'hello' || range::VARCHAR AS s FROM range(3) ORDER BY s`)
	require.NoError(t, err)
	long := "abababababababababababababababababababab"
	require.Equal(t, [][]string{{long, "x", "hello0"}, {long, "x", "hello1"}, {long, "x", "hello2"}}, drain(t, res.Reader))
}
