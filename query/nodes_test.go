//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/tiering"
)

// Several flightd processes (nodes) serve one warehouse. DDL run on one
// is seen by the next statement of every other, and so are its commits.

// node is one flightd process's engine, with a tiering service to run
// rounds by hand.
type node struct {
	e    *Engine
	tier *tiering.Service
}

// twoNodes opens two engines on one warehouse, as two processes would:
// each has its own catalog, lakestream service and DuckDB. They share the
// log, as nodes share theirs (Kafka): the lake's snapshots record offsets
// of that one log.
func twoNodes(t *testing.T) (a, b node) {
	t.Helper()
	dir := t.TempDir()
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	open := func(name string) node {
		cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
		require.NoError(t, err)
		ls := lakestream.New(cat, log, lakestream.Options{})
		tr := tiering.New(ls, tiering.Options{CompactMinFiles: 1 << 30})
		e, err := New(ls, Options{Threads: 1, Drain: tr.Drain, TempDir: filepath.Join(dir, name+"-tmp")})
		require.NoError(t, err)
		t.Cleanup(func() { e.Close() })
		return node{e: e, tier: tr}
	}
	return open("a"), open("b")
}

// tierAll commits what the log holds of default.name into the lake.
func (n node) tierAll(t *testing.T, name string) {
	t.Helper()
	_, err := n.tier.TierTable(context.Background(), DefaultDatabase, name)
	require.NoError(t, err)
}

// columnNames are the columns of sql's result.
func columnNames(t *testing.T, e *Engine, sql string) []string {
	t.Helper()
	res, err := e.Execute(context.Background(), plan.Analyze(sql))
	require.NoError(t, err, sql)
	defer res.Reader.Release()
	var out []string
	for _, f := range res.Schema.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func tableIDOf(t *testing.T, e *Engine, table string) string {
	t.Helper()
	rows := run(t, e, `SELECT value FROM "`+table+`$options" WHERE key = '`+lakestream.OptionTableID+`'`)
	require.Len(t, rows, 1)
	return rows[0][0]
}

// requireNotFound runs each statement on e and wants ErrNotFound saying so.
func requireNotFound(t *testing.T, e *Engine, says string, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		_, err := e.Execute(context.Background(), plan.Analyze(q))
		require.True(t, errors.Is(err, engine.ErrNotFound), "%s: %v", q, err)
		require.ErrorContains(t, err, says, q)
	}
}

