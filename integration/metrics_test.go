package integration

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// scrape fetches http://addr/metrics and parses the text format into
// series -> value, a series written as Prometheus writes it:
// name{label="value",...} with the labels in its (sorted) order.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "metrics line %q", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, "metrics line %q", line)
		out[line[:i]] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// series names a per-table series.
func series(name, db, table string) string {
	return fmt.Sprintf("%s{database=%q,table=%q}", name, db, table)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestMetricsAndFreshness runs the binary with --metrics-addr and a 30s
// default tiering interval. A table with lakestream.freshness = '1s' is
// tiered about every second while a table on the default waits (its lag
// shows in the metrics and grows) until ALTER TABLE gives it '1 s' too.
// Bad freshness values are refused with errors that name the option.
func TestMetricsAndFreshness(t *testing.T) {
	t.Parallel()
	maddr := freeAddr(t)
	srv := testserver.Start(t, t.TempDir(), "--tiering-interval", "30s", "--metrics-addr", maddr, "--log-disk-budget", "1GiB")
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE m")
	for v, why := range map[string]string{"soon": "want a duration", "0s": "must be positive", "-1s": "must be positive", "30": "give a unit"} {
		_, err := c.exec("CREATE TABLE m.bad (id BIGINT) WITH ('lakestream.freshness' = '" + v + "')")
		require.ErrorContains(t, err, "lakestream.freshness", v)
		require.ErrorContains(t, err, why, v)
	}
	_, err := c.query("SELECT * FROM m.bad")
	require.Error(t, err, "a refused CREATE TABLE creates nothing")
	c.mustExec("CREATE TABLE m.fast (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'lakestream.freshness' = '1s')")
	c.mustExec("CREATE TABLE m.slow (id BIGINT, v BIGINT)")
	_, err = c.exec("ALTER TABLE m.slow SET ('lakestream.freshness' = 'often')")
	require.ErrorContains(t, err, "lakestream.freshness")

	ingest := func(table string, from, n int) {
		t.Helper()
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(from + i)
		}
		rec := kvBatch(ids, ids)
		defer rec.Release()
		_, err := c.ingest("m", table, adbc.OptionValueIngestModeAppend, rec)
		require.NoError(t, err)
	}
	ingest("slow", 0, 100)
	ingest("fast", 0, 100)
	time.Sleep(100 * time.Millisecond)

	m := scrape(t, maddr)
	require.Equal(t, 100.0, m[series("flightd_log_rows_appended_total", "m", "slow")])
	require.Equal(t, 100.0, m[series("flightd_log_rows_appended_total", "m", "fast")])
	require.Equal(t, 100.0, m[series("flightd_tiering_lag_rows", "m", "slow")], "the slow table waits 30s")
	require.Greater(t, m[series("flightd_tiering_lag_seconds", "m", "slow")], 0.05)
	require.Equal(t, 30.0, m[series("flightd_tiering_freshness_seconds", "m", "slow")])
	require.Equal(t, 1.0, m[series("flightd_tiering_freshness_seconds", "m", "fast")])
	require.Zero(t, m[series("flightd_tiering_rounds_committed_total", "m", "slow")])
	require.Positive(t, m["flightd_log_disk_used_bytes"])
	require.Equal(t, float64(1<<30), m["flightd_log_disk_budget_bytes"])
	require.Contains(t, m, "go_goroutines")
	require.Contains(t, m, "process_resident_memory_bytes")

	// The fast table keeps being tiered while writes keep coming: three
	// rounds commit (about three seconds on an idle machine; the test waits
	// for the rounds, not for a rate).
	start := time.Now()
	committed0 := m[series("flightd_tiering_rounds_committed_total", "m", "fast")]
	for i := 1; ; i++ {
		ingest("fast", i*100, 100)
		m = scrape(t, maddr)
		if m[series("flightd_tiering_rounds_committed_total", "m", "fast")]-committed0 >= 3 && time.Since(start) > 5*time.Second {
			break
		}
		require.Less(t, time.Since(start), 2*time.Minute, "the fast table stopped tiering")
		time.Sleep(200 * time.Millisecond)
	}
	var fastAppended float64
	testserver.Eventually(t, 10*time.Second, func() error {
		m = scrape(t, maddr)
		fastAppended = m[series("flightd_log_rows_appended_total", "m", "fast")]
		if lag := m[series("flightd_tiering_lag_rows", "m", "fast")]; lag != 0 {
			return fmt.Errorf("fast: lag %v rows", lag)
		}
		// a round is counted when it ends, after the compaction that
		// follows its commit (lag_rows is 0 from the commit on)
		if tiered := m[series("flightd_tiering_rows_total", "m", "fast")]; tiered != fastAppended {
			return fmt.Errorf("fast: %v rows appended, %v counted as tiered", fastAppended, tiered)
		}
		return nil
	})
	committed := m[series("flightd_tiering_rounds_committed_total", "m", "fast")] - committed0
	t.Logf("fast table: %v rounds committed in about %s", committed, time.Since(start).Round(time.Second))
	require.GreaterOrEqual(t, committed, 3.0)
	require.Equal(t, fastAppended, m[series("flightd_tiering_rows_total", "m", "fast")], "every appended row was tiered")
	require.Positive(t, m[series("flightd_tiering_round_duration_seconds_count", "m", "fast")])
	require.Equal(t, 0.0, m[series("flightd_tiering_lag_seconds", "m", "fast")])
	require.Zero(t, m[series("flightd_tiering_rounds_failed_total", "m", "fast")])
	require.Contains(t, m, series("flightd_tiering_consecutive_failed_rounds", "m", "fast"))
	require.Zero(t, m[series("flightd_tiering_consecutive_failed_rounds", "m", "fast")], "a healthy table")
	require.Equal(t, "0", c.scalar("SELECT count(*) FROM m.slow"), "the slow table's lake is still empty")
	require.Equal(t, 100.0, m[series("flightd_tiering_lag_rows", "m", "slow")])
	require.Greater(t, m[series("flightd_tiering_lag_seconds", "m", "slow")], 5.0, "the slow table's lag grows")
	require.Zero(t, m[series("flightd_tiering_rounds_committed_total", "m", "slow")])

	// ALTER TABLE gives the slow table a 1s freshness: it catches up.
	c.mustExec("ALTER TABLE m.slow SET ('lakestream.freshness' = '1 s')")
	testserver.Eventually(t, 10*time.Second, func() error {
		m = scrape(t, maddr)
		if n := m[series("flightd_tiering_rounds_committed_total", "m", "slow")]; n < 1 {
			return fmt.Errorf("slow: %v rounds committed", n)
		}
		return nil
	})
	require.Equal(t, 0.0, m[series("flightd_tiering_lag_rows", "m", "slow")])
	require.Equal(t, 100.0, m[series("flightd_tiering_rows_total", "m", "slow")])
	require.Equal(t, 1.0, m[series("flightd_tiering_freshness_seconds", "m", "slow")])
	require.Equal(t, "100", c.scalar("SELECT count(*) FROM m.slow"))
}
