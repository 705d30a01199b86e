package tiering

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lakestream"
)

// tableStatus is a table's row of sys.tiering (its first bucket's).
type tableStatus struct {
	failedRounds int64
	lastError    *string
	retryAt      *time.Time
	lagRows      int64
}

func statusOf(t *testing.T, e *env, table string) tableStatus {
	t.Helper()
	r, err := e.ls.Status(context.Background())
	require.NoError(t, err)
	defer r.Release()
	col := func(rec arrow.RecordBatch, name string) arrow.Array {
		return rec.Column(rec.Schema().FieldIndices(name)[0])
	}
	var st tableStatus
	found := false
	for r.Next() {
		rec := r.RecordBatch()
		names := col(rec, "table").(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			if names.Value(i) != table {
				continue
			}
			st.lagRows += col(rec, "lag_rows").(*array.Int64).Value(i)
			if found {
				continue
			}
			found = true
			st.failedRounds = col(rec, "failed_rounds").(*array.Int64).Value(i)
			if le := col(rec, "last_error").(*array.String); le.IsValid(i) {
				v := le.Value(i)
				st.lastError = &v
			}
			if ra := col(rec, "retry_at").(*array.Timestamp); ra.IsValid(i) {
				v := time.UnixMilli(int64(ra.Value(i)))
				st.retryAt = &v
			}
		}
	}
	require.NoError(t, r.Err())
	require.True(t, found, "sys.tiering has no row of %s", table)
	return st
}

// attemptLog records when (on the fake clock) each table's rounds ran.
type attemptLog struct {
	mu    sync.Mutex
	clock Clock
	at    map[string][]time.Time
	ok    map[string][]bool
}

func (l *attemptLog) observe(r Round) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at[r.Table] = append(l.at[r.Table], l.clock.Now())
	l.ok[r.Table] = append(l.ok[r.Table], r.Err == nil)
}

// gaps returns the times between the table's rounds.
func (l *attemptLog) gaps(table string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(l.at[table]); i++ {
		out = append(out, l.at[table][i].Sub(l.at[table][i-1]))
	}
	return out
}

func (l *attemptLog) rounds(table string) (n, ok int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, good := range l.ok[table] {
		n++
		if good {
			ok++
		}
	}
	return n, ok
}

