package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestJavaReadsWidenedElementsAndValues: flightd widens the elements of an
// ARRAY column and the values of a MAP column (ALTER COLUMN a.element,
// m.value) with rows in the lake and rows waiting in the log; then Java
// Paimon widens a field of the ROWs an ARRAY holds (ar.element.x, Java's
// own path) while rows still wait. flightd reads every row under the new
// types (t$rt at once, t after the next round), and Java reads exactly
// the rows flightd serves, old files included.
func TestJavaReadsWidenedElementsAndValues(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir, "--tiering-interval", "1h")
	c := connect(t, srv)

	c.mustExec("CREATE DATABASE j")
	c.mustExec(`CREATE TABLE j.t (id BIGINT, a ARRAY<INT>, m MAP<STRING, INT>, ar ARRAY<ROW<x INT, s STRING>>,
		PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'lakestream.freshness' = '1s')`)
	row := func(id int, x, rx int64) string {
		return fmt.Sprintf("(%d, [%d, NULL], MAP {'k%d': %d}, [{'x': %d, 's': 's%d'}, NULL])", id, x, id, -x, rx, id)
	}
	var first, second, third []string
	for id := 0; id < 10; id++ {
		first = append(first, row(id, int64(id*100-7), int64(id)))
		second = append(second, row(10+id, 2147483647-int64(id), -2147483648))
		third = append(third, row(20+id, 5000000000+int64(id), 2147483647)) // ar.element.x is INT still
	}
	for id := 5; id < 10; id++ {
		third[id] = row(20+id, 5000000000+int64(id), 6000000000+int64(id))
	}
	c.mustExec("INSERT INTO j.t VALUES " + strings.Join(first, ", "))
	waitTiered(t, c, "j", "t", 10)
	c.mustExec("ALTER TABLE j.t SET ('lakestream.freshness' = '1h')")
	c.mustExec("INSERT INTO j.t VALUES " + strings.Join(second, ", ")) // only in the log

	c.mustExec("ALTER TABLE j.t ALTER COLUMN a.element TYPE BIGINT")
	c.mustExec("ALTER TABLE j.t ALTER COLUMN m.value TYPE BIGINT")
	for q, says := range map[string]string{
		"ALTER TABLE j.t ALTER COLUMN a.element TYPE INT":     `"a.element" cannot change from BIGINT to INT`,
		"ALTER TABLE j.t ALTER COLUMN m.key TYPE STRING":      "whose keys keep their type",
		"ALTER TABLE j.t ALTER COLUMN a TYPE ARRAY<DOUBLE>":   "ALTER COLUMN a.element TYPE",
		"ALTER TABLE j.t ALTER COLUMN ar.element TYPE BIGINT": "cannot become BIGINT",
	} {
		_, err := c.query(q)
		require.ErrorContains(t, err, says, q)
	}
	c.mustExec("INSERT INTO j.t VALUES " + strings.Join(third[:5], ", ")) // in the log, the new schema

	// Java widens ar.element.x while rows of two schemas wait in the log.
	mustJava(t, jar, "alter", wh, "j.t", "type:ar.element.x:BIGINT")
	c.mustExec("INSERT INTO j.t VALUES " + strings.Join(third[5:], ", "))
	c.mustExec("INSERT INTO j.t VALUES " + row(3, 9000000000, 9000000000)) // an update of a tiered row
	rt := c.mustTyped(`SELECT * FROM j."t$rt"`)
	require.Equal(t, []string{"id", "a", "m", "ar"}, rt.names)
	var types []string
	for _, ty := range rt.types {
		types = append(types, ty.String())
	}
	require.Equal(t, []string{"int64", "list<element: int64, nullable>", "map<utf8, int64, items_nullable>",
		"list<element: struct<x: int64 nullable, s: utf8 nullable>, nullable>"}, types)
	before := rt.rows
	require.Len(t, before, 30)
	require.Contains(t, before, "1|[93, NULL]|{k1=-93}|[(x: 1, s: s1), NULL]")                              // the lake, schema 0
	require.Contains(t, before, "19|[2147483638, NULL]|{k19=-2147483638}|[(x: -2147483648, s: s19), NULL]") // the log, schema 0
	require.Contains(t, before, "22|[5000000002, NULL]|{k22=-5000000002}|[(x: 2147483647, s: s22), NULL]")  // the log, flightd's schema
	require.Contains(t, before, "27|[5000000007, NULL]|{k27=-5000000007}|[(x: 6000000007, s: s27), NULL]")  // Java's schema
	require.Contains(t, before, "3|[9000000000, NULL]|{k3=-9000000000}|[(x: 9000000000, s: s3), NULL]")     // an update, Java's schema
	require.Equal(t, "10", c.scalar("SELECT count(*) FROM j.t"), "the later rows wait in the log")
	// The lake's file of the first schema, under the last, in both.
	require.Contains(t, requireSameRows(t, c, jar, wh, "j.t"), "3|[293, NULL]|{k3=-293}|[(x: 3, s: s3), NULL]")

	c.mustExec("ALTER TABLE j.t SET ('lakestream.freshness' = '1s')")
	waitTiered(t, c, "j", "t", 30)
	require.Equal(t, before, c.mustTyped("SELECT * FROM j.t").rows, "t after tiering equals t$rt before")
	requireSameRows(t, c, jar, wh, "j.t")
}
