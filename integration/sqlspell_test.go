package integration

import (
	"fmt"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestPaimonDocSpellings: statements pasted from Apache Paimon's Spark
// and Flink documentation run through the server as they are written
// there, on one server shared by the families of spellings.
func TestPaimonDocSpellings(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE doc")

	t.Run("time travel", func(t *testing.T) {
		c := connect(t, srv)
		// Without the log every INSERT is a snapshot of its own.
		c.mustExec("CREATE TABLE doc.tt (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.enabled' = 'false')")
		c.mustExec("INSERT INTO doc.tt VALUES (1, 'a')")
		c.mustExec("INSERT INTO doc.tt VALUES (2, 'b')")
		c.mustExec("INSERT INTO doc.tt VALUES (1, 'c')")
		ts := c.scalar(`SELECT strftime(commit_time, '%Y-%m-%d %H:%M:%S.%g') FROM doc."tt$snapshots" WHERE snapshot_id = 2`)
		for sql, want := range map[string][]string{
			"SELECT id, v FROM doc.tt VERSION AS OF 1":                                               {"1|a"},
			"SELECT id, v FROM doc.tt TIMESTAMP AS OF '" + ts + "'":                                  {"1|a", "2|b"},
			"SELECT id, v FROM doc.tt FOR SYSTEM_TIME AS OF TIMESTAMP '" + ts + "'":                  {"1|a", "2|b"},
			"SELECT id, v FROM doc.tt /*+ OPTIONS('scan.snapshot-id'='1') */":                        {"1|a"},
			"SELECT x.id, x.v FROM doc.tt /*+ OPTIONS('scan.snapshot-id'='3') */ AS x":               {"1|c", "2|b"},
			"SELECT a.v, b.v FROM doc.tt VERSION AS OF 1 a JOIN doc.tt VERSION AS OF 3 b USING (id)": {"a|c"},
		} {
			require.Equal(t, want, sortedRows(c.mustQuery(sql)), sql)
		}
		_, err := c.query("SELECT * FROM doc.tt /*+ OPTIONS('scan.parallelism'='4') */")
		require.ErrorContains(t, err, "scan.parallelism")
		_, err = c.query(`SELECT * FROM doc."tt$rt" VERSION AS OF 1`)
		require.Error(t, err)
	})

	t.Run("alter lists", func(t *testing.T) {
		c := connect(t, srv)
		c.mustExec("CREATE TABLE doc.al (id BIGINT, a INT, b STRING, PRIMARY KEY (id) NOT ENFORCED)")
		c.mustExec("INSERT INTO doc.al VALUES (1, 10, 'x')")
		c.mustExec("ALTER TABLE doc.al ADD (c3 DOUBLE, c4 STRING)") // Flink
		c.mustExec("ALTER TABLE doc.al ADD COLUMNS (c5 INT)")       // Spark
		c.mustExec("ALTER TABLE doc.al MODIFY a BIGINT")            // Flink
		c.mustExec("ALTER TABLE doc.al RENAME c3 TO d3")            // Flink
		c.mustExec("ALTER TABLE doc.al DROP (c4, c5)")              // Flink
		_, err := c.exec("ALTER TABLE doc.al ADD (c6 INT, b INT)")  // b exists: nothing is added
		require.ErrorContains(t, err, `column "b" exists`)
		require.Equal(t, []string{"1|10|x|NULL"}, sortedRows(c.mustQuery(`SELECT * FROM doc."al$rt"`)))
		require.Equal(t, "6", c.scalar(`SELECT count(*) FROM doc."al$schemas"`))
	})

	t.Run("procedures", func(t *testing.T) {
		c := connect(t, srv)
		c.mustExec("CREATE TABLE doc.pr (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.enabled' = 'false')")
		c.mustExec("INSERT INTO doc.pr VALUES (1, 'a')")
		c.mustExec("INSERT INTO doc.pr VALUES (2, 'b')")
		c.mustExec("INSERT INTO doc.pr VALUES (3, 'c')")
		c.mustExec("CALL sys.create_tag('doc.pr', 'first', 1)")
		require.Equal(t, []string{"first|1"}, sortedRows(c.mustQuery(`SELECT tag_name, snapshot_id FROM doc."pr$tags"`)))
		require.Equal(t, int64(2), c.mustExec("CALL sys.expire_snapshots(`table` => 'doc.pr', retain_max => 1, retain_min => 1)"))
		require.Equal(t, []string{"1|a"}, sortedRows(c.mustQuery("SELECT * FROM doc.pr VERSION AS OF 'first'")))
		c.mustExec("CALL sys.rollback_to('doc.pr', 'first')")
		require.Equal(t, []string{"1|a"}, sortedRows(c.mustQuery("SELECT * FROM doc.pr")))
		c.mustExec("CALL sys.compact('doc.pr')")
		c.mustExec("CALL sys.delete_tag('doc.pr', 'first')")
		_, err := c.exec("CALL sys.delete_tag('doc.pr', 'first')")
		require.ErrorContains(t, err, "first")
		require.Equal(t, []string{"1|a"}, sortedRows(c.mustQuery("SELECT * FROM doc.pr")))
		require.Equal(t, []string{"+I|[1]|[a]"}, sortedRows(c.mustQuery(`SELECT rowkind, id::VARCHAR, v::VARCHAR FROM doc."pr$binlog"`)))
	})

	t.Run("DuckDB arrays in CREATE TABLE", func(t *testing.T) {
		c := connect(t, srv)
		c.mustExec("CREATE TABLE doc.arr (id BIGINT, a INT[], s VARCHAR[][])")
		c.mustExec("INSERT INTO doc.arr VALUES (1, [1, 2], [['x'], []])")
		require.Equal(t, []string{"[1, 2]|[[x], []]"}, sortedRows(c.mustQuery(`SELECT a::VARCHAR, s::VARCHAR FROM doc."arr$rt"`)))
	})

	t.Run("catalog after a restart", func(t *testing.T) {
		srv.Restart(syscall.SIGTERM)
		c := connect(t, srv)
		require.Equal(t, []string{"al", "arr", "pr", "tt"}, sortedRows(c.mustQuery("SELECT table_name FROM information_schema.tables WHERE table_schema = 'doc'")))
		require.Equal(t, []string{"al", "arr", "pr", "tt"}, sortedRows(c.mustQuery("SHOW TABLES FROM doc")))
		require.Empty(t, c.mustQuery("SHOW TABLES"), "default has none")
		require.Equal(t, []string{"id|BIGINT", "v|VARCHAR"}, sortedRows(c.mustQuery("SELECT column_name, column_type FROM (DESCRIBE doc.tt)")))
	})
}

// TestPaimonProceduresMatchJava: a tag flightd's sys.create_tag wrote
// reads in Java Paimon (scan.tag-name) as in flightd, also once
// sys.expire_snapshots expired its snapshot, and a table sys.rollback_to
// rolled back reads in Java as in flightd.
func TestPaimonProceduresMatchJava(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE x")
	c.mustExec("CREATE TABLE x.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'lakestream.enabled' = 'false')")
	c.mustExec("INSERT INTO x.t VALUES (1, 'a'), (2, 'b')")
	c.mustExec("INSERT INTO x.t VALUES (2, 'c'), (3, 'd')")
	c.mustExec("INSERT INTO x.t VALUES (1, 'e')")
	c.mustExec("CALL sys.create_tag('x.t', 'two', 2)")
	c.mustExec("CALL sys.expire_snapshots('x.t', retain_max => 1, retain_min => 1)")
	pairs := func(rows []map[string]any) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%v=%v", javaValue(t, r["id"], false), r["v"]))
		}
		sort.Strings(out)
		return out
	}
	mustJava(t, jar, "alter", wh, "x.t", "set:scan.tag-name=two")
	java, err := javaRead(jar, wh, "x.t")
	require.NoError(t, err)
	mustJava(t, jar, "alter", wh, "x.t", "reset:scan.tag-name")
	require.Equal(t, []string{"1=a", "2=c", "3=d"}, pairs(java))
	require.Equal(t, pairs(java), pairs(c.rowsAsMaps("SELECT id, v FROM x.t VERSION AS OF 'two'")))

	c.mustExec("CALL sys.rollback_to('x.t', 'two')")
	java, err = javaRead(jar, wh, "x.t")
	require.NoError(t, err)
	require.Equal(t, []string{"1=a", "2=c", "3=d"}, pairs(java))
	require.Equal(t, pairs(java), pairs(c.rowsAsMaps("SELECT id, v FROM x.t")))
	c.mustExec("INSERT INTO x.t VALUES (4, 'f')")
	java, err = javaRead(jar, wh, "x.t")
	require.NoError(t, err)
	require.Equal(t, pairs(java), pairs(c.rowsAsMaps("SELECT id, v FROM x.t")))
}
