package tiering

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
)

func TestParseFreshness(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "1m30s": 90 * time.Second, "500ms": 500 * time.Millisecond, " 7s ": 7 * time.Second,
		"30 s": 30 * time.Second, "1 min": time.Minute, "5m": 5 * time.Minute, "2 h": 2 * time.Hour, "1 day": 24 * time.Hour,
		"10 SECONDS": 10 * time.Second, "250 ms": 250 * time.Millisecond, "3hours": 3 * time.Hour,
	} {
		got, err := lakestream.ParseFreshness(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, why := range map[string]string{
		"":                  "want a duration",
		"soon":              "want a duration",
		"0s":                "must be positive",
		"0 s":               "must be positive",
		"-1s":               "must be positive",
		"30":                "give a unit",
		"5 fortnights":      "unknown unit",
		"9999999999999 day": "too long",
	} {
		_, err := lakestream.ParseFreshness(in)
		require.ErrorIs(t, err, lakestream.ErrInvalidOption, "%q", in)
		require.ErrorContains(t, err, lakestream.OptionFreshness, "%q", in)
		require.ErrorContains(t, err, why, "%q", in)
	}
}

// TestFreshnessIsValidated: CREATE TABLE and ALTER TABLE refuse a
// freshness that does not parse, and the table keeps its old value.
func TestFreshnessIsValidated(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	require.NoError(t, e.ls.CreateDatabase(ctx, "db", true))
	sc := func(fresh string) paimontype.Schema {
		return paimontype.Schema{
			Columns: []paimontype.Column{{Name: "id", Type: mustType(t, "BIGINT")}, {Name: "v", Type: mustType(t, "STRING")}},
			Options: map[string]string{lakestream.OptionFreshness: fresh},
		}
	}
	err := e.ls.CreateTable(ctx, "db", "bad", sc("every now and then"), false)
	require.ErrorIs(t, err, lakestream.ErrInvalidOption)
	require.ErrorContains(t, err, "lakestream.freshness")
	_, err = e.ls.Table(ctx, "db", "bad")
	require.ErrorIs(t, err, lake.ErrTableNotFound, "a refused CREATE creates nothing")

	require.NoError(t, e.ls.CreateTable(ctx, "db", "t", sc("5 s"), false))
	tr := New(e.ls, Options{Interval: time.Minute})
	require.Equal(t, 5*time.Second, tr.Freshness(mustTable(t, e, "t")))
	for _, v := range []string{"0s", "-5s", "30", "fast"} {
		err := e.ls.AlterTableOptions(ctx, "db", "t", map[string]string{lakestream.OptionFreshness: v})
		require.ErrorIs(t, err, lakestream.ErrInvalidOption, v)
		require.ErrorContains(t, err, "lakestream.freshness", v)
	}
	require.Equal(t, 5*time.Second, tr.Freshness(mustTable(t, e, "t")), "refused ALTERs change nothing")
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "t", map[string]string{lakestream.OptionFreshness: "10s"}))
	require.Equal(t, 10*time.Second, tr.Freshness(mustTable(t, e, "t")))

	createTable(t, e, "plain", 0)
	require.Equal(t, time.Minute, tr.Freshness(mustTable(t, e, "plain")), "no option: the server's interval")
}

// roundLog records the rounds a Service runs, per table.
type roundLog struct {
	mu     sync.Mutex
	rounds map[string][]Round
}

func (l *roundLog) observe(r Round) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rounds[r.Table] = append(l.rounds[r.Table], r)
}

