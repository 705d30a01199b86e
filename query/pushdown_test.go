//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/tiering"
)

// countingFS counts the data files scans open.
type countingFS struct {
	fileio.Local
	mu     sync.Mutex
	opened []string
}

func (c *countingFS) Open(ctx context.Context, path string) (fileio.ReadAtSeekCloser, error) {
	if strings.HasSuffix(path, ".parquet") {
		c.mu.Lock()
		c.opened = append(c.opened, filepath.Base(path))
		c.mu.Unlock()
	}
	return c.Local.Open(ctx, path)
}

func (c *countingFS) reset() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.opened)
	c.opened = nil
	return n
}

type pushdownEnv struct {
	e    *Engine
	fs   *countingFS
	tier *tiering.Service
}

func newPushdownEnv(t *testing.T) *pushdownEnv {
	t.Helper()
	// The counting FileIO is not local, so data files would be read through
	// the object-store block cache, which opens a file once for all scans:
	// the tests count the files each scan asks for.
	old := lake.DataCacheBytes
	lake.DataCacheBytes = 0
	t.Cleanup(func() { lake.DataCacheBytes = old })
	dir := t.TempDir()
	fs := &countingFS{}
	cat, err := lake.OpenCatalogFileIO(context.Background(), filepath.Join(dir, "warehouse"), fs)
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ls := lakestream.New(cat, log, lakestream.Options{})
	e, err := New(ls, Options{Threads: 2})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return &pushdownEnv{e: e, fs: fs, tier: tiering.New(ls, tiering.Options{CompactMinFiles: 1 << 30})}
}

// opened runs sql and returns its rows and how many data files it opened.
func (p *pushdownEnv) opened(t *testing.T, sql string) ([][]string, int) {
	t.Helper()
	p.fs.reset()
	rows := run(t, p.e, sql)
	return rows, p.fs.reset()
}

func TestPruningReadsOnlyMatchingFiles(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	// Partitioned append table, one file per partition and insert.
	run(t, e, "CREATE TABLE ev (region STRING, day DATE, n BIGINT) PARTITIONED BY (region, day) WITH ('lakestream.enabled' = 'false')")
	for _, r := range []string{"eu", "us", "asia", "af"} {
		for d := 1; d <= 3; d++ {
			run(t, e, fmt.Sprintf("INSERT INTO ev VALUES ('%s', DATE '2024-01-0%d', %d), ('%s', DATE '2024-01-0%d', %d)", r, d, d, r, d, d*10))
		}
	}
	rows, n := p.opened(t, "SELECT count(*), sum(n) FROM ev")
	require.Equal(t, [][]string{{"24", "264"}}, rows)
	require.Equal(t, 12, n)
	rows, n = p.opened(t, "SELECT count(*), sum(n) FROM ev WHERE region = 'eu'")
	require.Equal(t, [][]string{{"6", "66"}}, rows)
	require.Equal(t, 3, n, "one region")
	rows, n = p.opened(t, "SELECT sum(n) FROM ev WHERE region IN ('eu', 'us') AND day = DATE '2024-01-02'")
	require.Equal(t, [][]string{{"44"}}, rows)
	require.Equal(t, 2, n, "two regions, one day")
	rows, n = p.opened(t, "SELECT sum(n) FROM ev WHERE day >= '2024-01-03' AND region = 'af'")
	require.Equal(t, [][]string{{"33"}}, rows)
	require.Equal(t, 1, n)
	rows, n = p.opened(t, "SELECT sum(x.n) FROM ev x JOIN ev y USING (region, day, n) WHERE x.region = 'us' AND y.region = 'eu'")
	require.Equal(t, [][]string{{"(null)"}}, rows)
	// DuckDB's filter optimizer sees that x.region = y.region cannot be
	// both 'us' and 'eu' and plans no scan at all.
	require.Equal(t, 0, n, "a join that cannot match reads nothing")
	q := "SELECT count(*), sum(x.n) FROM ev x JOIN ev y USING (n) WHERE x.region = 'us' AND y.day = DATE '2024-01-02'"
	rows, n = p.opened(t, q)
	require.Equal(t, withoutPushdown(t, p.e, q), rows)
	// Both references read the view ev: each scan is pruned by what both
	// sides allow, here nothing.
	require.Equal(t, 12+12, n, "a table read twice with different conjuncts")
	q = "SELECT count(*), sum(x.n) FROM ev x JOIN ev y USING (n) WHERE x.region = 'us' AND y.region = 'us'"
	rows, n = p.opened(t, q)
	require.Equal(t, withoutPushdown(t, p.e, q), rows)
	require.Equal(t, 3+3, n, "a table read twice with the same conjunct, pruned by it")
	rows, n = p.opened(t, "SELECT count(*) FROM ev WHERE region = 'nowhere'")
	require.Equal(t, [][]string{{"0"}}, rows)
	require.Equal(t, 0, n)
	// Not a prunable conjunct: everything is read, the answer is the same.
	rows, n = p.opened(t, "SELECT count(*) FROM ev WHERE region = 'eu' OR n = 30")
	require.Equal(t, [][]string{{"9"}}, rows)
	require.Equal(t, 12, n)

	// Primary-key table, 4 buckets, 5 inserts of disjoint key ranges.
	run(t, e, "CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4', 'lakestream.enabled' = 'false')")
	for i := 0; i < 5; i++ {
		var vals []string
		for k := i * 100; k < (i+1)*100; k++ {
			vals = append(vals, fmt.Sprintf("(%d, 'v%d')", k, k))
		}
		run(t, e, "INSERT INTO kv VALUES "+strings.Join(vals, ", "))
	}
	_, all := p.opened(t, "SELECT count(*) FROM kv")
	require.Equal(t, 20, all, "5 inserts x 4 buckets")
	rows, n = p.opened(t, "SELECT v FROM kv WHERE id = 242")
	require.Equal(t, [][]string{{"v242"}}, rows)
	require.Equal(t, 1, n, "the key's bucket, and of its files the one whose key range holds it")
	rows, n = p.opened(t, "SELECT count(*) FROM kv WHERE id BETWEEN 100 AND 199")
	require.Equal(t, [][]string{{"100"}}, rows)
	require.Equal(t, 4, n, "one insert's files")
	rows, n = p.opened(t, "SELECT count(*) FROM kv WHERE 150 <= id AND id < 250")
	require.Equal(t, [][]string{{"100"}}, rows)
	require.Equal(t, 8, n)

	// t$rt: the lake part is pruned the same way; the log holds newer versions.
	run(t, e, "CREATE TABLE rt (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	for i := 0; i < 3; i++ {
		var vals []string
		for k := i * 100; k < (i+1)*100; k++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", k, k))
		}
		run(t, e, "INSERT INTO rt VALUES "+strings.Join(vals, ", "))
		_, err := p.tier.TierTable(context.Background(), DefaultDatabase, "rt")
		require.NoError(t, err)
	}
	run(t, e, "INSERT INTO rt VALUES (5, -5), (150, -150), (6, -6)")
	rows, n = p.opened(t, `SELECT id, v FROM "rt$rt" WHERE id IN (5, 6, 7) ORDER BY id`)
	require.Equal(t, [][]string{{"5", "-5"}, {"6", "-6"}, {"7", "7"}}, rows)
	require.LessOrEqual(t, n, 3)
	rows, n = p.opened(t, `SELECT sum(v) FROM "rt$rt" WHERE id >= 100 AND id < 200`)
	require.Equal(t, [][]string{{fmt.Sprint(14950 - 300)}}, rows)
	require.Equal(t, 4, n)
}

