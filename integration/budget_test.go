package integration

import (
	"strconv"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestDiskBudget fills the log past --log-disk-budget: the write that
// would cross it fails with a clear error, nothing of it lands, and the
// server keeps serving reads.
func TestDiskBudget(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--log-disk-budget", "48MiB", "--tiering-interval", "1h")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE ap (id BIGINT, v BIGINT)")
	ids := make([]int64, 100_000)
	for i := range ids {
		ids[i] = int64(i)
	}
	rec := kvBatch(ids, ids)
	defer rec.Release()
	var err error
	accepted := 0
	for i := 0; i < 100 && err == nil; i++ {
		if _, err = c.ingest("default", "ap", adbc.OptionValueIngestModeAppend, rec); err == nil {
			accepted++
		}
	}
	require.ErrorContains(t, err, "disk budget")
	require.ErrorContains(t, err, "ResourceExhausted")
	require.Positive(t, accepted)
	require.Equal(t, [][]string{{"100000"}}, c.mustQuery(`SELECT count(*) / `+strconv.Itoa(accepted)+` FROM "ap$rt"`))
}
