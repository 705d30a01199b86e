package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// rowsAsMaps runs sql through ADBC and returns its rows by column name:
// nil, int64, string, or a time.Time in UTC for a timestamp.
func (c *client) rowsAsMaps(sql string) []map[string]any {
	c.t.Helper()
	st, err := c.conn.NewStatement()
	require.NoError(c.t, err)
	defer st.Close()
	require.NoError(c.t, st.SetSqlQuery(sql))
	r, _, err := st.ExecuteQuery(context.Background())
	require.NoError(c.t, err, sql)
	defer r.Release()
	var out []map[string]any
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			m := map[string]any{}
			for j, f := range rec.Schema().Fields() {
				col := rec.Column(j)
				switch {
				case col.IsNull(i):
					m[f.Name] = nil
				case f.Type.ID() == arrow.INT64:
					m[f.Name] = col.(*array.Int64).Value(i)
				case f.Type.ID() == arrow.INT32:
					m[f.Name] = int64(col.(*array.Int32).Value(i))
				case f.Type.ID() == arrow.STRING:
					m[f.Name] = col.(*array.String).Value(i)
				case f.Type.ID() == arrow.TIMESTAMP:
					unit := f.Type.(*arrow.TimestampType).Unit
					m[f.Name] = col.(*array.Timestamp).Value(i).ToTime(unit).UTC()
				default:
					c.t.Fatalf("%s: column %s of type %s", sql, f.Name, f.Type)
				}
			}
			out = append(out, m)
		}
	}
	require.NoError(c.t, r.Err())
	return out
}

// javaValue is a PaimonCheck JSON value in rowsAsMaps' terms: a number as
// int64, a TIMESTAMP(3) (a local date-time, the JVM in UTC) as a time.
func javaValue(t *testing.T, v any, timestamp bool) any {
	t.Helper()
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		require.NoError(t, err)
		return n
	case string:
		if timestamp {
			ts, err := time.Parse("2006-01-02T15:04:05.999999999", x)
			require.NoError(t, err)
			return ts.UTC()
		}
	}
	return v
}

