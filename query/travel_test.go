//go:build duckdb_arrow

package query

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

// TestTimeTravelReadsPastSnapshots: t AT (VERSION => n), AT (VERSION =>
// 'tag') and AT (TIMESTAMP => t) read that snapshot of the lake, in joins
// of two versions, unqualified in a session, prepared and explained; t$rt,
// missing snapshots and snapshots of an older schema are refused by name.
func TestTimeTravelReadsPastSnapshots(t *testing.T) {
	dir := t.TempDir()
	e := newTestEngineIn(t, dir)
	run(t, e, "CREATE DATABASE s")
	// Without the log every INSERT is a snapshot of its own.
	run(t, e, "CREATE TABLE s.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.enabled' = 'false')")
	run(t, e, "INSERT INTO s.t VALUES (1, 'a')")
	run(t, e, "INSERT INTO s.t VALUES (2, 'b')")
	run(t, e, "INSERT INTO s.t VALUES (1, 'c')")

	require.Equal(t, [][]string{{"1", "a"}}, run(t, e, "SELECT * FROM s.t AT (VERSION => 1) ORDER BY id"))
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}}, run(t, e, "SELECT id, v FROM s.t AT (VERSION => 2) ORDER BY id"))
	require.Equal(t, [][]string{{"1", "c"}, {"2", "b"}}, run(t, e, "SELECT id, v FROM s.t ORDER BY id"))
	require.Equal(t, [][]string{{"1", "a", "c"}}, run(t, e, "SELECT id, x.v, y.v FROM s.t x AT (VERSION => 1) JOIN s.t AS y AT (VERSION => 3) USING (id)"))
	require.Equal(t, [][]string{{"1"}}, run(t, e, "SELECT count(*) FROM s.t AT (VERSION => 1) WHERE id = 1"))

	// By time: the newest snapshot committed at or before it.
	ts := run(t, e, `SELECT strftime(commit_time, '%Y-%m-%d %H:%M:%S.%g') FROM s."t$snapshots" WHERE snapshot_id = 2`)[0][0]
	require.Equal(t, [][]string{{"2"}}, run(t, e, "SELECT count(*) FROM s.t AT (TIMESTAMP => '"+ts+"')"))
	require.Equal(t, [][]string{{"2"}}, run(t, e, "SELECT count(*) FROM s.t AT (TIMESTAMP => TIMESTAMP '"+ts+"')"))

	// A Paimon tag: the snapshot's JSON under tag/tag-<name>.
	tbl := filepath.Join(dir, "warehouse", "s.db", "t")
	snap1, err := os.ReadFile(filepath.Join(tbl, "snapshot", "snapshot-1"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(tbl, "tag"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tbl, "tag", "tag-first"), snap1, 0o644))
	require.Equal(t, [][]string{{"a"}}, run(t, e, "SELECT v FROM s.t AT (VERSION => 'first')"))

	// Unqualified, in a session; prepared; explained.
	in := engine.WithDatabase(context.Background(), "s")
	res, err := e.Execute(in, plan.Analyze("SELECT v FROM t AT (VERSION => 2) WHERE id = 2"))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"b"}}, drain(t, res.Reader))
	p, err := e.Prepare(context.Background(), plan.Analyze("SELECT * FROM s.t AT (VERSION => 1)"))
	require.NoError(t, err)
	require.Equal(t, 2, p.DatasetSchema.NumFields())
	require.NotEmpty(t, run(t, e, "EXPLAIN SELECT * FROM s.t AT (VERSION => 1)"))

	for sql, want := range map[string]error{
		`SELECT * FROM s."t$rt" AT (VERSION => 1)`:         engine.ErrInvalid,
		`SELECT * FROM s.t AT (VERSION => 99)`:             engine.ErrNotFound,
		`SELECT * FROM s.t AT (VERSION => 'nope')`:         engine.ErrNotFound,
		`SELECT * FROM s.t AT (TIMESTAMP => '1999-01-01')`: engine.ErrNotFound,
		`SELECT * FROM s.t AT (VERSION => 1.5)`:            engine.ErrInvalid,
		`SELECT * FROM s.t AT (TIMESTAMP => 'soon')`:       engine.ErrInvalid,
	} {
		_, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.ErrorIs(t, err, want, sql)
	}
}