// TestDropOnOtherNodeIsSeenByNextStatement: node B had read a table that
// node A then dropped; B went on answering from its cached metadata.
func TestDropOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	run(t, a.e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, a.e, "INSERT INTO t VALUES (1, 'a')")
	a.tierAll(t, "t")
	require.Equal(t, [][]string{{"1", "a"}}, run(t, b.e, "SELECT * FROM t"))
	require.Equal(t, [][]string{{"a"}}, run(t, b.e, "SELECT v FROM t WHERE id = 1"))
	require.Equal(t, [][]string{{"1"}}, run(t, b.e, `SELECT count(*) FROM "t$rt" JOIN t USING (id)`))

	run(t, a.e, "DROP TABLE t")
	requireNotFound(t, b.e, "default.t",
		"SELECT * FROM t",
		"SELECT v FROM t WHERE id = 1",
		`SELECT count(*) FROM "t$rt" JOIN t USING (id)`,
		`SELECT * FROM "default"."t$rt"`,
		"INSERT INTO t VALUES (2, 'b')")
	_, err := b.e.Execute(context.Background(), plan.Analyze("ALTER TABLE t ADD COLUMN n INT"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	tables, err := b.e.Tables(context.Background(), DefaultDatabase)
	require.NoError(t, err)
	require.Empty(t, tables)
}

// TestTableDroppedOnOtherNodeLeavesDuckDBsCatalog: DuckDB's catalog
// (information_schema) of node B listed the views of tables B had read
// after node A dropped or renamed them, and the columns they had before
// A's ALTER.
func TestTableDroppedOnOtherNodeLeavesDuckDBsCatalog(t *testing.T) {
	a, b := twoNodes(t)
	for _, n := range []string{"gone", "moved", "kept", "altered"} {
		run(t, a.e, "CREATE TABLE "+n+" (id BIGINT, v STRING)")
		run(t, b.e, `SELECT count(*) FROM "`+n+`" JOIN "`+n+`$rt" USING (id)`)
	}
	catalog := func() [][]string {
		t.Helper()
		return run(t, b.e, "SELECT table_name, count(*) FROM information_schema.columns WHERE table_schema = 'default' GROUP BY ALL ORDER BY ALL")
	}
	require.Equal(t, [][]string{{"altered", "2"}, {"altered$rt", "2"}, {"gone", "2"}, {"gone$rt", "2"}, {"kept", "2"}, {"kept$rt", "2"}, {"moved", "2"}, {"moved$rt", "2"}}, catalog())
	run(t, a.e, "DROP TABLE gone")
	run(t, a.e, "ALTER TABLE moved RENAME TO elsewhere")
	run(t, a.e, "ALTER TABLE altered ADD COLUMN n INT")
	require.Equal(t, [][]string{{"altered", "3"}, {"elsewhere", "2"}, {"kept", "2"}, {"kept$rt", "2"}}, catalog(),
		"the views of tables dropped, renamed or altered elsewhere are gone, the others stay, and every table of the warehouse is listed as it is now")
	require.Equal(t, [][]string{{"0"}}, run(t, b.e, "SELECT count(*) FROM altered"))
	require.Equal(t, [][]string{{"altered", "3"}, {"elsewhere", "2"}, {"kept", "2"}, {"kept$rt", "2"}}, catalog())
}

// TestDropAndCreateOnOtherNodeGivesTheNewTable: node A dropped a table and
// created one of the same name and columns; node B, which had read the old
// one, went on with its table id: it read the old table and wrote into the
// dropped table's log, where no one would ever read the rows.
func TestDropAndCreateOnOtherNodeGivesTheNewTable(t *testing.T) {
	a, b := twoNodes(t)
	const create = "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')"
	run(t, a.e, create)
	run(t, a.e, "INSERT INTO t VALUES (1, 'old')")
	a.tierAll(t, "t")
	require.Equal(t, [][]string{{"1", "old"}}, run(t, b.e, "SELECT * FROM t"))
	oldID := tableIDOf(t, b.e, "t")

	run(t, a.e, "DROP TABLE t")
	run(t, a.e, create)
	run(t, a.e, "INSERT INTO t VALUES (2, 'new')")
	a.tierAll(t, "t")
	newID := tableIDOf(t, a.e, "t")
	require.NotEqual(t, oldID, newID)

	require.Equal(t, newID, tableIDOf(t, b.e, "t"))
	require.Equal(t, [][]string{{"2", "new"}}, run(t, b.e, "SELECT * FROM t"))
	require.Empty(t, run(t, b.e, "SELECT * FROM t WHERE id = 1"))
	run(t, b.e, "INSERT INTO t VALUES (3, 'b')")
	require.Equal(t, [][]string{{"2", "new"}, {"3", "b"}}, run(t, a.e, `SELECT * FROM "t$rt" ORDER BY id`),
		"B wrote into the new table's log")
}

// TestAlterOnOtherNodeIsSeenByNextStatement: each kind of ALTER TABLE run
// on node A is seen by node B's next statement, a scan and a point query.
func TestAlterOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	run(t, a.e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, a.e, "INSERT INTO t VALUES (1, 'a')")
	a.tierAll(t, "t")
	require.Equal(t, []string{"id", "v"}, columnNames(t, b.e, "SELECT * FROM t"))
	for _, step := range []struct {
		alter string
		cols  []string
		point [][]string // SELECT * FROM t WHERE id = 1
		typeN string     // the type of n, when there is one
	}{
		{"ALTER TABLE t ADD COLUMN n INT", []string{"id", "v", "n"}, [][]string{{"1", "a", "(null)"}}, "INTEGER"},
		{"ALTER TABLE t ALTER COLUMN n TYPE BIGINT", []string{"id", "v", "n"}, [][]string{{"1", "a", "(null)"}}, "BIGINT"},
		{"ALTER TABLE t RENAME COLUMN v TO w", []string{"id", "w", "n"}, [][]string{{"1", "a", "(null)"}}, "BIGINT"},
		{"ALTER TABLE t DROP COLUMN n", []string{"id", "w"}, [][]string{{"1", "a"}}, ""},
	} {
		run(t, a.e, step.alter)
		require.Equal(t, step.cols, columnNames(t, b.e, "SELECT * FROM t"), step.alter)
		require.Equal(t, step.point, run(t, b.e, "SELECT * FROM t WHERE id = 1"), step.alter)
		require.Equal(t, step.cols, columnNames(t, b.e, `SELECT * FROM "t$rt"`), step.alter)
		if step.typeN != "" {
			require.Equal(t, [][]string{{step.typeN}}, run(t, b.e, "SELECT typeof(n) FROM t"), step.alter)
		}
	}
	run(t, a.e, "ALTER TABLE t SET ('lakestream.freshness' = '7 min')")
	require.Equal(t, [][]string{{"7 min"}}, run(t, b.e, `SELECT value FROM "t$options" WHERE key = 'lakestream.freshness'`))
	run(t, a.e, "INSERT INTO t VALUES (2, 'b')")
	a.tierAll(t, "t")
	snap := run(t, a.e, `SELECT max(snapshot_id) FROM "t$snapshots"`)[0][0]
	run(t, a.e, "ALTER TABLE t SET ('scan.snapshot-id' = '"+snap+"')")
	run(t, a.e, "INSERT INTO t VALUES (3, 'c')")
	a.tierAll(t, "t")
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}}, run(t, b.e, "SELECT * FROM t ORDER BY id"), "B travels as the option says")
	run(t, a.e, "ALTER TABLE t RESET ('scan.snapshot-id')")
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}, {"3", "c"}}, run(t, b.e, "SELECT * FROM t ORDER BY id"))
}