// TestRunTiersEachTableAtItsFreshness: Run tiers a table whose freshness is
// 200ms five times a second while a table on the server's 30s interval
// gets only the round of the first pass; ALTER TABLE speeds the slow one up
// at the next pass; a table created while Run runs waits a whole interval
// for its first round. The scheduler runs on a fake clock: the test counts
// rounds against the clock's time, not the machine's.
func TestRunTiersEachTableAtItsFreshness(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "fast", 2)
	createTable(t, e, "slow", 2)
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "fast", map[string]string{lakestream.OptionFreshness: "200ms"}))
	write := func(table string, id int64) {
		t.Helper()
		rec := batch([]int64{id}, []string{"x"})
		_, err := e.ls.Write(ctx, "db", table, rec)
		rec.Release()
		require.NoError(t, err)
	}
	write("fast", 0)
	write("slow", 0)

	clk := newFakeClock()
	rounds := &attemptLog{clock: clk, at: map[string][]time.Time{}, ok: map[string][]bool{}}
	tr := New(e.ls, Options{Interval: 30 * time.Second, Clock: clk, Observe: rounds.observe})
	start := clk.Now()
	startRun(t, tr)
	require.Equal(t, start, clk.step(t), "the first pass runs at once")
	n, _ := rounds.rounds("slow")
	require.Equal(t, 1, n, "the first pass tiers every table")
	slowLake := scan(t, e, "slow", false)
	require.Equal(t, []string{"0=x"}, slowLake)

	// Writes keep coming, before every pass; only the fast table's lake
	// follows them.
	i := int64(1)
	clk.runUntil(t, start.Add(1500*time.Millisecond), func() {
		write("fast", i)
		write("slow", i)
		i++
	})
	n, ok := rounds.rounds("fast")
	require.Equal(t, 8, n, "a 200ms table tiers at 0, 0.2, ..., 1.4 s")
	require.Equal(t, 8, ok)
	for _, g := range rounds.gaps("fast") {
		require.Equal(t, 200*time.Millisecond, g)
	}
	n, _ = rounds.rounds("slow")
	require.Equal(t, 1, n, "a 30s table gets the first pass's round only")
	require.Equal(t, slowLake, scan(t, e, "slow", false), "the slow table's lake holds the first round only")

	// A table created now waits its whole (30s) interval; ALTER applies at
	// the next pass.
	createTable(t, e, "late", 0)
	write("late", 1)
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "slow", map[string]string{lakestream.OptionFreshness: "100 ms"}))
	seen := clk.step(t)
	require.Equal(t, start.Add(1600*time.Millisecond), seen)
	n, ok = rounds.rounds("slow")
	require.Equal(t, 2, n, "the slow table is due at once at 100 ms")
	require.Equal(t, 2, ok)
	require.Len(t, scan(t, e, "slow", false), len(scan(t, e, "slow", true)), "after its round the lake caught up")

	clk.runUntil(t, seen.Add(30*time.Second-time.Millisecond), nil)
	n, _ = rounds.rounds("late")
	require.Zero(t, n, "a new table's first round waits a whole interval")
	clk.runUntil(t, seen.Add(30*time.Second), nil)
	n, ok = rounds.rounds("late")
	require.Equal(t, 1, n, "and comes when it has passed")
	require.Equal(t, 1, ok)
	require.Equal(t, []string{"1=x"}, scan(t, e, "late", false))
}

// TestObserveSeesFailuresAndCompactions: Observe hears about committed,
// empty and failed rounds and about compactions.
func TestObserveSeesFailuresAndCompactions(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "pk", 1)
	log := &roundLog{rounds: map[string][]Round{}}
	tr := New(e.ls, Options{Observe: log.observe, CompactMinFiles: 2})
	_, err := tr.TierTable(ctx, "db", "missing")
	require.Error(t, err)
	require.Len(t, log.rounds["missing"], 1)
	require.ErrorIs(t, log.rounds["missing"][0].Err, lake.ErrTableNotFound)

	_, err = tr.TierTable(ctx, "db", "pk") // nothing to tier
	require.NoError(t, err)
	for i := int64(0); i < 2; i++ {
		rec := batch([]int64{i}, []string{"v"})
		_, err := e.ls.Write(ctx, "db", "pk", rec)
		rec.Release()
		require.NoError(t, err)
		_, err = tr.TierTable(ctx, "db", "pk")
		require.NoError(t, err)
	}
	rs := log.rounds["pk"]
	require.Len(t, rs, 3)
	require.Zero(t, rs[0].Result.Snapshot, "the empty round commits nothing")
	require.EqualValues(t, 1, rs[1].Result.Rows)
	require.Positive(t, rs[2].Result.Compacted, "the second file in the bucket triggers a compaction")
	for _, r := range rs {
		require.NoError(t, r.Err)
		require.NoError(t, r.CompactErr)
		require.Positive(t, r.Duration)
		require.Equal(t, "db", r.Database)
	}
}
