package lakestream_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

// Several flightd processes (nodes) serve one warehouse. Each has its own
// catalog, service and cached table metadata; DDL one of them runs must be
// seen by the next statement of every other, and so must its commits.

// twoNodes opens two services on one warehouse, as two processes would:
// each has its own catalog, service (with its caches) and tiering service.
// They share the log, as nodes share theirs (Kafka): the lake's snapshots
// record offsets of that one log.
func twoNodes(t *testing.T) (a, b *env) {
	t.Helper()
	dir := t.TempDir()
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	open := func() *env {
		cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
		require.NoError(t, err)
		ls := lakestream.New(cat, log, lakestream.Options{})
		return &env{dir: dir, cat: cat, log: log, ls: ls, tr: tiering.New(ls, tiering.Options{
			Expire: lake.ExpireOptions{RetainMin: 1, RetainMax: 100, OlderThan: time.Hour},
		})}
	}
	return open(), open()
}

// writeAndTier writes (id, v) rows to db.name through n and tiers them
// into the lake (a snapshot every node reads).
func writeAndTier(t *testing.T, n *env, name string, ids []int64, vals []string) {
	t.Helper()
	rec := dataBatch(ids, vals)
	defer rec.Release()
	_, err := n.ls.Write(t.Context(), "db", name, rec)
	require.NoError(t, err)
	_, err = n.tr.TierTable(t.Context(), "db", name)
	require.NoError(t, err)
}

func tableID(t *testing.T, n *env, name string) string {
	t.Helper()
	tb, err := n.ls.Table(t.Context(), "db", name)
	require.NoError(t, err)
	return lakestream.TableID(tb)
}

// requireGone asserts that every way of reading db.name through n says the
// table does not exist.
func requireGone(t *testing.T, n *env, name string) {
	t.Helper()
	ctx := t.Context()
	_, err := n.ls.Table(ctx, "db", name)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
	_, err = n.ls.ArrowSchema(ctx, "db", name)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
	_, err = n.ls.Scan(ctx, "db", name, false)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
	_, err = n.ls.Scan(ctx, "db", name, true)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
	rec := dataBatch([]int64{9}, []string{"z"})
	defer rec.Release()
	_, err = n.ls.Write(ctx, "db", name, rec)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
}

// TestDropOnOtherNodeIsSeenByNextStatement: node B had read a table that
// node A then dropped; B's next statement still found the table (its
// cached metadata only looked for a newer schema) and read it as empty.
func TestDropOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	createTable(t, a, "t", 2)
	writeAndTier(t, a, "t", []int64{1, 2}, []string{"a", "b"})
	rows, _ := scanRows(t, b, "t", false)
	require.Equal(t, []string{"id=1|v=a", "id=2|v=b"}, rows)

	require.NoError(t, a.ls.DropTable(t.Context(), "db", "t", false))
	requireGone(t, b, "t")
	names, err := b.ls.Tables(t.Context(), "db")
	require.NoError(t, err)
	require.Empty(t, names)
}

// TestDropAndCreateOnOtherNodeGivesTheNewTable: node A dropped a table and
// created one of the same name; node B, which had read the old one, went
// on with its metadata, its rows and its table id (so its log): the new
// table's rows were invisible to B and B's writes went to the dropped
// table's log. Also when the new table reached the schema id the old one
// had.
func TestDropAndCreateOnOtherNodeGivesTheNewTable(t *testing.T) {
	for _, alters := range []int{0, 1} {
		t.Run(map[int]string{0: "same schema id 0", 1: "same schema id 1"}[alters], func(t *testing.T) {
			ctx := t.Context()
			a, b := twoNodes(t)
			alter := func() {
				for i := range alters {
					require.NoError(t, a.ls.AlterTableOptions(ctx, "db", "t", map[string]string{"k": string(rune('a' + i))}))
				}
			}
			createTable(t, a, "t", 2)
			alter()
			writeAndTier(t, a, "t", []int64{1}, []string{"old"})
			oldID := tableID(t, b, "t")
			rows, _ := scanRows(t, b, "t", true)
			require.Equal(t, []string{"id=1|v=old"}, rows)

			require.NoError(t, a.ls.DropTable(ctx, "db", "t", false))
			createTable(t, a, "t", 2)
			alter()
			writeAndTier(t, a, "t", []int64{2}, []string{"new"})
			newID := tableID(t, a, "t")
			require.NotEqual(t, oldID, newID)

			require.Equal(t, newID, tableID(t, b, "t"), "B's next statement sees the new table's id")
			rows, _ = scanRows(t, b, "t", false)
			require.Equal(t, []string{"id=2|v=new"}, rows)
			// B's write goes to the new table's log.
			rec := dataBatch([]int64{3}, []string{"b"})
			defer rec.Release()
			_, err := b.ls.Write(ctx, "db", "t", rec)
			require.NoError(t, err)
			require.Equal(t, int64(2), logged(b, newID), "A's row and B's")
			require.Zero(t, logged(b, oldID), "the dropped table's log")
			rows, _ = scanRows(t, b, "t", true)
			require.Equal(t, []string{"id=2|v=new", "id=3|v=b"}, rows)
		})
	}
}

