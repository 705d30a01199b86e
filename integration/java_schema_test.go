package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestJavaAddColumnWhileRowsWaitInLogStillTiers: Java Paimon changes the
// schema of flightd's tables (adds, renames, widens INT to BIGINT, drops a
// column) while their rows wait in the log. flightd's next statement sees
// the new schema; t$rt shows the old rows under it (new column NULL); a value
// beyond INT goes into the widened column without a restart; tiering
// succeeds (it used to fail for good: "record has 3 columns, table has 4"),
// and t after tiering equals t$rt before, in flightd and in Java; after a
// restart (SIGKILL) t$rt still reads (it used to panic: "number of
// columns/fields mismatch").
func TestJavaAddColumnWhileRowsWaitInLogStillTiers(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir, "--tiering-interval", "1h")
	c := connect(t, srv)

	c.mustExec("CREATE DATABASE j")
	c.mustExec("CREATE TABLE j.pk (id BIGINT, name STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("CREATE TABLE j.ap (id BIGINT, name STRING, n INT, gone STRING)")
	var pkVals, apVals []string
	for id := 0; id < 20; id++ {
		pkVals = append(pkVals, fmt.Sprintf("(%d, 'n%d', %d)", id, id, id*1000-7))
		apVals = append(apVals, fmt.Sprintf("(%d, 'a%d', %d, 'g%d')", id, id, -id, id))
	}
	c.mustExec("INSERT INTO j.pk VALUES " + strings.Join(pkVals, ", "))
	c.mustExec("INSERT INTO j.pk VALUES (3, 'again', 33)") // an update waiting in the log too
	c.mustExec("INSERT INTO j.ap VALUES " + strings.Join(apVals, ", "))
	// flightd has the tables' schemas cached before Java changes them.
	require.Equal(t, "20", c.scalar(`SELECT count(*) FROM j."pk$rt"`))
	require.Equal(t, "20", c.scalar(`SELECT count(*) FROM j."ap$rt"`))
	require.Equal(t, "0", c.scalar(`SELECT count(*) FROM j.pk`), "rows wait in the log")

	mustJava(t, jar, "alter", wh, "j.pk", "add:e:STRING;rename:name:name2;type:n:BIGINT")
	mustJava(t, jar, "alter", wh, "j.ap", "add:e:STRING;rename:name:name2;type:n:BIGINT;drop:gone")

	// The next statement sees Java's schema; the log's rows are read under it.
	pk := c.mustTyped(`SELECT * FROM j."pk$rt"`)
	require.Equal(t, []string{"id", "name2", "n", "e"}, pk.names)
	require.Equal(t, arrow.PrimitiveTypes.Int64, pk.types[2], "n is BIGINT now")
	require.Len(t, pk.rows, 20)
	require.Contains(t, pk.rows, "3|again|33|NULL")
	require.Contains(t, pk.rows, "19|n19|18993|NULL")
	ap := c.mustTyped(`SELECT * FROM j."ap$rt"`)
	require.Equal(t, []string{"id", "name2", "n", "e"}, ap.names)
	require.Contains(t, ap.rows, "7|a7|-7|NULL")
	require.Equal(t, "20", c.scalar(`SELECT count(*) FROM j."ap$rt" WHERE e IS NULL`))

	// The widened column takes a BIGINT value now, without a restart.
	c.mustExec("INSERT INTO j.pk VALUES (100, 'big', 5000000000, 'e100')")
	c.mustExec("INSERT INTO j.ap (id, name2, n, e) VALUES (100, 'big', 5000000000, 'e100')")
	require.Equal(t, "5000000000", c.scalar(`SELECT n FROM j."pk$rt" WHERE id = 100`))
	pkBefore := c.mustTyped(`SELECT * FROM j."pk$rt"`).rows
	apBefore := c.mustTyped(`SELECT * FROM j."ap$rt"`).rows
	require.Len(t, pkBefore, 21)
	require.Len(t, apBefore, 21)

	// Tiering moves the rows written under both schemas (in this process:
	// its table cache had the old schema).
	c.mustExec("ALTER TABLE j.pk SET ('lakestream.freshness' = '1s')")
	waitTiered(t, c, "j", "pk", 21)
	require.Equal(t, pkBefore, c.mustTyped("SELECT * FROM j.pk").rows, "t after tiering equals t$rt before")
	requireSameRows(t, c, jar, wh, "j.pk")

	// A restart with the append table's rows still in the log: t$rt reads
	// them (no panic), and the first round after the start tiers them.
	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	require.Equal(t, apBefore, c.mustTyped(`SELECT * FROM j."ap$rt"`).rows)
	require.Equal(t, pkBefore, c.mustTyped(`SELECT * FROM j."pk$rt"`).rows)
	waitTiered(t, c, "j", "ap", 21)
	require.Equal(t, apBefore, c.mustTyped("SELECT * FROM j.ap").rows, "t after tiering equals t$rt before")
	requireSameRows(t, c, jar, wh, "j.ap")

	// An option Java sets is seen by the next statement too: with the log
	// switched off (everything is tiered), t$rt is gone and a write commits
	// to the lake at once.
	mustJava(t, jar, "alter", wh, "j.ap", "set:lakestream.enabled=false")
	_, err := c.query(`SELECT count(*) FROM j."ap$rt"`)
	require.ErrorContains(t, err, "lakestream.enabled")
	c.mustExec(`INSERT INTO j.ap (id, n) VALUES (200, 6000000000)`)
	require.Equal(t, "22", c.scalar(`SELECT count(*) FROM j.ap`))
	requireSameRows(t, c, jar, wh, "j.ap")
}
