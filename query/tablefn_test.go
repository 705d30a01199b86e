//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

// TestClientCallingScanFunctionIsRefused: the scan table function reads
// only the references of statements the engine runs; a client naming it
// gets an error saying what it is, and no scan opens.
func TestClientCallingScanFunctionIsRefused(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (i BIGINT)")
	run(t, e, "INSERT INTO t VALUES (1), (2)")
	opened := 0
	onScanOpen = func(plan.Ref, []string) { opened++ }
	defer func() { onScanOpen = nil }()
	for _, q := range []string{
		`SELECT * FROM __flightd_scan('default', 't', 'x')`,
		`SELECT * FROM __flightd_scan('default', 't', '00000000000000000000000000000000')`,
		`SELECT * FROM __flightd_scan('default', 't', getvariable('__flightd_query'))`,
		`SELECT * FROM __flightd_scan('default', 't', NULL)`,
		`SELECT count(*) FROM t, __flightd_scan('default', 'other', getvariable('__flightd_query'))`,
		`SELECT * FROM __flightd_scan('x')`,
		`SELECT * FROM __flightd_scan(1, 2, 3)`,
	} {
		_, err := e.Execute(context.Background(), plan.Analyze(q))
		require.Error(t, err, q)
		require.True(t, errors.Is(err, engine.ErrInvalid), "%s: %v", q, err)
		if strings.Contains(q, "'default'") { // DuckDB's binder refuses the others' arguments
			require.Contains(t, err.Error(), "internal table scan", q)
		}
	}
	// A statement's token serves only the tables the statement names; a
	// direct call naming one of them reads that table, as the name does.
	require.Equal(t, [][]string{{"4"}}, run(t, e, `SELECT count(*) FROM "t$rt", __flightd_scan('default', 't$rt', getvariable('__flightd_query'))`))
	opened = 0
	require.Zero(t, opened, "a refused call opened a scan")
	require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT count(*) FROM "t$rt"`))
}

// TestScanOpensOnlyTheColumnsTheStatementReads: DuckDB's projection
// pushdown reaches the scan, through joins and subqueries too.
func TestScanOpensOnlyTheColumnsTheStatementReads(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE w (a BIGINT, b STRING, c DOUBLE, d INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO w VALUES (1, 'x', 1.5, 10), (2, 'y', 2.5, 20), (3, 'z', 3.5, 30)")
	var mu sync.Mutex
	var got []string
	onScanOpen = func(r plan.Ref, cols []string) {
		mu.Lock()
		got = append(got, r.Table+":"+strings.Join(cols, ","))
		mu.Unlock()
	}
	defer func() { onScanOpen = nil }()
	for _, c := range []struct {
		q    string
		rows [][]string
		want []string
	}{
		{`SELECT sum(c) FROM "w$rt" WHERE d > 10`, [][]string{{"6"}}, []string{"w:c,d"}},
		{`SELECT count(*) FROM "w$rt"`, [][]string{{"3"}}, []string{"w:a"}},
		{`SELECT b FROM "w$rt" ORDER BY b DESC LIMIT 1`, [][]string{{"z"}}, []string{"w:b"}},
		{`SELECT x.b, y.d FROM "w$rt" x JOIN "w$rt" y USING (a) WHERE a = 2`, [][]string{{"y", "20"}}, []string{"w:a,b", "w:a,d"}},
	} {
		got = nil
		require.Equal(t, c.rows, run(t, e, c.q), c.q)
		for i := range got { // columns in DuckDB's order
			f := strings.SplitN(got[i], ":", 2)
			cs := strings.Split(f[1], ",")
			sortStrings(cs)
			got[i] = f[0] + ":" + strings.Join(cs, ",")
		}
		sortStrings(got)
		require.Equal(t, c.want, got, c.q)
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestScanFunctionMatchesNativeTables runs random statements (filters,
// projections, aggregates, joins) over flightd tables, read by the scan
// function with DuckDB's filter and projection optimizers on, and over
// DuckDB tables holding the same rows; the results must be the same.
func TestScanFunctionMatchesNativeTables(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	run(t, e, "CREATE TABLE pk (k INT, s STRING, d DATE, part STRING, v BIGINT, PRIMARY KEY (part, k) NOT ENFORCED) PARTITIONED BY (part) WITH ('bucket' = '3')")
	run(t, e, "CREATE TABLE ap (k INT, s STRING, d DATE, part STRING, v BIGINT) PARTITIONED BY (part)")
	// Enough rows for scans of several batches and chunks.
	run(t, e, `INSERT INTO ap SELECT (i % 97)::INT, 's' || lpad((i % 31)::VARCHAR, 2, '0'), DATE '2024-02-01' + (i % 28)::INT,
		['a', 'b', 'c'][1 + i % 3], CASE WHEN i % 11 = 0 THEN NULL ELSE i END FROM range(30000) r(i)`)
	run(t, e, `INSERT INTO pk SELECT (i % 500)::INT, 's' || lpad((i % 31)::VARCHAR, 2, '0'), DATE '2024-02-01' + (i % 28)::INT,
		['a', 'b', 'c'][1 + i % 3], i FROM range(9000) r(i)`)
	for _, tb := range []string{"pk", "ap"} {
		_, err := p.tier.TierTable(ctx, DefaultDatabase, tb)
		require.NoError(t, err)
	}
	for round := 0; round < 3; round++ {
		var vals []string
		for i := 0; i < 50; i++ {
			vals = append(vals, fmt.Sprintf("(%d, 's%02d', DATE '2024-02-%02d', '%s', %d)", rng.IntN(600), rng.IntN(31), 1+rng.IntN(28), []string{"a", "b", "c"}[rng.IntN(3)], rng.IntN(100000)))
		}
		for _, tb := range []string{"pk", "ap"} {
			run(t, e, fmt.Sprintf("INSERT INTO %s VALUES %s", tb, strings.Join(vals, ", ")))
		}
		if round == 0 {
			_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
			require.NoError(t, err)
		}
	}
	// The reference: the same rows in DuckDB tables on a connection of
	// the test's own (no rewrite: these names are not flightd's).
	c, err := e.connect(ctx)
	require.NoError(t, err)
	defer c.close()
	tables := map[string]string{"pk": "ref_pk", `"pk$rt"`: "ref_pk_rt", "ap": "ref_ap", `"ap$rt"`: "ref_ap_rt"}
	for _, r := range []struct {
		name string
		ref  plan.Ref
	}{
		{"ref_pk", plan.Ref{DB: DefaultDatabase, Table: "pk"}},
		{"ref_pk_rt", plan.Ref{DB: DefaultDatabase, Table: "pk", Realtime: true}},
		{"ref_ap", plan.Ref{DB: DefaultDatabase, Table: "ap"}},
		{"ref_ap_rt", plan.Ref{DB: DefaultDatabase, Table: "ap", Realtime: true}},
	} {
		rd, err := e.scan(ctx, r.ref)
		require.NoError(t, err)
		rel, err := c.ar.RegisterView(rd, "src_"+r.name)
		rd.Release()
		require.NoError(t, err)
		require.NoError(t, c.exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM src_%s", r.name, r.name)))
		require.NoError(t, c.exec(ctx, "DROP VIEW src_"+r.name))
		rel()
	}
	native := func(q string) [][]string {
		t.Helper()
		rd, err := e.run(ctx, c, q, func() {})
		require.NoError(t, err, q)
		return drain(t, rd)
	}
	cond := func(a string) string {
		atoms := []func() string{
			func() string { return fmt.Sprintf("%sk = %d", a, rng.IntN(600)) },
			func() string {
				return fmt.Sprintf("%sk %s %d", a, []string{"<", "<=", ">", ">=", "<>"}[rng.IntN(5)], rng.IntN(600))
			},
			func() string {
				return fmt.Sprintf("%sk IN (%d, %d, %d)", a, rng.IntN(100), rng.IntN(100), rng.IntN(600))
			},
			func() string { return fmt.Sprintf("%sk BETWEEN %d AND %d", a, rng.IntN(300), 200+rng.IntN(400)) },
			func() string { return fmt.Sprintf("%ss >= 's%02d'", a, rng.IntN(31)) },
			func() string { return fmt.Sprintf("%ss LIKE 's%d%%'", a, rng.IntN(4)) },
			func() string { return fmt.Sprintf("%sd <= DATE '2024-02-%02d'", a, 1+rng.IntN(28)) },
			func() string { return fmt.Sprintf("%spart = '%s'", a, []string{"a", "b", "c", "z"}[rng.IntN(4)]) },
			func() string { return fmt.Sprintf("%sv < %d", a, rng.IntN(100000)) },
			func() string { return fmt.Sprintf("%sv IS NULL", a) },
			func() string { return fmt.Sprintf("(%sk = %d OR %sv > %d)", a, rng.IntN(600), a, rng.IntN(100000)) },
			func() string { return fmt.Sprintf("%sv %% 7 = %d", a, rng.IntN(7)) },
		}
		var cs []string
		for i := 0; i < 1+rng.IntN(3); i++ {
			cs = append(cs, atoms[rng.IntN(len(atoms))]())
		}
		return strings.Join(cs, " AND ")
	}
	names := []string{"pk", `"pk$rt"`, "ap", `"ap$rt"`}
	for i := 0; i < 80; i++ {
		t1, t2 := names[rng.IntN(4)], names[rng.IntN(4)]
		var q string
		switch rng.IntN(5) {
		case 0:
			q = fmt.Sprintf("SELECT %s FROM {1} WHERE %s ORDER BY ALL", []string{"k, s, d, part, v", "v", "s, k", "*"}[rng.IntN(4)], cond(""))
		case 1:
			q = fmt.Sprintf("SELECT count(*), sum(v), min(s), max(d), count(DISTINCT k), count(v) FROM {1} WHERE %s", cond(""))
		case 2:
			q = fmt.Sprintf("SELECT part, d, count(*), sum(v), avg(k) FROM {1} WHERE %s GROUP BY ALL ORDER BY ALL", cond(""))
		case 3:
			q = fmt.Sprintf("SELECT x.k, x.v, y.s FROM {1} x JOIN {2} y ON x.k = y.k AND x.part = y.part WHERE %s AND %s ORDER BY ALL LIMIT 500", cond("x."), cond("y."))
		default:
			q = fmt.Sprintf("SELECT count(*), sum(x.v - y.v) FROM {1} x, {2} y WHERE x.k = y.k AND %s", cond("x."))
		}
		mine := strings.NewReplacer("{1}", t1, "{2}", t2).Replace(q)
		ref := strings.NewReplacer("{1}", tables[t1], "{2}", tables[t2]).Replace(q)
		require.Equal(t, native(ref), run(t, e, mine), mine)
	}
	require.Zero(t, liveScans.Load(), "scans left open")
	require.Zero(t, liveBatches.Load(), "batches left held")
}

// TestScanCancelledLeavesNothingOpen: a statement over tables cancelled
// while DuckDB reads them, or released unread, ends with every scan closed
// and no batch held.
func TestScanCancelledLeavesNothingOpen(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, `CREATE TABLE big (i BIGINT, s STRING)`)
	run(t, e, `INSERT INTO big SELECT i, i::VARCHAR FROM range(200000) r(i)`)
	cause := errors.New("client went away")
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancelCause(context.Background())
		res, err := e.Execute(ctx, plan.Analyze(`SELECT a.i + b.i FROM "big$rt" a, "big$rt" b`))
		require.NoError(t, err)
		require.True(t, res.Reader.Next(), "%v", res.Reader.Err())
		if i%2 == 0 {
			cancel(cause)
			for res.Reader.Next() {
			}
			require.ErrorIs(t, res.Reader.Err(), cause)
		}
		res.Reader.Release()
		cancel(nil)
		require.Zero(t, liveScans.Load(), "scans left open")
		require.Zero(t, liveBatches.Load(), "batches left held")
	}
	require.Equal(t, [][]string{{"200000"}}, run(t, e, `SELECT count(*) FROM "big$rt"`))
	e.scans.mu.Lock()
	require.Empty(t, e.scans.src, "sources left registered")
	e.scans.mu.Unlock()
}

// TestScanFunctionReadsEveryTypeInSlices: nested, decimal, time and binary
// columns of batches longer than a DuckDB chunk reach DuckDB as the same
// values DuckDB reads from a copy of the rows in its own table (each chunk
// is a slice of an exported batch, at an offset).
func TestScanFunctionReadsEveryTypeInSlices(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, `CREATE TABLE ty (id BIGINT, b BOOLEAN, dec DECIMAL(12, 3), ts TIMESTAMP(6), dt DATE, bin BYTES,
		l ARRAY<INT>, m MAP<STRING, BIGINT>, r ROW<x INT, y STRING>, s STRING)`)
	run(t, e, `INSERT INTO ty SELECT i, i % 3 = 0, (i * 7 % 100000) / 1000, TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND,
		DATE '2024-01-01' + (i % 400)::INT, ('b' || i)::BLOB,
		CASE WHEN i % 5 = 0 THEN NULL ELSE [i::INT, NULL, (i * 2)::INT][1:1 + i % 3] END,
		CASE WHEN i % 7 = 0 THEN NULL ELSE MAP {'k' || (i % 4): i} END,
		CASE WHEN i % 11 = 0 THEN NULL ELSE {'x': i::INT, 'y': CASE WHEN i % 2 = 0 THEN NULL ELSE 'y' || i END} END,
		CASE WHEN i % 13 = 0 THEN NULL ELSE repeat('s', (i % 40)::INT) END
		FROM range(7000) r(i)`)
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "ty") // into Parquet: batches of many chunks
	require.NoError(t, err)
	run(t, e, `INSERT INTO ty VALUES (-1, NULL, NULL, NULL, NULL, NULL, [], MAP {}, {'x': NULL, 'y': NULL}, '')`)
	c, err := e.connect(ctx)
	require.NoError(t, err)
	defer c.close()
	rd, err := e.scan(ctx, plan.Ref{DB: DefaultDatabase, Table: "ty", Realtime: true})
	require.NoError(t, err)
	rel, err := c.ar.RegisterView(rd, "src_ty")
	rd.Release()
	require.NoError(t, err)
	require.NoError(t, c.exec(ctx, "CREATE TEMP TABLE ref_ty AS SELECT * FROM src_ty"))
	require.NoError(t, c.exec(ctx, "DROP VIEW src_ty"))
	rel()
	native := func(q string) [][]string {
		t.Helper()
		rd, err := e.run(ctx, c, q, func() {})
		require.NoError(t, err, q)
		return drain(t, rd)
	}
	for _, q := range []string{
		`SELECT * FROM {t} ORDER BY id`,
		`SELECT r, id, l FROM {t} WHERE id % 3 = 1 ORDER BY id`,
		`SELECT m, s, bin FROM {t} WHERE id > 2040 AND id < 4100 ORDER BY id`,
		`SELECT count(*), sum(dec), max(ts), min(dt), count(l), sum(len(l)), count(r.y) FROM {t}`,
	} {
		require.Equal(t, native(strings.ReplaceAll(q, "{t}", "ref_ty")), run(t, e, strings.ReplaceAll(q, "{t}", `"ty$rt"`)), q)
	}
}

// TestConcurrentStatementsReadTheirOwnScans: statements running at once,
// each on several DuckDB threads, share the scan function and read only
// their own references.
func TestConcurrentStatementsReadTheirOwnScans(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, `CREATE TABLE a (i BIGINT, s STRING)`)
	run(t, e, `CREATE TABLE b (i BIGINT, s STRING)`)
	run(t, e, `INSERT INTO a SELECT i, 'a' || i FROM range(30000) r(i)`)
	run(t, e, `INSERT INTO b SELECT i * 2, 'b' || i FROM range(20000) r(i)`)
	qs := []struct {
		q    string
		want [][]string
	}{
		{`SELECT count(*), sum(i), max(s) FROM "a$rt"`, [][]string{{"30000", "449985000", "a9999"}}},
		{`SELECT count(*), sum(i), max(s) FROM "b$rt"`, [][]string{{"20000", "399980000", "b9999"}}},
		{`SELECT count(*), sum(x.i) FROM "a$rt" x JOIN "b$rt" y USING (i)`, [][]string{{"15000", "224985000"}}},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 8; k++ {
				c := qs[(g+k)%len(qs)]
				res, err := e.Execute(context.Background(), plan.Analyze(c.q))
				if err != nil {
					errs <- err
					return
				}
				var got [][]string
				for res.Reader.Next() {
					rec := res.Reader.RecordBatch()
					for r := 0; r < int(rec.NumRows()); r++ {
						row := make([]string, rec.NumCols())
						for j := range row {
							row[j] = strings.Clone(rec.Column(j).ValueStr(r))
						}
						got = append(got, row)
					}
				}
				err = res.Reader.Err()
				res.Reader.Release()
				if err != nil {
					errs <- err
					return
				}
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					errs <- fmt.Errorf("%s: got %v, want %v", c.q, got, c.want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Zero(t, liveScans.Load(), "scans left open")
	require.Zero(t, liveBatches.Load(), "batches left held")
}
