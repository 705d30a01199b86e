//go:build duckdb_arrow

package query

import (
	"os"
	"testing"

	"github.com/flightd/flightd/internal/bufpool"
)

// TestMain poisons the buffers scans free back to their pool: DuckDB reads
// the batches a scan hands it through Arrow's C interface, out of the race
// detector's sight, so a batch freed while DuckDB still read it would show
// as wrong results here.
func TestMain(m *testing.M) {
	bufpool.Poison()
	os.Exit(m.Run())
}
