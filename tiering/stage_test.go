package tiering

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
)

// createBucketedAppend creates db.<name> (id BIGINT, v STRING), an append
// table with fixed buckets on id.
func createBucketedAppend(t *testing.T, e *env, name string, buckets int) {
	t.Helper()
	require.NoError(t, e.ls.CreateDatabase(t.Context(), "db", true))
	sc := paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: mustType(t, "BIGINT")}, {Name: "v", Type: mustType(t, "STRING")}},
		Options: map[string]string{"bucket": fmt.Sprint(buckets), "bucket-key": "id"}}
	require.NoError(t, e.ls.CreateTable(context.Background(), "db", name, sc, false))
}

// dataFilesOnDisk lists the Parquet files under the table's directory.
func dataFilesOnDisk(t *testing.T, e *env, name string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(e.dir, "warehouse", "db.db", name), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, filepath.Base(p))
		}
		return err
	})
	require.NoError(t, err)
	return out
}

// sorted returns a sorted copy of rows.
func sorted(rows []string) []string {
	out := append([]string(nil), rows...)
	sort.Strings(out)
	return out
}

// orphans removes and counts the files of the table no snapshot references.
func orphans(t *testing.T, e *env, name string) int {
	t.Helper()
	n, err := mustTable(t, e, name).RemoveOrphanFiles(context.Background(), 0, time.Now().Add(time.Hour))
	require.NoError(t, err)
	return n
}

// TestStagedRoundsModel writes random batches into append tables (one
// bucket, and three fixed ones), stages rounds at random (with a cap of 50
// rows, so staging flushes files many times), commits other rows into the
// lake directly at random (a snapshot staging did not plan on: the round
// must start over), tiers and restarts at random, and checks after every
// step that t$rt holds every row written exactly once and t never more, and
// after a drain that t equals t$rt. A second tiering service commits rounds
// at random: a round staged before one of those must not commit its rows
// again.
func TestStagedRoundsModel(t *testing.T) {
	rng, seed := seeded(t, 2)
	e := open(t, t.TempDir())
	ctx := context.Background()
	createTable(t, e, "one", 0)
	createBucketedAppend(t, e, "three", 3)
	model := map[string][]string{}
	next := int64(0)
	for step := 0; step < 200; step++ {
		name := []string{"one", "three"}[rng.IntN(2)]
		switch op := rng.IntN(20); {
		case op < 9:
			n := 1 + rng.IntN(120)
			ids := make([]int64, n)
			vals := make([]string, n)
			for i := range ids {
				ids[i], vals[i] = next, fmt.Sprintf("s%d", step)
				next++
				model[name] = append(model[name], fmt.Sprintf("%d=%s", ids[i], vals[i]))
			}
			rec := batch(ids, vals)
			_, err := e.ls.Write(ctx, "db", name, rec)
			rec.Release()
			require.NoError(t, err)
		case op < 15:
			e.tr.stage(ctx, "db", name)
		case op < 17:
			_, err := e.tr.TierTable(ctx, "db", name)
			require.NoError(t, err, "step %d seed %d", step, seed)
		case op < 18: // another tiering service (a second committer) gets there first
			other := New(e.ls, Options{MaxRowsPerRound: 50})
			_, err := other.TierTable(ctx, "db", name)
			require.NoError(t, err, "step %d seed %d", step, seed)
		case op < 19: // another writer commits to the lake
			tbl := mustTable(t, e, name)
			latest, err := tbl.LatestSnapshot(ctx)
			require.NoError(t, err)
			var prev int64
			if latest != nil {
				prev = latest.ID
			}
			rec := batch([]int64{next}, []string{"direct"})
			model[name] = append(model[name], fmt.Sprintf("%d=direct", next))
			next++
			w := tbl.NewWrite(ctx)
			buckets, err := tbl.Buckets(rec)
			require.NoError(t, err)
			require.NoError(t, w.Write(ctx, buckets[0], rec, nil, nil))
			rec.Release()
			_, err = w.Commit(ctx, lake.CommitOptions{CommitUser: "other", Identifier: prev + 1, ExpectedLatest: prev})
			require.NoError(t, err)
		default:
			e = e.reopen(t)
		}
		for _, n := range []string{"one", "three"} {
			want := sorted(model[n])
			require.Equal(t, want, scan(t, e, n, true), "%s step %d seed %d", n, step, seed)
			written := map[string]bool{}
			for _, r := range want {
				written[r] = true
			}
			lake := scan(t, e, n, false)
			for i, r := range lake {
				require.True(t, written[r], "%s step %d seed %d: %s is in t but was not written", n, step, seed, r)
				require.True(t, i == 0 || lake[i-1] != r, "%s step %d seed %d: %s is in t twice", n, step, seed, r)
			}
		}
	}
	for _, n := range []string{"one", "three"} {
		e.tr.stage(ctx, "db", n)
		require.NoError(t, e.tr.Drain(ctx, "db", n))
		require.Equal(t, sorted(model[n]), scan(t, e, n, false), "seed %d", seed)
		require.Equal(t, sorted(model[n]), scan(t, e, n, true), "seed %d", seed)
	}
}