func withoutPushdown(t *testing.T, e *Engine, q string) [][]string {
	e.noPushdown.Store(true)
	defer e.noPushdown.Store(false)
	return run(t, e, q)
}

// TestPushdownNeverChangesResults compares random filtered queries with the
// same queries run without projection and pruning.
func TestPushdownNeverChangesResults(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	run(t, e, "CREATE TABLE pk (k INT, s STRING, d DATE, part STRING, v BIGINT, PRIMARY KEY (part, k) NOT ENFORCED) PARTITIONED BY (part) WITH ('bucket' = '3')")
	run(t, e, "CREATE TABLE ap (k INT, s STRING, d DATE, part STRING, v BIGINT) PARTITIONED BY (part)")
	parts := []string{"a", "b", "c"}
	for round := 0; round < 6; round++ {
		var vals []string
		for i := 0; i < 40; i++ {
			k := rng.IntN(60)
			vals = append(vals, fmt.Sprintf("(%d, 's%02d', DATE '2024-02-%02d', '%s', %d)", k, rng.IntN(30), 1+rng.IntN(28), parts[rng.IntN(3)], rng.IntN(1000)))
		}
		for _, tb := range []string{"pk", "ap"} {
			run(t, e, fmt.Sprintf("INSERT INTO %s VALUES %s", tb, strings.Join(vals, ", ")))
			if round%2 == 0 {
				_, err := p.tier.TierTable(context.Background(), DefaultDatabase, tb)
				require.NoError(t, err)
			}
		}
	}
	conds := func() string {
		atoms := []func() string{
			func() string { return fmt.Sprintf("k = %d", rng.IntN(70)) },
			func() string {
				return fmt.Sprintf("k %s %d", []string{"<", "<=", ">", ">="}[rng.IntN(4)], rng.IntN(70))
			},
			func() string { return fmt.Sprintf("%d < k", rng.IntN(70)) },
			func() string { return fmt.Sprintf("k IN (%d, %d, %d)", rng.IntN(70), rng.IntN(70), rng.IntN(70)) },
			func() string { return fmt.Sprintf("k BETWEEN %d AND %d", rng.IntN(40), 20+rng.IntN(50)) },
			func() string { return fmt.Sprintf("s >= 's%02d'", rng.IntN(30)) },
			func() string { return fmt.Sprintf("s = 's%02d'", rng.IntN(30)) },
			func() string { return fmt.Sprintf("d <= DATE '2024-02-%02d'", 1+rng.IntN(28)) },
			func() string { return fmt.Sprintf("d > '2024-02-%02d'", 1+rng.IntN(28)) },
			func() string { return fmt.Sprintf("part = '%s'", []string{"a", "b", "c", "z"}[rng.IntN(4)]) },
			func() string { return fmt.Sprintf("part IN ('%s', 'c')", parts[rng.IntN(3)]) },
			func() string { return fmt.Sprintf("v < %d", rng.IntN(1000)) },
			func() string { return fmt.Sprintf("(k = %d OR v > %d)", rng.IntN(70), rng.IntN(1000)) },
		}
		var cs []string
		for i := 0; i < 1+rng.IntN(3); i++ {
			cs = append(cs, atoms[rng.IntN(len(atoms))]())
		}
		return strings.Join(cs, " AND ")
	}
	for i := 0; i < 60; i++ {
		tb := []string{"pk", `"pk$rt"`, "ap", `"ap$rt"`}[rng.IntN(4)]
		c := conds()
		sel := []string{"count(*), sum(v)", "k, s, d, part, v", "v", "part, count(*)"}[rng.IntN(4)]
		tail := ""
		if strings.Contains(sel, "count") && strings.HasPrefix(sel, "part") {
			tail = " GROUP BY part"
		}
		order := " ORDER BY ALL"
		q := fmt.Sprintf("SELECT %s FROM %s WHERE %s%s%s", sel, tb, c, tail, order)
		require.Equal(t, withoutPushdown(t, e, q), run(t, e, q), q)
		// Without ORDER BY, a plain filtered scan skips DuckDB (fastpath.go).
		q = fmt.Sprintf("SELECT %s FROM %s WHERE %s", []string{"k, s, d, part, v", "v, k", "*", "part"}[rng.IntN(4)], tb, c)
		want, got := withoutPushdown(t, e, q), run(t, e, q)
		sortRows(want)
		sortRows(got)
		require.Equal(t, want, got, q)
	}
	// Projection with joins, stars, whole rows and subqueries.
	for _, q := range []string{
		`SELECT a.k, b.v FROM pk a JOIN "pk$rt" b USING (part, k) WHERE a.part = 'a' ORDER BY ALL`,
		`SELECT a.*, b.s FROM ap a, pk b WHERE a.k = b.k AND b.part = 'b' ORDER BY ALL`,
		`SELECT count(*) FROM pk WHERE k IN (SELECT k FROM ap WHERE part = 'c')`,
		`SELECT max(t) FROM (SELECT pk AS t FROM pk)`,
		`SELECT k, (SELECT max(v) FROM ap WHERE ap.k = pk.k) FROM pk WHERE part = 'a' ORDER BY ALL`,
		`WITH x AS (SELECT * FROM "ap$rt" WHERE k < 30) SELECT part, sum(v) FROM x GROUP BY part ORDER BY ALL`,
		`SELECT * EXCLUDE (s) FROM pk WHERE k = 3 ORDER BY ALL`,
		`SELECT COLUMNS('^[kv]$') FROM ap ORDER BY ALL`,
	} {
		require.Equal(t, withoutPushdown(t, e, q), run(t, e, q), q)
	}
}

