//go:build duckdb_arrow

package query

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/tiering"
)

// newProcedureEngine is an engine over dir whose procedures run on a
// tiering service of its own, which the test also drives.
func newProcedureEngine(t *testing.T, dir string) (*Engine, *tiering.Service) {
	t.Helper()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ls := lakestream.New(cat, log, lakestream.Options{})
	tier := tiering.New(ls, tiering.Options{CompactMinFiles: 1 << 30})
	e, err := New(ls, Options{Threads: 2, Maintenance: tier, TempDir: filepath.Join(dir, "duckdb-tmp"), MaxTempBytes: 1 << 30})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e, tier
}

// TestPaimonProceduresOnTags: sys.create_tag writes Paimon's tag file (the
// snapshot's JSON), t$tags lists it, time travel reads it by every
// spelling, sys.expire_snapshots keeps its files, sys.rollback_to goes
// back to a snapshot or a tag (writing an expired tag's snapshot back and
// deleting newer snapshots and tags), sys.delete_tag removes it; every
// refused call names what was wrong and changes nothing.
func TestPaimonProceduresOnTags(t *testing.T) {
	dir := t.TempDir()
	e, _ := newProcedureEngine(t, dir)
	run(t, e, "CREATE DATABASE s")
	run(t, e, "CREATE TABLE s.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.enabled' = 'false')")
	for _, v := range []string{"(1, 'a')", "(2, 'b')", "(3, 'c')", "(1, 'd')"} {
		run(t, e, "INSERT INTO s.t VALUES "+v)
	}
	tbl := filepath.Join(dir, "warehouse", "s.db", "t")
	count := func(sql string) string { return run(t, e, sql)[0][0] }

	run(t, e, "CALL sys.create_tag('s.t', 'v1', 1)")
	run(t, e, "CALL sys.create_tag(`table` => 's.t', tag => 'v3', snapshot_id => 3)")
	run(t, e, "CALL sys.create_tag(`table` => 's.t', tag => 'now')") // the latest
	snap1, err := os.ReadFile(filepath.Join(tbl, "snapshot", "snapshot-1"))
	require.NoError(t, err)
	tag1, err := os.ReadFile(filepath.Join(tbl, "tag", "tag-v1"))
	require.NoError(t, err)
	require.Equal(t, snap1, tag1, "a tag is its snapshot's JSON")
	require.Equal(t, [][]string{{"now", "4", "4"}, {"v1", "1", "1"}, {"v3", "3", "3"}}, run(t, e, `SELECT tag_name, snapshot_id, record_count FROM s."t$tags" ORDER BY tag_name`))
	require.Equal(t, "1", count("SELECT count(*) FROM s.t VERSION AS OF 'v1'"))
	require.Equal(t, "3", count("SELECT count(*) FROM s.t /*+ OPTIONS('scan.tag-name'='v3') */"))

	for sql, says := range map[string]string{
		"CALL sys.create_tag('s.t', 'v1', 2)":                                   `tag "v1" already exists`,
		"CALL sys.create_tag('s.t', 'x', 99)":                                   "snapshot 99",
		"CALL sys.create_tag('s.t', 'a/b', 1)":                                  "not a tag name",
		"CALL sys.create_tag('s.t', 'x', 1, time_retained => '1 d')":            "time_retained is not supported",
		"CALL sys.create_tag('s.nope', 'x', 1)":                                 "nope",
		"CALL sys.delete_tag('s.t', 'v1,missing')":                              "missing",
		"CALL sys.rollback_to('s.t', 'missing')":                                "missing",
		"CALL sys.rollback_to('s.t', 9)":                                        "snapshot",
		"CALL sys.rollback_to(`table` => 's.t', tag => 'v1', snapshot_id => 1)": "not both",
		"CALL sys.expire_snapshots('s.t', retain_max => 1)":                     "retain_max 1 is less than retain_min 10",
		"CALL sys.expire_snapshots('s.t', retain_min => 0)":                     "retain_min",
		"CALL sys.compact('s.t', order_strategy => 'zorder')":                   "order_strategy is not supported",
		"CALL sys.nope('s.t')":                                                  "not a procedure",
		"CALL sys.create_tag('s.t$rt', 'x')":                                    "database.table",
	} {
		_, err := e.Execute(context.Background(), plan.Analyze(sql))
		require.ErrorContains(t, err, says, sql)
	}
	require.Equal(t, "3", count(`SELECT count(*) FROM s."t$tags"`), "refused calls changed nothing")
	require.Equal(t, "4", count(`SELECT count(*) FROM s."t$snapshots"`))

	// Expiring keeps what tags reference.
	res, err := e.Execute(context.Background(), plan.Analyze("CALL sys.expire_snapshots(`table` => 's.t', retain_max => 1, retain_min => 1)"))
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Affected)
	require.Equal(t, [][]string{{"4"}}, run(t, e, `SELECT snapshot_id FROM s."t$snapshots"`))
	require.Equal(t, [][]string{{"1", "a"}}, run(t, e, "SELECT * FROM s.t VERSION AS OF 'v1'"))
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}, {"3", "c"}}, run(t, e, "SELECT * FROM s.t VERSION AS OF 'v3' ORDER BY id"))

	// Back to a tag whose snapshot expired: written back; newer tags go.
	res, err = e.Execute(context.Background(), plan.Analyze("CALL sys.rollback_to('s.t', 'v3')"))
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Affected)
	require.Equal(t, [][]string{{"3"}}, run(t, e, `SELECT snapshot_id FROM s."t$snapshots"`))
	require.Equal(t, [][]string{{"v1"}, {"v3"}}, run(t, e, `SELECT tag_name FROM s."t$tags" ORDER BY 1`))
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}, {"3", "c"}}, run(t, e, "SELECT * FROM s.t ORDER BY id"))
	run(t, e, "INSERT INTO s.t VALUES (4, 'e')") // commits snapshot 4 again
	require.Equal(t, "4", count("SELECT count(*) FROM s.t"))

	// Spark's rollback, by version; then delete the tags.
	run(t, e, "CALL sys.rollback(`table` => 's.t', version => 'v1')")
	require.Equal(t, [][]string{{"1", "a"}}, run(t, e, "SELECT * FROM s.t"))
	run(t, e, "CALL sys.delete_tag('s.t', 'v1')")
	require.Equal(t, "0", count(`SELECT count(*) FROM s."t$tags"`))
	_, err = e.Execute(context.Background(), plan.Analyze("SELECT * FROM s.t VERSION AS OF 'v1'"))
	require.ErrorIs(t, err, engine.ErrNotFound)
}

