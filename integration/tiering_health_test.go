package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestFailingTableReportsAndHeals: a table whose rounds cannot write (a
// plain file sits where its bucket's directory goes) shows its consecutive
// failures, the error and the next attempt in sys.tiering and in the
// metrics while it backs off; once the file is gone it tiers by itself and
// sys.tiering shows it healthy.
func TestFailingTableReportsAndHeals(t *testing.T) {
	t.Parallel()
	maddr := freeAddr(t)
	srv := testserver.Start(t, t.TempDir(), "--tiering-interval", "2s", "--metrics-addr", maddr)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE h")
	c.mustExec("CREATE TABLE h.t (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
	block := filepath.Join(srv.DataDir, "warehouse", "h.db", "t", "bucket-0")
	require.NoError(t, os.WriteFile(block, []byte("in the way"), 0o644))
	rec := kvBatch([]int64{1, 2, 3}, []int64{10, 20, 30})
	_, err := c.ingest("h", "t", adbc.OptionValueIngestModeAppend, rec)
	rec.Release()
	require.NoError(t, err)

	const status = `SELECT failed_rounds, count(last_error) OVER (), count(retry_at) OVER (), lag_rows FROM sys.tiering WHERE database = 'h'`
	testserver.Eventually(t, 30*time.Second, func() error {
		row := c.mustQuery(status)[0]
		if n, _ := strconv.Atoi(row[0]); n < 3 || row[1] != "1" || row[2] != "1" || row[3] != "3" {
			return fmt.Errorf("sys.tiering: %v, want at least 3 failed rounds with an error and a retry time", row)
		}
		return nil
	})
	require.Contains(t, c.scalar(`SELECT last_error FROM sys.tiering WHERE database = 'h'`), "bucket-0")
	m := scrape(t, maddr)
	require.GreaterOrEqual(t, m[series("flightd_tiering_consecutive_failed_rounds", "h", "t")], 3.0)
	require.GreaterOrEqual(t, m[series("flightd_tiering_rounds_failed_total", "h", "t")], 3.0)
	require.Equal(t, "3", c.scalar(`SELECT count(*) FROM "h"."t$rt"`), "acknowledged rows stay readable")

	require.NoError(t, os.Remove(block))
	testserver.Eventually(t, 30*time.Second, func() error {
		if row := c.mustQuery(status)[0]; row[0] != "0" || row[1] != "0" || row[2] != "0" || row[3] != "0" {
			return fmt.Errorf("sys.tiering: %v, want a healthy table with nothing left to tier", row)
		}
		return nil
	})
	require.Equal(t, "3", c.scalar(`SELECT count(*) FROM h.t`))
	require.Zero(t, scrape(t, maddr)[series("flightd_tiering_consecutive_failed_rounds", "h", "t")])
	log := srv.Log()
	failed, resumed := strings.Count(log, "tiering round failed"), strings.Count(log, "tiering resumed")
	t.Logf("the server warned %d times about failed rounds", failed)
	require.Equal(t, 1, resumed)
	require.Positive(t, failed)
	require.Less(t, failed, 12, "a warning per backoff step: 100ms doubling to 2s is 6 steps, then one at the 8th failure and so on")
}
