package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestJavaReadsRenamedTableWithWidenedNestedField: a table with a ROW
// column gets rows in the lake, a nested field widened (r.x INT to
// BIGINT), more rows that wait in the log, and then ALTER TABLE ...
// RENAME TO. The new name serves every row (u$rt at once, u after the
// next round), the old one is NOT_FOUND, tiering commits the log's rows
// into the new directory, and Java Paimon reads the renamed table with
// the rows flightd serves (the nested field as BIGINT in old files too).
func TestJavaReadsRenamedTableWithWidenedNestedField(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir, "--tiering-interval", "1h")
	c := connect(t, srv)

	c.mustExec("CREATE DATABASE j")
	c.mustExec("CREATE TABLE j.t (id BIGINT, r ROW<x INT, s STRING>, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'lakestream.freshness' = '1s')")
	var first, second []string
	for id := 0; id < 10; id++ {
		first = append(first, fmt.Sprintf("(%d, {'x': %d, 's': 's%d'})", id, id*100-7, id))
		second = append(second, fmt.Sprintf("(%d, {'x': %d, 's': 't%d'})", 10+id, 5000000000+id, id))
	}
	c.mustExec("INSERT INTO j.t VALUES " + strings.Join(first, ", "))
	waitTiered(t, c, "j", "t", 10)
	c.mustExec("ALTER TABLE j.t SET ('lakestream.freshness' = '1h')")
	c.mustExec("ALTER TABLE j.t ALTER COLUMN r.x TYPE BIGINT")
	_, err := c.query("ALTER TABLE j.t ALTER COLUMN r.x TYPE INT")
	require.ErrorContains(t, err, `"r.x" cannot change from BIGINT to INT`)
	c.mustExec("INSERT INTO j.t VALUES " + strings.Join(second, ", ")) // only in the log
	c.mustExec("INSERT INTO j.t VALUES (3, {'x': 3, 's': 'again'})")
	before := c.mustTyped(`SELECT * FROM j."t$rt"`).rows
	require.Len(t, before, 20)
	require.Contains(t, before, "3|(x: 3, s: again)")
	require.Contains(t, before, "19|(x: 5000000009, s: t9)")
	require.Equal(t, "10", c.scalar("SELECT count(*) FROM j.t"), "the second batch waits in the log")

	c.mustExec("ALTER TABLE j.t RENAME TO u")
	require.Equal(t, before, c.mustTyped(`SELECT * FROM j."u$rt"`).rows)
	require.Equal(t, "10", c.scalar("SELECT count(*) FROM j.u"))
	for _, q := range []string{"SELECT * FROM j.t", `SELECT * FROM j."t$rt"`, "INSERT INTO j.t VALUES (99, NULL)"} {
		_, err := c.query(q)
		require.ErrorContains(t, err, "not found", q)
		require.ErrorContains(t, err, "j.t", q)
	}
	_, err = c.query("ALTER TABLE j.u RENAME TO u")
	require.ErrorContains(t, err, "rename table j.u to j.u")
	_, err = javaRead(jar, wh, "j.t")
	require.Error(t, err, "Java finds no table j.t")

	c.mustExec("ALTER TABLE j.u SET ('lakestream.freshness' = '1s')")
	waitTiered(t, c, "j", "u", 20)
	require.Equal(t, before, c.mustTyped("SELECT * FROM j.u").rows, "u after tiering equals t$rt before the rename")
	require.Equal(t, "5000000009", c.scalar("SELECT r.x FROM j.u WHERE id = 19"))
	requireSameRows(t, c, jar, wh, "j.u")
}