// TestFailedRoundIsRetriedAtEveryPass: a table whose round failed was
// tried again at every scheduler pass (about every 25 ms, a warning each
// time) for as long as the cause lasted. Now it backs off from 100 ms,
// doubling up to its freshness interval, logs once per backoff step,
// shows the failures in sys.tiering, does not move the other table's
// rounds, and heals by itself once the cause is gone.
func TestFailedRoundIsRetriedAtEveryPass(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "bad", 1)
	createTable(t, e, "good", 1)
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "bad", map[string]string{lakestream.OptionFreshness: "10 s"}))
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "good", map[string]string{lakestream.OptionFreshness: "1 s"}))
	// The round of "bad" cannot write its file: a plain file sits where
	// its bucket's directory goes.
	block := filepath.Join(e.dir, "warehouse", "db.db", "bad", "bucket-0")
	require.NoError(t, os.WriteFile(block, []byte("in the way"), 0o644))

	var next int64
	write := func(table string) {
		rec := batch([]int64{next}, []string{"x"})
		next++
		_, err := e.ls.Write(ctx, "db", table, rec)
		rec.Release()
		require.NoError(t, err)
	}
	write("bad")
	clk := newFakeClock()
	rounds := &attemptLog{clock: clk, at: map[string][]time.Time{}, ok: map[string][]bool{}}
	logs := &logRecords{}
	tr := New(e.ls, Options{Interval: time.Hour, Clock: clk, Observe: rounds.observe, Logger: slog.New(logs)})
	start := clk.Now()
	startRun(t, tr)
	clk.runUntil(t, start.Add(60*time.Second), func() { write("good") })

	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms,
		10 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}, rounds.gaps("bad"),
		"backoff from 100ms, doubling, capped at the 10s freshness")
	n, ok := rounds.rounds("bad")
	require.Equal(t, 12, n)
	require.Zero(t, ok)
	require.Equal(t, 8, logs.count("tiering round failed"), "a warning per backoff step (7 doublings and the cap), not per attempt")

	n, ok = rounds.rounds("good")
	require.Equal(t, 61, n, "the other table tiers every second, 0s to 60s, as if nothing failed")
	require.Equal(t, 61, ok)
	for _, g := range rounds.gaps("good") {
		require.Equal(t, time.Second, g)
	}

	st := statusOf(t, e, "bad")
	require.EqualValues(t, 12, st.failedRounds, "consecutive failed rounds")
	require.NotNil(t, st.lastError)
	require.Contains(t, *st.lastError, "bucket-0")
	require.NotNil(t, st.retryAt)
	require.Equal(t, start.Add(62700*ms).UnixMilli(), st.retryAt.UnixMilli(), "the 12th failure was at 52.7s")
	require.EqualValues(t, 1, st.lagRows)
	good := statusOf(t, e, "good")
	require.Zero(t, good.failedRounds)
	require.Nil(t, good.lastError)
	require.Nil(t, good.retryAt)

	// The cause goes away: the next attempt succeeds, and the table is
	// back on its interval.
	require.NoError(t, os.Remove(block))
	clk.runUntil(t, start.Add(62700*ms), nil)
	n, ok = rounds.rounds("bad")
	require.Equal(t, 13, n)
	require.Equal(t, 1, ok)
	require.Equal(t, 1, logs.count("tiering resumed"))
	st = statusOf(t, e, "bad")
	require.Zero(t, st.failedRounds)
	require.Nil(t, st.lastError)
	require.Nil(t, st.retryAt)
	require.Zero(t, st.lagRows, "the lake holds the row")
	write("bad")
	clk.runUntil(t, start.Add(72700*ms), nil)
	require.Equal(t, 10*time.Second, rounds.gaps("bad")[11])
	n, ok = rounds.rounds("bad")
	require.Equal(t, 14, n, "due one interval after the success")
	require.Equal(t, 2, ok)
}

// TestFailingAppendTableIsStagedAtEveryPass: between the attempts of a
// failing append table, every pass (about a second) staged its log again
// and failed the same way, with a warning each time. A failing table is
// not staged: its next round starts over from the log anyway.
func TestFailingAppendTableIsStagedAtEveryPass(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "ap", map[string]string{lakestream.OptionFreshness: "10 s"}))
	block := filepath.Join(e.dir, "warehouse", "db.db", "ap", "bucket-0")
	require.NoError(t, os.WriteFile(block, nil, 0o644))
	rec := batch(make([]int64, 120), make([]string, 120)) // more than a flush (50 rows)
	_, err := e.ls.Write(ctx, "db", "ap", rec)
	rec.Release()
	require.NoError(t, err)

	clk := newFakeClock()
	logs := &logRecords{}
	tr := New(e.ls, Options{Interval: time.Hour, MaxRowsPerRound: 50, Clock: clk, Logger: slog.New(logs)})
	t.Cleanup(tr.dropAllStaged)
	start := clk.Now()
	startRun(t, tr)
	clk.runUntil(t, start.Add(30*time.Second), nil)
	require.Zero(t, logs.count("tiering: staging"), "no staging while the table fails")
	require.Equal(t, 8, logs.count("tiering round failed"), "rounds at 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 22.7 s: a warning per backoff step")

	require.NoError(t, os.Remove(block))
	clk.runUntil(t, start.Add(32700*time.Millisecond), nil)
	require.Equal(t, 1, logs.count("tiering resumed"))
	require.Len(t, scan(t, e, "ap", false), 120)
}