// TestRenameOnOtherNodeIsSeenByNextStatement: node A renamed a table node
// B had read; B went on reading it under its old name.
func TestRenameOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	run(t, a.e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, a.e, "INSERT INTO t VALUES (1, 'a')")
	a.tierAll(t, "t")
	run(t, a.e, "INSERT INTO t VALUES (2, 'b')") // in the log only
	require.Equal(t, [][]string{{"1", "a"}}, run(t, b.e, "SELECT * FROM t WHERE id = 1"))

	run(t, a.e, "ALTER TABLE t RENAME TO u")
	requireNotFound(t, b.e, "default.t", `SELECT * FROM "default".t WHERE id = 1`, `SELECT * FROM "default"."t$rt"`, "INSERT INTO t VALUES (3, 'c')")
	require.Equal(t, [][]string{{"1", "a"}}, run(t, b.e, "SELECT * FROM u ORDER BY id"))
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}}, run(t, b.e, `SELECT * FROM "u$rt" ORDER BY id`))
}

// TestLogSwitchOnOtherNodeIsSeenByNextStatement: node A switched a table's
// log off and on; node B's next statement reads and writes the table as it
// now is: with the log off t$rt is refused and an INSERT commits to the
// lake, with the log on again B writes into the table's new log.
func TestLogSwitchOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	run(t, a.e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, a.e, "INSERT INTO t VALUES (1, 'a')")
	require.Equal(t, [][]string{{"1", "a"}}, run(t, b.e, `SELECT * FROM "t$rt"`))
	oldID := tableIDOf(t, b.e, "t")

	run(t, a.e, "ALTER TABLE t SET ('lakestream.enabled' = 'false')")
	_, err := b.e.Execute(context.Background(), plan.Analyze(`SELECT * FROM "t$rt"`))
	require.True(t, errors.Is(err, engine.ErrRejected), "%v", err)
	run(t, b.e, "INSERT INTO t VALUES (2, 'b')")
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}}, run(t, a.e, "SELECT * FROM t ORDER BY id"),
		"B's INSERT committed to the lake")

	run(t, a.e, "ALTER TABLE t SET ('lakestream.enabled' = 'true')")
	newID := tableIDOf(t, a.e, "t")
	require.NotEqual(t, oldID, newID)
	require.Equal(t, newID, tableIDOf(t, b.e, "t"))
	run(t, b.e, "INSERT INTO t VALUES (3, 'c')")
	require.Equal(t, [][]string{{"1", "a"}, {"2", "b"}, {"3", "c"}}, run(t, a.e, `SELECT * FROM "t$rt" ORDER BY id`),
		"B wrote into the table's new log")
}

