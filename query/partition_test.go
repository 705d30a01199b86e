//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/plan"
)

func sortedLines(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	sort.Strings(out)
	return out
}

// TestPartsReadTheCutTheyWerePlannedAt: a plain scan of t and of t$rt, of a
// primary-key and of an append table, planned as parts; then the tables
// change (upserts, deletes, new rows, a tiering round) before the parts
// are read. The parts together are exactly what one read returned when
// they were planned, for every part count, and each key is in one part.
func TestPartsReadTheCutTheyWerePlannedAt(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	e.partRows = 10
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	run(t, e, "CREATE TABLE ap (id BIGINT, v STRING)")
	rng := rand.New(rand.NewPCG(5, 6))
	write := func(round int) {
		var vals []string
		for i := 0; i < 50; i++ {
			vals = append(vals, fmt.Sprintf("(%d, 'r%d')", rng.IntN(120), round))
		}
		for _, tb := range []string{"pk", "ap"} {
			run(t, e, "INSERT INTO "+tb+" VALUES "+strings.Join(vals, ", "))
		}
	}
	for round := 0; round < 3; round++ {
		write(round)
		for _, tb := range []string{"pk", "ap"} {
			_, err := p.tier.TierTable(ctx, DefaultDatabase, tb)
			require.NoError(t, err)
		}
	}
	write(3) // in the log only
	for _, q := range []string{`SELECT * FROM pk`, `SELECT * FROM "pk$rt"`, `SELECT v, id FROM "pk$rt" WHERE id >= 10`, `SELECT * FROM ap`, `SELECT id FROM "ap$rt"`} {
		for n := 2; n <= 5; n++ {
			write(20 + n) // the cut holds log rows of both tables
			want := sortedLines(run(t, e, q))
			parts, rows, err := e.Partition(ctx, plan.Analyze(q), n)
			require.NoError(t, err)
			require.NotEmpty(t, parts, q)
			require.LessOrEqual(t, len(parts), n)
			if strings.Contains(q, "ap") && !strings.Contains(q, "WHERE") {
				require.EqualValues(t, len(want), rows, "%s: an append table's rows are known", q)
			} else {
				require.EqualValues(t, -1, rows, q)
			}
			// The tables move on before the parts are read.
			write(10 + n)
			for _, tb := range []string{"pk", "ap"} {
				_, err := p.tier.TierTable(ctx, DefaultDatabase, tb)
				require.NoError(t, err)
			}
			var got [][]string
			owner := map[string]int{}
			for i, part := range parts {
				res, err := e.Execute(engine.WithPart(ctx, part), plan.Analyze(q))
				require.NoError(t, err, "%s part %d", q, i)
				rows := drain(t, res.Reader)
				for _, r := range rows {
					if strings.Contains(q, "pk") {
						k := r[0]
						if strings.HasPrefix(q, "SELECT v") {
							k = r[1]
						}
						prev, seen := owner[k]
						require.False(t, seen && prev != i, "%s: key %s in parts %d and %d", q, k, prev, i)
						owner[k] = i
					}
				}
				got = append(got, rows...)
			}
			require.Equal(t, want, sortedLines(got), "%s in %d parts", q, len(parts))
		}
	}
}

// TestAPartWhoseCutIsGoneIsRejected: a ticket's part naming a snapshot
// that no longer exists (expired since the query was planned, here or on
// another node) is ErrRejected, which says to run the query again, not an
// internal error.
func TestAPartWhoseCutIsGoneIsRejected(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	run(t, e, "INSERT INTO pk VALUES (1, 'a'), (2, 'b')")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	for _, q := range []string{`SELECT * FROM pk`, `SELECT * FROM "pk$rt"`} {
		gone := plan.EncodePart(plan.Part{Cut: lakestream.Cut{Snapshot: 987654}, Split: lake.Split{Index: 0, Count: 2}})
		if strings.Contains(q, "$rt") {
			gone += ";" // no log buckets
		}
		_, err := e.Execute(engine.WithPart(ctx, gone), plan.Analyze(q))
		require.ErrorIs(t, err, engine.ErrRejected, q)
		require.Contains(t, err.Error(), "run the query again", q)
	}
}