// TestSystemTablesMatchJavaPaimon: t$snapshots, t$schemas and t$options
// answered NOT_FOUND. They hold what Java Paimon's system tables hold, for
// snapshots flightd and Java committed and schemas both wrote.
func TestSystemTablesMatchJavaPaimon(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE x")
	c.mustExec("CREATE TABLE x.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'x.y' = 'z')")
	c.mustExec("INSERT INTO x.t VALUES (1, 'a'), (2, 'b')")
	waitTiered(t, c, "x", "t", 2)
	javaWrite(t, jar, wh, "x.t", map[string]any{"id": 3, "v": "java"})
	c.mustExec("ALTER TABLE x.t SET ('snapshot.num-retained.min' = '20')")
	c.mustExec("INSERT INTO x.t VALUES (4, 'd')")
	waitTiered(t, c, "x", "t", 4)

	compare := func(suffix, key string, timestamps ...string) {
		t.Helper()
		ts := map[string]bool{}
		for _, c := range timestamps {
			ts[c] = true
		}
		java, err := javaRead(jar, wh, "x.t"+suffix)
		require.NoError(t, err)
		ours := c.rowsAsMaps(fmt.Sprintf(`SELECT * FROM x."t%s"`, suffix))
		require.Len(t, ours, len(java), suffix)
		byKey := map[any]map[string]any{}
		for _, r := range ours {
			byKey[r[key]] = r
		}
		for _, jr := range java {
			k := javaValue(t, jr[key], false)
			r, ok := byKey[k]
			require.True(t, ok, "%s: Java has %s=%v, flightd does not", suffix, key, k)
			require.Len(t, r, len(jr), "%s: columns %v vs Java's %v", suffix, r, jr)
			for col, jv := range jr {
				want := javaValue(t, jv, ts[col])
				got, ok := r[col]
				require.True(t, ok, "%s: no column %s", suffix, col)
				if col == "options" { // a JSON object: the same entries, in any order
					var a, b map[string]string
					require.NoError(t, json.Unmarshal([]byte(want.(string)), &a))
					require.NoError(t, json.Unmarshal([]byte(got.(string)), &b))
					require.Equal(t, a, b, "%s %v: options", suffix, k)
					continue
				}
				require.Equal(t, want, got, "%s %v: column %s", suffix, k, col)
			}
		}
	}
	compare("$snapshots", "snapshot_id", "commit_time")
	compare("$schemas", "schema_id", "update_time")
	compare("$options", "key")
	require.GreaterOrEqual(t, len(c.rowsAsMaps(`SELECT * FROM x."t$snapshots"`)), 3)
	require.Len(t, c.rowsAsMaps(`SELECT * FROM x."t$schemas"`), 2)

	// Read-only, and only of tables that exist.
	_, err := c.exec(`INSERT INTO x."t$options" VALUES ('a', 'b')`)
	require.ErrorContains(t, err, "read-only system table")
	_, err = c.exec(`CREATE TABLE x."u$snapshots" (a INT)`)
	require.ErrorContains(t, err, "may not end in")
	_, err = c.query(`SELECT * FROM x."nope$schemas"`)
	require.ErrorContains(t, err, "neither does its system table")

	// Time travel reads what Java reads at each snapshot, by id and by
	// commit time, and the option another engine set is honoured as Java
	// honours it (it was refused before, and ignored before that).
	pairs := func(rows []map[string]any) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%v=%v", javaValue(t, r["id"], false), r["v"]))
		}
		sort.Strings(out)
		return out
	}
	snaps := c.rowsAsMaps(`SELECT snapshot_id, commit_time FROM x."t$snapshots" ORDER BY snapshot_id`)
	for _, sn := range snaps {
		id := sn["snapshot_id"].(int64)
		mustJava(t, jar, "alter", wh, "x.t", fmt.Sprintf("set:scan.snapshot-id=%d", id))
		java, err := javaRead(jar, wh, "x.t")
		require.NoError(t, err)
		want := pairs(java)
		require.Equal(t, want, pairs(c.rowsAsMaps(fmt.Sprintf(`SELECT id, v FROM x.t AT (VERSION => %d)`, id))), "snapshot %d", id)
		require.Equal(t, want, pairs(c.rowsAsMaps(`SELECT id, v FROM x.t`)), "snapshot %d set by Java's option", id)
		ms := sn["commit_time"].(time.Time).UnixMilli()
		mustJava(t, jar, "alter", wh, "x.t", fmt.Sprintf("reset:scan.snapshot-id;set:scan.timestamp-millis=%d", ms))
		java, err = javaRead(jar, wh, "x.t")
		require.NoError(t, err)
		require.Equal(t, pairs(java), pairs(c.rowsAsMaps(fmt.Sprintf(`SELECT id, v FROM x.t AT (TIMESTAMP => '%s')`, sn["commit_time"].(time.Time).Format("2006-01-02 15:04:05.000")))), "time of snapshot %d", id)
		require.Equal(t, pairs(java), pairs(c.rowsAsMaps(`SELECT id, v FROM x.t`)), "time of snapshot %d set by Java's option", id)
		mustJava(t, jar, "alter", wh, "x.t", "reset:scan.timestamp-millis")
	}
	_, err = c.query(`SELECT count(*) FROM x."t$rt" AT (VERSION => 1)`)
	require.ErrorContains(t, err, "no history")
}