// TestPaimonProceduresOnLogTables: sys.compact compacts a table with the
// log on at once, carrying the log's offsets forward; sys.rollback_to is
// refused there (the log would tier the rolled-back rows again), naming
// the way to do it; sys.expire_snapshots keeps the snapshot the log needs.
func TestPaimonProceduresOnLogTables(t *testing.T) {
	e, tier := newProcedureEngine(t, t.TempDir())
	ctx := context.Background()
	run(t, e, "CREATE TABLE k (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
	for _, v := range []string{"(1, 'a'), (2, 'b')", "(2, 'c')", "(3, 'd')"} {
		run(t, e, "INSERT INTO k VALUES "+v)
		_, err := tier.TierTable(ctx, DefaultDatabase, "k")
		require.NoError(t, err)
	}
	require.Equal(t, [][]string{{"3"}}, run(t, e, `SELECT count(*) FROM "k$files"`))
	res, err := e.Execute(ctx, plan.Analyze("CALL sys.compact('default.k')"))
	require.NoError(t, err)
	require.Equal(t, int64(4), res.Affected, "the COMPACT snapshot")
	require.Equal(t, [][]string{{"1", "5"}}, run(t, e, `SELECT count(*), max(level) FROM "k$files"`))
	require.Equal(t, [][]string{{"COMPACT"}}, run(t, e, `SELECT commit_kind FROM "k$snapshots" ORDER BY snapshot_id DESC LIMIT 1`))
	require.Equal(t, [][]string{{"1", "a"}, {"2", "c"}, {"3", "d"}}, run(t, e, `SELECT * FROM k ORDER BY id`))
	run(t, e, "INSERT INTO k VALUES (4, 'e')")
	_, err = tier.TierTable(ctx, DefaultDatabase, "k") // the offsets went forward: nothing twice
	require.NoError(t, err)
	require.Equal(t, [][]string{{"4"}}, run(t, e, `SELECT count(*) FROM k`))

	_, err = e.Execute(ctx, plan.Analyze("CALL sys.rollback_to('default.k', 1)"))
	require.ErrorIs(t, err, engine.ErrUnsupported)
	require.ErrorContains(t, err, "lakestream.enabled' = 'false'")
	_, err = e.Execute(ctx, plan.Analyze("CALL sys.expire_snapshots('default.k', retain_max => 1, retain_min => 1)"))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "a"}, {"2", "c"}, {"3", "d"}, {"4", "e"}}, run(t, e, `SELECT * FROM "k$rt" ORDER BY id`))
}

// TestBinlogIsTheAuditLogInArrays: t$binlog reads as Paimon's batch read
// of it: t$audit_log's rows, each column's value in an array of one, of
// the column's type.
func TestBinlogIsTheAuditLogInArrays(t *testing.T) {
	e, tier := newProcedureEngine(t, t.TempDir())
	run(t, e, "CREATE TABLE k (id BIGINT, v STRING, d DECIMAL(5, 2), PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
	run(t, e, "INSERT INTO k VALUES (1, 'a', 1.5), (2, NULL, NULL)")
	run(t, e, "INSERT INTO k VALUES (1, 'b', 2.25)")
	_, err := tier.TierTable(context.Background(), DefaultDatabase, "k")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"+I", "[1]", "[b]", "[2.25]"}, {"+I", "[2]", "[NULL]", "[NULL]"}},
		run(t, e, `SELECT rowkind, id::VARCHAR, v::VARCHAR, d::VARCHAR FROM "k$binlog" ORDER BY id[1]`))
	require.Equal(t, [][]string{{"rowkind", "VARCHAR"}, {"id", "BIGINT[]"}, {"v", "VARCHAR[]"}, {"d", "DECIMAL(5,2)[]"}},
		run(t, e, `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "k$binlog")`))
	require.Equal(t, run(t, e, `SELECT rowkind, id, v, d FROM "k$audit_log" ORDER BY id`),
		run(t, e, `SELECT rowkind, id[1], v[1], d[1] FROM "k$binlog" ORDER BY id[1]`))
}