// TestTimeTravelAcrossSchemaChanges: a past snapshot reads with the columns
// it was written under, as Java Paimon reads it: before a column was
// added, renamed, widened or dropped (the dropped column's values too),
// prepared with that schema, joined with today's table. A table option
// that would make t itself read other columns is refused, naming AT.
func TestTimeTravelAcrossSchemaChanges(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE s")
	run(t, e, "CREATE TABLE s.t (id BIGINT, v STRING, d STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.enabled' = 'false')")
	run(t, e, "INSERT INTO s.t VALUES (1, 'a', 'x')")        // snapshot 1: id, v, d
	run(t, e, "ALTER TABLE s.t ADD COLUMN w INT")            // schema 1
	run(t, e, "INSERT INTO s.t VALUES (2, 'b', 'y', 7)")     // snapshot 2: id, v, d, w INT
	run(t, e, "ALTER TABLE s.t RENAME COLUMN v TO v2")       // schema 2
	run(t, e, "ALTER TABLE s.t ALTER COLUMN w TYPE BIGINT")  // schema 3
	run(t, e, "ALTER TABLE s.t DROP COLUMN d")               // schema 4
	run(t, e, "INSERT INTO s.t VALUES (3, 'c', 9000000000)") // snapshot 3: id, v2, w BIGINT

	require.Equal(t, [][]string{{"1", "a", "x"}}, run(t, e, "SELECT * FROM s.t AT (VERSION => 1)"))
	require.Equal(t, [][]string{{"1", "a", "x", "(null)"}, {"2", "b", "y", "7"}}, run(t, e, "SELECT * FROM s.t AT (VERSION => 2) ORDER BY id"))
	require.Equal(t, [][]string{{"1", "a", "(null)"}, {"2", "b", "7"}, {"3", "c", "9000000000"}}, run(t, e, "SELECT * FROM s.t ORDER BY id"))
	require.Equal(t, [][]string{{"x"}}, run(t, e, "SELECT d FROM s.t AT (VERSION => 1) WHERE v = 'a'"), "the dropped column, by its old name")
	require.Equal(t, [][]string{{"2", "b", "b"}}, run(t, e, "SELECT id, old.v, t.v2 FROM s.t AS old AT (VERSION => 2) JOIN s.t USING (id) WHERE old.w = 7"))

	p, err := e.Prepare(context.Background(), plan.Analyze("SELECT * FROM s.t AT (VERSION => 2)"))
	require.NoError(t, err)
	require.Equal(t, "id, v, d, w", fieldNames(p.DatasetSchema))
	require.Equal(t, "int32", p.DatasetSchema.Field(3).Type.String(), "w was INT in snapshot 2")
	_, err = e.Execute(context.Background(), plan.Analyze("SELECT v2 FROM s.t AT (VERSION => 1)"))
	require.ErrorContains(t, err, "v2", "snapshot 1 has no v2")

	run(t, e, "ALTER TABLE s.t SET ('scan.snapshot-id' = '1')")
	_, err = e.Execute(context.Background(), plan.Analyze("SELECT * FROM s.t"))
	require.ErrorIs(t, err, engine.ErrUnsupported)
	require.ErrorContains(t, err, "AT (VERSION => 1)")
}