// TestTimeTravelAcrossSchemaChangesMatchesJava: every snapshot of a table
// whose columns were added, renamed, widened and dropped between commits
// reads through flightd's AT (VERSION => n) with exactly the columns and
// values Java Paimon reads at scan.snapshot-id = n: the snapshot's own
// schema, the dropped column's values included.
func TestTimeTravelAcrossSchemaChangesMatchesJava(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE x")
	c.mustExec("CREATE TABLE x.t (id BIGINT, v STRING, d STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("INSERT INTO x.t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
	waitTiered(t, c, "x", "t", 2)
	c.mustExec("ALTER TABLE x.t ADD COLUMN w INT")
	c.mustExec("INSERT INTO x.t VALUES (3, 'c', 'z', 7), (1, 'a2', 'x2', 8)")
	waitTiered(t, c, "x", "t", 3)
	c.mustExec("ALTER TABLE x.t RENAME COLUMN v TO v2")
	c.mustExec("ALTER TABLE x.t ALTER COLUMN w TYPE BIGINT")
	c.mustExec("ALTER TABLE x.t DROP COLUMN d")
	c.mustExec("INSERT INTO x.t VALUES (4, 'd', 9000000000)")
	waitTiered(t, c, "x", "t", 4)

	snaps := c.rowsAsMaps(`SELECT snapshot_id, schema_id FROM x."t$snapshots" ORDER BY snapshot_id`)
	schemas := map[int64]bool{}
	for _, sn := range snaps {
		id := sn["snapshot_id"].(int64)
		schemas[sn["schema_id"].(int64)] = true
		mustJava(t, jar, "alter", wh, "x.t", fmt.Sprintf("set:scan.snapshot-id=%d", id))
		java, err := javaRead(jar, wh, "x.t")
		require.NoError(t, err)
		mustJava(t, jar, "alter", wh, "x.t", "reset:scan.snapshot-id")
		ours := c.rowsAsMaps(fmt.Sprintf(`SELECT * FROM x.t AT (VERSION => %d)`, id))
		require.Len(t, ours, len(java), "snapshot %d", id)
		byID := map[int64]map[string]any{}
		for _, r := range ours {
			byID[r["id"].(int64)] = r
		}
		for _, jr := range java {
			k := javaValue(t, jr["id"], false).(int64)
			r, ok := byID[k]
			require.True(t, ok, "snapshot %d: Java has id %d, flightd does not", id, k)
			require.Len(t, r, len(jr), "snapshot %d: columns %v vs Java's %v", id, r, jr)
			for col, jv := range jr {
				got, ok := r[col]
				require.True(t, ok, "snapshot %d: flightd has no column %s (Java's row %v)", id, col, jr)
				require.Equal(t, javaValue(t, jv, false), got, "snapshot %d id %d: column %s", id, k, col)
			}
		}
	}
	require.GreaterOrEqual(t, len(schemas), 3, "the snapshots span several schemas")
}

// TestJavaReadsColumnsFlightdAdded: a column ADD COLUMN put first and one
// put last read in Java Paimon as flightd reads them: null in the rows
// tiered before the change, values in those written after; a column
// renamed keeps its values, one dropped is gone.
func TestJavaReadsColumnsFlightdAdded(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE x")
	c.mustExec("CREATE TABLE x.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("INSERT INTO x.t VALUES (1, 'a'), (2, 'b')")
	waitTiered(t, c, "x", "t", 2)
	c.mustExec("INSERT INTO x.t VALUES (3, 'c')") // in the log under the first schema
	c.mustExec("ALTER TABLE x.t ADD COLUMN w INT")
	c.mustExec("ALTER TABLE x.t ADD COLUMN z STRING FIRST")
	c.mustExec("INSERT INTO x.t (id, v, w, z) VALUES (4, 'd', 40, 'zz'), (2, 'b2', 20, NULL)")
	waitTiered(t, c, "x", "t", 4)
	rows, err := javaRead(jar, wh, "x.t")
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprint(r["z"], "|", r["id"], "|", r["v"], "|", r["w"]))
	}
	require.ElementsMatch(t, []string{"<nil>|1|a|<nil>", "<nil>|2|b2|20", "<nil>|3|c|<nil>", "zz|4|d|40"}, got)
	require.Equal(t, [][]string{{"z"}, {"id"}, {"v"}, {"w"}}, c.mustQuery(`SELECT column_name FROM (DESCRIBE SELECT * FROM x.t)`))

	// A renamed column keeps its values; a dropped one is gone, for Java too.
	c.mustExec("INSERT INTO x.t (id, v, w) VALUES (5, 'e', 50)") // in the log under the last schema
	c.mustExec("ALTER TABLE x.t RENAME COLUMN v TO name")
	c.mustExec("ALTER TABLE x.t DROP COLUMN w")
	waitTiered(t, c, "x", "t", 5)
	rows, err = javaRead(jar, wh, "x.t")
	require.NoError(t, err)
	got = nil
	for _, r := range rows {
		_, hasW := r["w"]
		require.False(t, hasW, "w was dropped: %v", r)
		got = append(got, fmt.Sprint(r["z"], "|", r["id"], "|", r["name"]))
	}
	require.ElementsMatch(t, []string{"<nil>|1|a", "<nil>|2|b2", "<nil>|3|c", "zz|4|d", "<nil>|5|e"}, got)

	// A column widened: Java reads the INT written before as BIGINT.
	c.mustExec("ALTER TABLE x.t ADD COLUMN n INT")
	c.mustExec("INSERT INTO x.t (id, name, n) VALUES (6, 'f', 7)")
	waitTiered(t, c, "x", "t", 6)
	c.mustExec("ALTER TABLE x.t ALTER COLUMN n TYPE BIGINT")
	c.mustExec("INSERT INTO x.t (id, name, n) VALUES (7, 'g', 9000000000)")
	waitTiered(t, c, "x", "t", 7)
	rows, err = javaRead(jar, wh, "x.t")
	require.NoError(t, err)
	ns := map[string]string{}
	for _, r := range rows {
		ns[fmt.Sprint(r["id"])] = fmt.Sprint(r["n"])
	}
	require.Equal(t, "7", ns["6"])
	require.Equal(t, "9000000000", ns["7"])
	require.Equal(t, "<nil>", ns["1"])
}

