package integration

import (
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
}