// TestTimeTravelSpelledAsPaimonsEngines: Spark's VERSION AS OF and
// TIMESTAMP AS OF, Flink's FOR SYSTEM_TIME AS OF and its OPTIONS hint read
// the snapshots AT reads; VERSION AS OF and scan.version take a tag of
// that name before a snapshot id, as Paimon does; a hint option flightd
// does not apply is refused by name.
func TestTimeTravelSpelledAsPaimonsEngines(t *testing.T) {
	dir := t.TempDir()
	e := newTestEngineIn(t, dir)
	run(t, e, "CREATE DATABASE s")
	run(t, e, "CREATE TABLE s.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.enabled' = 'false')")
	run(t, e, "INSERT INTO s.t VALUES (1, 'a')")
	run(t, e, "INSERT INTO s.t VALUES (2, 'b')")
	run(t, e, "INSERT INTO s.t VALUES (3, 'c')")
	tbl := filepath.Join(dir, "warehouse", "s.db", "t")
	snap1, err := os.ReadFile(filepath.Join(tbl, "snapshot", "snapshot-1"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(tbl, "tag"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tbl, "tag", "tag-first"), snap1, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tbl, "tag", "tag-2"), snap1, 0o644)) // a tag named like snapshot 2
	ts := run(t, e, `SELECT strftime(commit_time, '%Y-%m-%d %H:%M:%S.%g') FROM s."t$snapshots" WHERE snapshot_id = 2`)[0][0]
	ms := run(t, e, `SELECT epoch_ms(commit_time) FROM s."t$snapshots" WHERE snapshot_id = 2`)[0][0]

	count := func(sql string) string { return run(t, e, sql)[0][0] }
	for sql, want := range map[string]string{
		"SELECT count(*) FROM s.t VERSION AS OF 3":                                         "3",
		"SELECT count(*) FROM s.t VERSION AS OF 2":                                         "1", // the tag "2" comes first
		"SELECT count(*) FROM s.t AT (VERSION => 2)":                                       "2", // DuckDB's spelling: the snapshot
		"SELECT count(*) FROM s.t VERSION AS OF 'first'":                                   "1",
		"SELECT count(*) FROM s.t TIMESTAMP AS OF '" + ts + "'":                            "2",
		"SELECT count(*) FROM s.t FOR SYSTEM_TIME AS OF TIMESTAMP '" + ts + "'":            "2",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.snapshot-id'='1') */":                  "1",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.snapshot-id'='2') */ x WHERE x.id > 0": "2",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.tag-name'='first') */":                 "1",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.version'='3') */":                      "3",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.timestamp-millis'='" + ms + "') */":    "2",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.timestamp'='" + ts + "') */":           "2",
		"SELECT count(*) FROM s.t /*+ OPTIONS('scan.mode'='latest') */":                    "3",
		"SELECT count(*) FROM s.t VERSION AS OF 1 a JOIN s.t VERSION AS OF 3 b USING (id)": "1",
		"FROM s.t VERSION AS OF 3 SELECT count(*)":                                         "3",
	} {
		require.Equal(t, want, count(sql), sql)
	}
	// Prepared, and as the source of an INSERT.
	p, err := e.Prepare(context.Background(), plan.Analyze("SELECT * FROM s.t VERSION AS OF 1"))
	require.NoError(t, err)
	require.Equal(t, 2, p.DatasetSchema.NumFields())
	run(t, e, "CREATE TABLE s.u (id BIGINT, v STRING) WITH ('lakestream.enabled' = 'false')")
	run(t, e, "INSERT INTO s.u SELECT * FROM s.t FOR SYSTEM_TIME AS OF TIMESTAMP '"+ts+"'")
	require.Equal(t, "2", count("SELECT count(*) FROM s.u"))

	for sql, want := range map[string]string{
		"SELECT * FROM s.t /*+ OPTIONS('scan.parallelism'='4') */":                 `option "scan.parallelism" is not one flightd applies`,
		"SELECT * FROM s.t /*+ OPTIONS('scan.watermark'='4') */":                   `option "scan.watermark"`,
		"SELECT * FROM s.t VERSION AS OF 9":                                        "no snapshot 9",
		"SELECT * FROM s.t VERSION AS OF 'nope'":                                   "no tag",
		"INSERT INTO s.u /*+ OPTIONS('sink.parallelism'='2') */ SELECT * FROM s.t": "hint comment",
	} {
		_, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.ErrorContains(t, err, want, sql)
	}
}