// TestFileSystemTablesMatchJavaPaimon: t$files, t$manifests, t$partitions
// and t$buckets answered NOT_FOUND. They hold what Java Paimon's hold, for
// a partitioned and an unpartitioned table with files of several levels,
// rendered as Java renders keys, statistics and partitions; file_path is
// relative to the warehouse (Java shows its full path).
func TestFileSystemTablesMatchJavaPaimon(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE x")
	c.mustExec("CREATE TABLE x.p (id BIGINT, dt DATE, d DOUBLE, s STRING, ts TIMESTAMP(6), PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ('bucket' = '2')")
	c.mustExec("CREATE TABLE x.a (id BIGINT, n INT, f FLOAT, amount DECIMAL(10, 2))")
	c.mustExec("INSERT INTO x.p VALUES (1, DATE '2024-01-01', 1.5, 'a', TIMESTAMP '2024-01-01 10:00:00'), (2, DATE '2024-01-02', 12345678.25, NULL, TIMESTAMP '2024-01-02 10:00:00.123456'), (3, DATE '2024-01-01', -0.001, 'zz', NULL)")
	c.mustExec("INSERT INTO x.a VALUES (1, 7, 2.5, 10.25), (2, NULL, 1e10, -3.50)")
	waitTiered(t, c, "x", "p", 3)
	waitTiered(t, c, "x", "a", 2)
	c.mustExec("INSERT INTO x.p VALUES (1, DATE '2024-01-01', 2.5, 'b', TIMESTAMP '2024-01-01 11:00:00')")
	waitTiered(t, c, "x", "p", 3)
	javaWrite(t, jar, wh, "x.a", map[string]any{"id": 3, "n": 1, "f": 0.5, "amount": "1.00"})
	mustJava(t, jar, "compact", wh, "x.p") // top-level files, and the inputs deleted
	c.mustExec("INSERT INTO x.p VALUES (4, DATE '2024-01-02', 4, 'd', NULL)")
	waitTiered(t, c, "x", "p", 4)

	compare := func(table, suffix string, key func(map[string]any) string, times ...string) int {
		t.Helper()
		ts := map[string]bool{}
		for _, c := range times {
			ts[c] = true
		}
		java, err := javaRead(jar, wh, "x."+table+suffix)
		require.NoError(t, err)
		ours := c.rowsAsMaps(fmt.Sprintf(`SELECT * FROM x."%s%s"`, table, suffix))
		require.Len(t, ours, len(java), "%s%s", table, suffix)
		byKey := map[string]map[string]any{}
		for _, r := range ours {
			byKey[key(r)] = r
		}
		for _, jr := range java {
			k := key(jr)
			r, ok := byKey[k]
			require.True(t, ok, "%s%s: Java has %s, flightd does not (flightd: %v)", table, suffix, k, ours)
			require.Len(t, r, len(jr), "%s%s: columns %v vs Java's %v", table, suffix, r, jr)
			for col, jv := range jr {
				got, ok := r[col]
				require.True(t, ok, "%s%s: no column %s", table, suffix, col)
				if col == "file_path" {
					require.True(t, strings.HasSuffix(jv.(string), "/"+got.(string)), "%s%s: %s is not the end of Java's %s", table, suffix, got, jv)
					continue
				}
				require.Equal(t, javaValue(t, jv, ts[col]), got, "%s%s %s: column %s", table, suffix, k, col)
			}
		}
		return len(java)
	}
	// t$ro reads the top-level files only: not id 4, written after the
	// compaction, nor id 1's newer version.
	for _, table := range []string{"p", "a"} {
		java, err := javaRead(jar, wh, "x."+table+"$ro")
		require.NoError(t, err)
		var want []string
		for _, r := range java {
			want = append(want, fmt.Sprintf("%v/%v", r["id"], r["s"]))
		}
		var got []string
		for _, r := range c.rowsAsMaps(fmt.Sprintf(`SELECT id, %s AS s FROM x."%s$ro"`, map[string]string{"p": "s", "a": "NULL"}[table], table)) {
			got = append(got, fmt.Sprintf("%v/%v", r["id"], r["s"]))
		}
		sort.Strings(want)
		sort.Strings(got)
		require.Equal(t, want, got, table+"$ro")
	}
	require.Equal(t, "3", c.scalar(`SELECT count(*) FROM x."p$ro"`))

	// t$audit_log: each key's newest version with its stored kind, a
	// deleted key as -D until compaction drops it; +I in an append table.
	c.mustExec("INSERT INTO x.p VALUES (5, DATE '2024-01-02', 5, 'e', NULL)")
	waitTiered(t, c, "x", "p", 5)
	delSchema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "dt", Type: arrow.FixedWidthTypes.Date32},
		{Name: "_rowkind", Type: arrow.BinaryTypes.String}}, nil)
	del, _, err := array.RecordFromJSON(memory.DefaultAllocator, delSchema, strings.NewReader(`[{"id": 5, "dt": "2024-01-02", "_rowkind": "-D"}]`))
	require.NoError(t, err)
	_, err = c.ingest("x", "p", adbc.OptionValueIngestModeAppend, del)
	del.Release()
	require.NoError(t, err)
	waitTiered(t, c, "x", "p", 4)
	for _, table := range []string{"p", "a"} {
		java, err := javaRead(jar, wh, "x."+table+"$audit_log")
		require.NoError(t, err)
		var want []string
		for _, r := range java {
			want = append(want, fmt.Sprintf("%v %v", r["rowkind"], r["id"]))
		}
		var got []string
		for _, r := range c.rowsAsMaps(fmt.Sprintf(`SELECT rowkind, id FROM x."%s$audit_log"`, table)) {
			got = append(got, fmt.Sprintf("%v %v", r["rowkind"], r["id"]))
		}
		sort.Strings(want)
		sort.Strings(got)
		require.Equal(t, want, got, table+"$audit_log")

		// t$binlog: the same rows, each value in an array of one.
		java, err = javaRead(jar, wh, "x."+table+"$binlog")
		require.NoError(t, err)
		want = nil
		for _, r := range java {
			want = append(want, fmt.Sprintf("%v %v", r["rowkind"], r["id"]))
		}
		got = nil
		for _, r := range c.mustQuery(fmt.Sprintf(`SELECT rowkind, id::VARCHAR FROM x."%s$binlog"`, table)) {
			got = append(got, r[0]+" "+r[1])
		}
		sort.Strings(want)
		sort.Strings(got)
		require.Equal(t, want, got, table+"$binlog")
	}
	require.Contains(t, c.scalar(`SELECT rowkind FROM x."p$audit_log" WHERE id = 5`), "-D")
	base := func(r map[string]any) string { return filepath.Base(fmt.Sprint(r["file_path"])) }
	levels := c.rowsAsMaps(`SELECT DISTINCT level FROM x."p$files" ORDER BY level`)
	require.Len(t, levels, 2, "files of level 0 and of the top level")
	for _, table := range []string{"p", "a"} {
		require.Positive(t, compare(table, "$files", base, "creation_time"))
		compare(table, "$manifests", func(r map[string]any) string { return fmt.Sprint(r["file_name"]) })
		compare(table, "$partitions", func(r map[string]any) string { return fmt.Sprint(r["partition"]) }, "last_update_time")
		compare(table, "$buckets", func(r map[string]any) string {
			return fmt.Sprint(r["partition"], "/", javaValue(t, r["bucket"], false))
		}, "last_update_time")
	}
}