// Staging encodes between rounds: files on disk that no snapshot holds,
// which the round then commits with the rest; staged files are removed when
// the round cannot use them (another snapshot) and when Run ends.
func TestStagingFlushesBetweenRounds(t *testing.T) {
	e := open(t, t.TempDir()) // MaxRowsPerRound 50: a flush every 50 rows
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	write := func(from, n int) {
		ids := make([]int64, n)
		vals := make([]string, n)
		for i := range ids {
			ids[i] = int64(from + i)
		}
		rec := batch(ids, vals)
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
	}
	write(0, 120)
	e.tr.stage(ctx, "db", "ap")
	require.Len(t, dataFilesOnDisk(t, e, "ap"), 1, "120 rows: one flush of the first 120 (a whole log entry)")
	require.Empty(t, scan(t, e, "ap", false), "staged rows are not in the lake")
	write(120, 10)
	e.tr.stage(ctx, "db", "ap")
	require.Len(t, dataFilesOnDisk(t, e, "ap"), 1, "10 rows are less than a flush: not staged")

	res, err := e.tr.TierTable(ctx, "db", "ap")
	require.NoError(t, err)
	require.EqualValues(t, 130, res.Rows)
	require.Len(t, scan(t, e, "ap", false), 130)
	require.Len(t, dataFilesOnDisk(t, e, "ap"), 2, "the staged file and the round's own")
	require.Zero(t, orphans(t, e, "ap"), "the snapshot holds both")

	// A snapshot staging did not plan on: the staged file is dropped and the
	// round reads the log again.
	write(130, 60)
	e.tr.stage(ctx, "db", "ap")
	require.Len(t, dataFilesOnDisk(t, e, "ap"), 3)
	require.NoError(t, e.ls.AlterTableOptions(ctx, "db", "ap", map[string]string{lakestream.OptionFreshness: "1 h"}))
	res, err = e.tr.TierTable(ctx, "db", "ap")
	require.NoError(t, err)
	require.EqualValues(t, 60, res.Rows)
	require.Len(t, scan(t, e, "ap", false), 190)
	require.Len(t, dataFilesOnDisk(t, e, "ap"), 3, "the file staged on the old schema was removed")

	// Run stages between rounds and removes what it staged when it ends
	// (on a fake clock: each step is one pass).
	write(190, 70)
	clk := newFakeClock()
	e.tr.opts.Clock = clk
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.tr.Run(rctx) }()
	clk.step(t)
	require.Len(t, scan(t, e, "ap", false), 260, "the first pass tiers at once")
	write(260, 80)
	before := len(dataFilesOnDisk(t, e, "ap"))
	clk.step(t)
	require.Len(t, dataFilesOnDisk(t, e, "ap"), before+1, "the next pass stages")
	require.Len(t, scan(t, e, "ap", false), 260, "staged, not tiered: the table's interval is 1h")
	cancel()
	<-done
	require.Len(t, dataFilesOnDisk(t, e, "ap"), before)
	require.Zero(t, orphans(t, e, "ap"), "Run left no staged file behind")
}

// A round reads at most MaxRowsPerRound rows per bucket past what staging
// encoded, and says there is more: the lake advances with what is encoded
// instead of waiting for the backlog.
func TestRoundBehindStagingCommitsWhatIsStaged(t *testing.T) {
	e := open(t, t.TempDir())
	tr := New(e.ls, Options{MaxRowsPerRound: 1000})
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	write := func(n int) {
		rec := batch(make([]int64, n), make([]string, n))
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
	}
	// entries large enough that reads do not join them
	write(5000)
	tr.stage(ctx, "db", "ap")
	for i := 0; i < 5; i++ {
		write(5000)
	}
	res, err := tr.TierTable(ctx, "db", "ap")
	require.NoError(t, err)
	require.EqualValues(t, 10000, res.Rows, "the staged entry and one past the cap")
	require.True(t, res.More)
	var rounds int
	for res.More {
		res, err = tr.TierTable(ctx, "db", "ap")
		require.NoError(t, err)
		rounds++
	}
	require.Equal(t, 4, rounds, "then an entry per round")
	require.Len(t, scan(t, e, "ap", false), 30000)
}

// A table whose log grows faster than the workers can encode is taking a
// burst: the scheduler does not stage it beside the burst, and stages it at
// the first pass after.
func TestBurstIsStagedAfterwards(t *testing.T) {
	e := open(t, t.TempDir())
	tr := New(e.ls, Options{MaxRowsPerRound: 100, Interval: time.Hour, BurstRate: 1000})
	ctx := context.Background()
	createTable(t, e, "ap", 0)
	rate := tr.burstRate() // rows/s
	write := func(n int) {
		rec := batch(make([]int64, n), make([]string, n))
		_, err := e.ls.Write(ctx, "db", "ap", rec)
		rec.Release()
		require.NoError(t, err)
	}
	now := time.Now()
	tr.runDue(ctx, now) // the first pass tiers what the log holds (nothing)
	// just above the rate over a second: a burst
	write(int(rate) + 1)
	now = now.Add(time.Second)
	tr.runDue(ctx, now)
	require.Empty(t, dataFilesOnDisk(t, e, "ap"), "not staged during the burst")
	// below it over the next second: staged, the burst's rows with it
	write(int(rate) / 2)
	now = now.Add(time.Second)
	tr.runDue(ctx, now)
	require.NotEmpty(t, dataFilesOnDisk(t, e, "ap"), "staged after the burst")
	require.Empty(t, scan(t, e, "ap", false), "staged, not tiered: the interval is 1h")
	t.Cleanup(tr.dropAllStaged)
}