// logged is how many rows the log holds for a table id, over its buckets.
func logged(n *env, id string) int64 {
	var sum int64
	for _, hw := range n.log.HighWatermarks(id) {
		sum += hw
	}
	return sum
}

// TestAlterOnOtherNodeIsSeenByNextStatement: every kind of ALTER TABLE run
// on node A changes what node B's next statement reads.
func TestAlterOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	ctx := t.Context()
	createTable(t, a, "t", 2)
	writeAndTier(t, a, "t", []int64{1}, []string{"a"})
	columns := func() []string {
		t.Helper()
		sc, err := b.ls.ArrowSchema(ctx, "db", "t")
		require.NoError(t, err)
		var out []string
		for _, f := range sc.Fields() {
			out = append(out, f.Name+" "+f.Type.String())
		}
		return out
	}
	require.Equal(t, []string{"id int64", "v utf8"}, columns())

	require.NoError(t, a.ls.AddColumn(ctx, "db", "t", lake.AddColumn{Column: paimontype.Column{Name: "n", Type: mustParseType(t, "INT")}}))
	require.Equal(t, []string{"id int64", "v utf8", "n int32"}, columns())
	rows, _ := scanRows(t, b, "t", true)
	require.Equal(t, []string{"id=1|v=a|n=null"}, rows)

	require.NoError(t, a.ls.AlterColumn(ctx, "db", "t", []string{"n"}, lake.ColumnChange{Type: mustParseType(t, "BIGINT")}))
	require.Equal(t, []string{"id int64", "v utf8", "n int64"}, columns())

	require.NoError(t, a.ls.RenameColumn(ctx, "db", "t", "v", "w"))
	require.Equal(t, []string{"id int64", "w utf8", "n int64"}, columns())
	rows, _ = scanRows(t, b, "t", false)
	require.Equal(t, []string{"id=1|w=a|n=null"}, rows)

	require.NoError(t, a.ls.DropColumn(ctx, "db", "t", "n"))
	require.Equal(t, []string{"id int64", "w utf8"}, columns())

	require.NoError(t, a.ls.AlterTableOptions(ctx, "db", "t", map[string]string{lakestream.OptionFreshness: "7 min"}))
	tb, err := b.ls.Table(ctx, "db", "t")
	require.NoError(t, err)
	fr, err := lakestream.Freshness(tb, time.Second)
	require.NoError(t, err)
	require.Equal(t, 7*time.Minute, fr)
}

// TestRenameOnOtherNodeIsSeenByNextStatement: node A renamed a table that
// node B had read; B's next statement still read the old name.
func TestRenameOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	ctx := t.Context()
	createTable(t, a, "t", 2)
	writeAndTier(t, a, "t", []int64{1}, []string{"a"})
	id := tableID(t, b, "t")
	rows, _ := scanRows(t, b, "t", false)
	require.Equal(t, []string{"id=1|v=a"}, rows)

	require.NoError(t, a.ls.RenameTable(ctx, "db", "t", "db", "u"))
	requireGone(t, b, "t")
	rows, _ = scanRows(t, b, "u", false)
	require.Equal(t, []string{"id=1|v=a"}, rows)
	require.Equal(t, id, tableID(t, b, "u"), "the log follows the table")

	// And back: the name B had cached is the same table again.
	require.NoError(t, a.ls.RenameTable(ctx, "db", "u", "db", "t"))
	requireGone(t, b, "u")
	rows, _ = scanRows(t, b, "t", false)
	require.Equal(t, []string{"id=1|v=a"}, rows)
}

// TestLogSwitchOnOtherNodeIsSeenByNextStatement: node A switched a table's
// log off and on again; node B's next statement reads and writes as the
// table now is: with the log off, t$rt does not exist and a write commits
// to the lake; with it on again, the table's new log id.
func TestLogSwitchOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	ctx := t.Context()
	createTable(t, a, "t", 2)
	writeAndTier(t, a, "t", []int64{1}, []string{"a"})
	oldID := tableID(t, b, "t")
	rows, _ := scanRows(t, b, "t", true)
	require.Equal(t, []string{"id=1|v=a"}, rows)

	require.NoError(t, a.ls.SetRealtime(ctx, "db", "t", false, a.tr.Drain))
	tb, err := b.ls.Table(ctx, "db", "t")
	require.NoError(t, err)
	require.False(t, lakestream.Realtime(tb))
	_, err = b.ls.Scan(ctx, "db", "t", true)
	require.ErrorIs(t, err, lakestream.ErrNotRealtime)
	rec := dataBatch([]int64{2}, []string{"b"})
	defer rec.Release()
	_, err = b.ls.Write(ctx, "db", "t", rec)
	require.NoError(t, err)
	rows, _ = scanRows(t, a, "t", false)
	require.Equal(t, []string{"id=1|v=a", "id=2|v=b"}, rows, "B's write committed to the lake, not to a log")

	require.NoError(t, a.ls.SetRealtime(ctx, "db", "t", true, a.tr.Drain))
	newID := tableID(t, a, "t")
	require.NotEqual(t, oldID, newID)
	require.Equal(t, newID, tableID(t, b, "t"))
	rec3 := dataBatch([]int64{3}, []string{"c"})
	defer rec3.Release()
	_, err = b.ls.Write(ctx, "db", "t", rec3)
	require.NoError(t, err)
	require.Equal(t, int64(1), logged(b, newID))
	rows, _ = scanRows(t, b, "t", true)
	require.Equal(t, []string{"id=1|v=a", "id=2|v=b", "id=3|v=c"}, rows)
}

