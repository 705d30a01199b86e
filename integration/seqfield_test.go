package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestSequenceFieldMatchesJavaPaimon checks 'sequence.field' both ways:
//
//   - Java Paimon writes a table whose versions arrive out of sequence
//     order (older values committed later, a null, deletes with smaller and
//     larger values, two versions of a key in one commit, a compaction in
//     between): flightd reads exactly Java's rows;
//   - flightd writes such a table (ascending and descending) through its
//     log: t$rt shows the model's rows before tiering, and after tiering the
//     lake, read by flightd and by Java, shows the same.
func TestSequenceFieldMatchesJavaPaimon(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	require.NoError(t, os.MkdirAll(wh, 0o755))

	mustJava(t, jar, "create", wh, "jx.sq", "id", "2", "id:BIGINT,v:STRING,ts:BIGINT", "", "sequence.field=ts")
	var first []map[string]any
	for id := 0; id < 20; id++ {
		first = append(first, map[string]any{"id": id, "v": fmt.Sprintf("a%d", id), "ts": 10})
	}
	javaWrite(t, jar, wh, "jx.sq", first...)
	var second []map[string]any
	for id := 0; id < 10; id++ { // older: they lose
		second = append(second, map[string]any{"id": id, "v": fmt.Sprintf("old%d", id), "ts": 5})
	}
	second = append(second,
		map[string]any{"id": 11, "v": "new11", "ts": 20},
		map[string]any{"id": 12, "v": "tie12", "ts": 10}, // a tie: the later arrival wins
		map[string]any{"id": 16, "v": "null16", "ts": nil},
		map[string]any{"id": 17, "v": "a17", "ts": 5, "_kind": "-D"},  // an older delete: ignored
		map[string]any{"id": 18, "v": "a18", "ts": 30, "_kind": "-D"}, // a newer delete
		map[string]any{"id": 19, "v": "first19", "ts": 13},
		map[string]any{"id": 19, "v": "second19", "ts": 12}, // same commit, older value
	)
	javaWrite(t, jar, wh, "jx.sq", second...)
	mustJava(t, jar, "compact", wh, "jx.sq")
	javaWrite(t, jar, wh, "jx.sq",
		map[string]any{"id": 11, "v": "old11", "ts": 19},
		map[string]any{"id": 18, "v": "late18", "ts": 29}, // older than its tombstone, if Java kept it
		map[string]any{"id": 20, "v": "a20", "ts": nil})

	srv := testserver.Start(t, dir, "--warehouse", wh)
	c := connect(t, srv)
	rows := requireSameRows(t, c, jar, wh, "jx.sq")
	require.Contains(t, rows, "0|a0|10")
	require.Contains(t, rows, "11|new11|20")
	require.Contains(t, rows, "12|tie12|10")
	require.Contains(t, rows, "16|a16|10")
	require.Contains(t, rows, "17|a17|10")
	require.Contains(t, rows, "19|first19|13")

	// Two sequence fields, compared in order (a null b loses to any b).
	mustJava(t, jar, "create", wh, "jx.sq2", "id", "1", "id:BIGINT,v:STRING,a:INT,b:STRING", "", "sequence.field=a,b")
	javaWrite(t, jar, wh, "jx.sq2",
		map[string]any{"id": 1, "v": "x1", "a": 2, "b": "m"},
		map[string]any{"id": 2, "v": "x2", "a": 2, "b": "m"},
		map[string]any{"id": 3, "v": "x3", "a": 2, "b": nil},
		map[string]any{"id": 4, "v": "x4", "a": nil, "b": "z"})
	javaWrite(t, jar, wh, "jx.sq2",
		map[string]any{"id": 1, "v": "y1", "a": 2, "b": "l"}, // a ties, b older: loses
		map[string]any{"id": 2, "v": "y2", "a": 2, "b": "n"}, // b newer: wins
		map[string]any{"id": 3, "v": "y3", "a": 2, "b": ""},  // any b beats a null
		map[string]any{"id": 4, "v": "y4", "a": 0, "b": nil}) // any a beats a null
	rows2 := requireSameRows(t, c, jar, wh, "jx.sq2")
	require.Equal(t, []string{"1|x1|2|m", "2|y2|2|n", "3|y3|2|", "4|y4|0|NULL"}, rows2)
	c.mustExec("CREATE DATABASE fs")
	c.mustExec("CREATE TABLE fs.sq2 (id BIGINT, v STRING, a INT, b STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'sequence.field' = 'a,b')")
	c.mustExec("INSERT INTO fs.sq2 VALUES (1, 'x1', 2, 'm'), (2, 'x2', 2, 'm'), (3, 'x3', 2, NULL), (4, 'x4', NULL, 'z')")
	waitTiered(t, c, "fs", "sq2", 4)
	c.mustExec("INSERT INTO fs.sq2 VALUES (1, 'y1', 2, 'l'), (2, 'y2', 2, 'n'), (3, 'y3', 2, ''), (4, 'y4', 0, NULL)")
	require.Equal(t, rows2, c.mustTyped(`SELECT * FROM fs."sq2$rt" ORDER BY id`).rows, "fs.sq2$rt")
	waitTiered(t, c, "fs", "sq2", 4)
	require.Equal(t, rows2, requireSameRows(t, c, jar, wh, "fs.sq2"))

	for _, order := range []string{"ascending", "descending"} {
		name := "fs.sq_" + order
		c.mustExec(fmt.Sprintf("CREATE TABLE %s (id BIGINT, v STRING, ts BIGINT, PRIMARY KEY (id) NOT ENFORCED) "+
			"WITH ('bucket' = '2', 'sequence.field' = 'ts', 'sequence.field.sort-order' = '%s')", name, order))
		model := map[int64][2]any{} // id -> v, ts (nil: null)
		newer := func(ts, old any) bool {
			switch {
			case ts == nil:
				return old == nil
			case old == nil:
				return true
			case order == "descending":
				return ts.(int64) <= old.(int64)
			}
			return ts.(int64) >= old.(int64)
		}
		insert := func(rows ...[3]any) {
			var vals []string
			for _, r := range rows {
				ts := "NULL"
				if r[2] != nil {
					ts = fmt.Sprint(r[2])
				}
				vals = append(vals, fmt.Sprintf("(%d, '%s', %s)", r[0], r[1], ts))
				id := r[0].(int64)
				if old, ok := model[id]; !ok || newer(r[2], old[1]) {
					model[id] = [2]any{r[1], r[2]}
				}
			}
			c.mustExec(fmt.Sprintf("INSERT INTO %s VALUES %s", name, strings.Join(vals, ", ")))
		}
		want := func() []string {
			var out []string
			for id, r := range model {
				ts := "NULL"
				if r[1] != nil {
					ts = fmt.Sprint(r[1])
				}
				out = append(out, fmt.Sprintf("%d|%s|%s", id, r[0], ts))
			}
			sort.Strings(out)
			return out
		}
		var batch [][3]any
		for id := int64(0); id < 12; id++ {
			batch = append(batch, [3]any{id, fmt.Sprintf("a%d", id), int64(10)})
		}
		insert(batch...)
		waitTiered(t, c, "fs", strings.TrimPrefix(name, "fs."), 12) // the first versions in the lake
		insert([3]any{int64(0), "b0", int64(5)}, [3]any{int64(1), "b1", int64(15)}, [3]any{int64(2), "b2", nil},
			[3]any{int64(3), "b3", int64(10)}, [3]any{int64(4), "b4", int64(7)}, [3]any{int64(4), "c4", int64(8)})
		insert([3]any{int64(1), "d1", int64(12)}, [3]any{int64(5), "d5", int64(1)}, [3]any{int64(20), "d20", nil})
		rt := c.mustTyped(fmt.Sprintf(`SELECT * FROM fs."%s$rt" ORDER BY id`, strings.TrimPrefix(name, "fs.")))
		got := append([]string(nil), rt.rows...)
		sort.Strings(got)
		require.Equal(t, want(), got, "%s$rt against the model", name)
		// Only the key projected: the merge still orders by ts.
		require.Equal(t, fmt.Sprint(len(model)), c.scalar(fmt.Sprintf(`SELECT count(id) FROM fs."%s$rt"`, strings.TrimPrefix(name, "fs."))))
		waitTiered(t, c, "fs", strings.TrimPrefix(name, "fs."), len(model))
		lakeRows := requireSameRows(t, c, jar, wh, name)
		sorted := append([]string(nil), lakeRows...)
		sort.Strings(sorted)
		require.Equal(t, want(), sorted, "%s: the lake after tiering, as flightd and Java read it", name)
	}

	_, err := c.exec("CREATE TABLE fs.bad (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'sequence.field' = 'nope')")
	require.ErrorContains(t, err, `names no column "nope"`)
}
