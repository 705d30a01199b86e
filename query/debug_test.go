//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/query/plan"
)

// TestResultStrings: string values of Arrow results read back as garbage
// when they were read after their batch was released (the batch's buffers
// are DuckDB's memory, freed with the batch's last reference). Batches
// that are retained keep their values, whatever DuckDB does next: long and
// short strings, in lists, structs and maps, over many batches, read only
// after later batches were fetched, the reader released and other
// statements run.
func TestResultStrings(t *testing.T) {
	e := newTestEngine(t)
	const n = 20000 // about ten DuckDB chunks
	res, err := e.Execute(context.Background(), plan.Analyze(fmt.Sprintf(`SELECT i,
		repeat('ab', 20) || i::VARCHAR AS long,
		'x' AS short,
		CASE WHEN i %% 7 = 0 THEN NULL ELSE 's' || i::VARCHAR END AS maybe,
		['k' || i::VARCHAR, repeat('l', 30) || i::VARCHAR] AS list,
		{'a': 'v' || i::VARCHAR, 'b': repeat('w', 40) || i::VARCHAR} AS st,
		MAP {'key' || i::VARCHAR: repeat('m', 20) || i::VARCHAR} AS m
		FROM range(%d) AS r(i) ORDER BY i`, n)))
	require.NoError(t, err)
	_, ok := res.Reader.(*arrowResult)
	require.True(t, ok, "the result must come through DuckDB's Arrow output, got %T", res.Reader)
	var kept []arrow.RecordBatch
	for res.Reader.Next() {
		rec := res.Reader.RecordBatch()
		rec.Retain()
		kept = append(kept, rec)
	}
	require.NoError(t, res.Reader.Err())
	res.Reader.Release()
	require.Greater(t, len(kept), 5)
	// Reuse the memory DuckDB freed.
	for i := 0; i < 3; i++ {
		run(t, e, `SELECT repeat('z', 50) || i::VARCHAR FROM range(20000) AS r(i)`)
	}
	row := 0
	for _, rec := range kept {
		for i := 0; i < int(rec.NumRows()); i++ {
			want := []string{
				fmt.Sprint(row),
				strings.Repeat("ab", 20) + fmt.Sprint(row),
				"x",
				fmt.Sprintf("s%d", row),
				fmt.Sprintf(`["k%d","%s%d"]`, row, strings.Repeat("l", 30), row),
				fmt.Sprintf(`{"a":"v%d","b":"%s%d"}`, row, strings.Repeat("w", 40), row),
				fmt.Sprintf(`[{"key":"key%d","value":"%s%d"}]`, row, strings.Repeat("m", 20), row),
			}
			if row%7 == 0 {
				want[3] = "(null)"
			}
			got := make([]string, rec.NumCols())
			for j := range got {
				got[j] = rec.Column(j).ValueStr(i)
			}
			require.Equal(t, want, got, "row %d", row)
			row++
		}
		rec.Release()
	}
	require.Equal(t, n, row)
}