// TestDatabaseDDLOnOtherNodeIsSeenByNextStatement: CREATE and DROP
// DATABASE on node A are seen by node B's next statement, also for the
// tables of a database B had read.
func TestDatabaseDDLOnOtherNodeIsSeenByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	ctx := t.Context()
	require.NoError(t, a.ls.CreateDatabase(ctx, "d2", false))
	dbs, err := b.ls.Databases(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"d2"}, dbs)
	sc := paimontype.Schema{Columns: []paimontype.Column{{Name: "x", Type: mustParseType(t, "INT")}}}
	require.NoError(t, b.ls.CreateTable(ctx, "d2", "t", sc, false))
	_, err = a.ls.Table(ctx, "d2", "t")
	require.NoError(t, err)
	_, err = b.ls.ArrowSchema(ctx, "d2", "t")
	require.NoError(t, err)

	require.NoError(t, a.ls.DropDatabase(ctx, "d2", false, true))
	dbs, err = b.ls.Databases(ctx)
	require.NoError(t, err)
	require.Empty(t, dbs)
	_, err = b.ls.Table(ctx, "d2", "t")
	require.ErrorIs(t, err, lake.ErrTableNotFound)
	_, err = b.ls.Scan(ctx, "d2", "t", false)
	require.ErrorIs(t, err, lake.ErrTableNotFound)
	require.NoError(t, b.ls.CreateDatabase(ctx, "d2", false))
	_, err = a.ls.Tables(ctx, "d2")
	require.NoError(t, err)
}

// TestCommitOnOtherNodeIsReadByNextStatement: a snapshot node A commits is
// read by node B's next scan, of t and of t$rt.
func TestCommitOnOtherNodeIsReadByNextStatement(t *testing.T) {
	a, b := twoNodes(t)
	createTable(t, a, "t", 2)
	writeAndTier(t, a, "t", []int64{1}, []string{"a"})
	rows, _ := scanRows(t, b, "t", false)
	require.Equal(t, []string{"id=1|v=a"}, rows)
	for i, v := range []string{"b", "c"} {
		writeAndTier(t, a, "t", []int64{int64(i + 2)}, []string{v})
		want := []string{"id=1|v=a", "id=2|v=b", "id=3|v=c"}[:i+2]
		rows, _ = scanRows(t, b, "t", false)
		require.Equal(t, want, rows)
		rows, _ = scanRows(t, b, "t", true)
		require.Equal(t, want, rows)
	}
}

// TestDropAndCreateOnOtherNodeOfATableWithoutIDReadsTheNewLog: a table
// made by another engine has no lakestream.table-id, so its log is named
// db.name; dropped and created again by node A, its new log starts over at
// offset 0. Node B, which had written to the old one, answered t$rt with
// the old log's rows it had cached under the same name and offsets.
func TestDropAndCreateOnOtherNodeOfATableWithoutIDReadsTheNewLog(t *testing.T) {
	a, b := twoNodes(t)
	ctx := t.Context()
	require.NoError(t, a.ls.CreateDatabase(ctx, "db", true))
	create := func() {
		t.Helper()
		_, err := a.cat.CreateTable(ctx, "db", "f", paimontype.Schema{
			Columns:     []paimontype.Column{{Name: "id", Type: mustParseType(t, "BIGINT NOT NULL")}, {Name: "v", Type: mustParseType(t, "STRING")}},
			PrimaryKeys: []string{"id"},
			Options:     map[string]string{"bucket": "1", lakestream.OptionEnabled: "true"},
		}, false)
		require.NoError(t, err)
	}
	write := func(n *env, id int64, v string) {
		t.Helper()
		rec := dataBatch([]int64{id}, []string{v})
		defer rec.Release()
		_, err := n.ls.Write(ctx, "db", "f", rec)
		require.NoError(t, err)
	}
	create()
	require.Equal(t, "db.f", tableID(t, b, "f"))
	write(b, 1, "old")
	rows, _ := scanRows(t, b, "f", true)
	require.Equal(t, []string{"id=1|v=old"}, rows)

	require.NoError(t, a.ls.DropTable(ctx, "db", "f", false))
	create()
	write(a, 2, "new")
	rows, _ = scanRows(t, b, "f", true)
	require.Equal(t, []string{"id=2|v=new"}, rows)
}