func TestScanHints(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE kv (id BIGINT, v STRING, w DOUBLE, PRIMARY KEY (id) NOT ENFORCED)")
	sc, err := e.ls.ArrowSchema(t.Context(), DefaultDatabase, "kv")
	require.NoError(t, err)
	c, err := e.connect(context.Background())
	require.NoError(t, err)
	defer c.close()
	hints := func(sql string) []expr.Predicate {
		js, err := c.serialize(context.Background(), sql)
		require.NoError(t, err)
		tree, ok := plan.ParseTree(js)
		require.True(t, ok, sql)
		hs := plan.HintsOf(tree)
		var node *plan.Object
		require.NoError(t, plan.FindRefs(tree, e.resolver(context.Background()), "default", func(_ plan.ViewKey, _ plan.Ref, n *plan.Object) error {
			if node == nil {
				node = n
			}
			return nil
		}))
		return hs.Of(node).FilterFor(sc)
	}
	require.Equal(t, []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{int64(7)}}}, hints("SELECT v FROM kv WHERE id = 7"))
	require.Empty(t, hints("SELECT count(*) FROM kv"))
	require.Equal(t, []expr.Predicate{
		{Column: "id", Op: expr.OpLt, Values: []any{int64(3)}},
		{Column: "v", Op: expr.OpGe, Values: []any{"a"}},
		{Column: "v", Op: expr.OpLe, Values: []any{"b"}},
	}, hints("SELECT W FROM kv WHERE 3 > ID AND v BETWEEN 'a' AND 'b' AND w = 1.5"), "the double constant is not used")
	f := hints("SELECT v FROM kv WHERE id = 1 OR id = 2")
	require.Empty(t, f)
	f = hints("SELECT v FROM (SELECT * FROM kv) WHERE id = 1")
	require.Empty(t, f, "the WHERE is on the subquery, not on kv")
}