// TestDatabaseDDLOnOtherNodeIsSeenByNextStatement: CREATE and DROP
// DATABASE on node A are seen by node B's next statement, also by the
// tables of a database B had read.
func TestDatabaseDDLOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	run(t, a.e, "CREATE DATABASE d2")
	res, err := b.e.Execute(ctx, plan.Analyze("USE d2"))
	require.NoError(t, err)
	require.Equal(t, "d2", res.Database)
	run(t, b.e, "CREATE TABLE d2.t (x INT)")
	run(t, a.e, "INSERT INTO d2.t VALUES (1)")
	require.Equal(t, [][]string{{"1"}}, run(t, b.e, `SELECT * FROM d2."t$rt"`))
	require.Equal(t, [][]string{{"1"}}, runIn(t, b.e, "d2", `SELECT * FROM "t$rt"`))

	run(t, a.e, "DROP DATABASE d2 CASCADE")
	requireNotFound(t, b.e, "d2", `SELECT * FROM d2."t$rt"`, "SELECT * FROM d2.t", "USE d2")
	_, err = b.e.Execute(engine.WithDatabase(ctx, "d2"), plan.Analyze("SELECT * FROM t"))
	require.True(t, errors.Is(err, engine.ErrNotFound), "%v", err)
	dbs, err := b.e.Databases(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{DefaultDatabase}, dbs)
	run(t, b.e, "CREATE DATABASE d2")
	run(t, a.e, "CREATE TABLE d2.t (y STRING)")
	require.Equal(t, []string{"y"}, columnNames(t, b.e, "SELECT * FROM d2.t"))
}

// TestCommitOnOtherNodeIsReadByNextStatement: a snapshot node A commits is
// read by node B's next statement, a scan and a point query.
func TestCommitOnOtherNodeIsReadByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	run(t, a.e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, a.e, "INSERT INTO t VALUES (1, 'a')")
	a.tierAll(t, "t")
	require.Equal(t, [][]string{{"1"}}, run(t, b.e, "SELECT count(*) FROM t"))
	run(t, a.e, "INSERT INTO t VALUES (1, 'a2'), (2, 'b')")
	a.tierAll(t, "t")
	require.Equal(t, [][]string{{"2"}}, run(t, b.e, "SELECT count(*) FROM t"))
	require.Equal(t, [][]string{{"a2"}}, run(t, b.e, "SELECT v FROM t WHERE id = 1"))
}

// metadataFS records the accesses to a table's metadata files (schema/,
// snapshot/): what a statement pays on an object store, a request each.
type metadataFS struct {
	fileio.Local
	mu  sync.Mutex
	ops []string
}

func (m *metadataFS) note(op, p string) {
	dir, file := filepath.Split(p)
	if d := filepath.Base(dir); d != "schema" && d != "snapshot" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = append(m.ops, op+" "+file)
}

func (m *metadataFS) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := m.ops
	m.ops = nil
	sort.Strings(ops)
	return ops
}

func (m *metadataFS) Read(ctx context.Context, p string) ([]byte, error) {
	m.note("read", p)
	return m.Local.Read(ctx, p)
}

func (m *metadataFS) Exists(ctx context.Context, p string) (bool, error) {
	m.note("exists", p)
	return m.Local.Exists(ctx, p)
}

func (m *metadataFS) Version(ctx context.Context, p string) (string, error) {
	m.note("version", p)
	return m.Local.Version(ctx, p)
}

func (m *metadataFS) List(ctx context.Context, p string) ([]fileio.FileInfo, error) {
	m.note("list", p+"/")
	return m.Local.List(ctx, p)
}

// TestPointQueryChecksItsTableOncePerPhase: checking that a table is still
// the one a process cached (another node may have dropped, re-created or
// altered it) must stay cheap. A point query checks it once when the
// server asks whether it is short work, once while it is planned and once
// when it scans: each a read of the schema file and a version check of the
// next (one HEAD on S3, where an existence test also lists), at once; before, it looked for the next schema five times, one
// after another. The latest snapshot costs its two version checks.
func TestPointQueryChecksItsTableOncePerPhase(t *testing.T) {
	dir := t.TempDir()
	fio := &metadataFS{}
	cat, err := lake.OpenCatalogFileIO(context.Background(), filepath.Join(dir, "warehouse"), fio)
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ls := lakestream.New(cat, log, lakestream.Options{})
	e, err := New(ls, Options{Threads: 1})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	run(t, e, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO t VALUES (1, 'a')")
	_, err = tiering.New(ls, tiering.Options{}).TierTable(context.Background(), DefaultDatabase, "t")
	require.NoError(t, err)
	const q = "SELECT v FROM t WHERE id = 1"
	require.True(t, e.ShortWork(context.Background(), plan.Analyze(q)))
	require.Equal(t, [][]string{{"a"}}, run(t, e, q))
	fio.take()

	require.True(t, e.ShortWork(context.Background(), plan.Analyze(q)))
	require.Equal(t, []string{"read schema-0", "version schema-1"}, fio.take(), "admission")
	require.Equal(t, [][]string{{"a"}}, run(t, e, q))
	require.Equal(t, []string{"read schema-0", "read schema-0", "version schema-1", "version schema-1", "version snapshot-1", "version snapshot-2"}, fio.take(),
		"planning and scan")
}
