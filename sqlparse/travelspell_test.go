package sqlparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var travelSpellTests = []struct {
	sql, want, err string
}{
	// Spark.
	{sql: "SELECT * FROM t VERSION AS OF 3", want: "SELECT * FROM t AT (VERSION => /* scan.version */ '3')"},
	{sql: "select * from s.t version as of 'my-tag' where id = 1", want: "select * from s.t AT (VERSION => /* scan.version */ 'my-tag') where id = 1"},
	{sql: "SELECT * FROM t VERSION AS OF 3 AS a JOIN u VERSION AS OF 4 b ON a.id = b.id", want: "SELECT * FROM t AS a AT (VERSION => /* scan.version */ '3') JOIN u b AT (VERSION => /* scan.version */ '4') ON a.id = b.id"},
	{sql: "SELECT * FROM t TIMESTAMP AS OF '2026-01-01 00:00:00'", want: "SELECT * FROM t AT (TIMESTAMP => '2026-01-01 00:00:00')"},
	{sql: "SELECT * FROM t TIMESTAMP AS OF TIMESTAMP '2026-01-01 00:00:00' x", want: "SELECT * FROM t x AT (TIMESTAMP => '2026-01-01 00:00:00')"},
	{sql: "SELECT * FROM t TIMESTAMP AS OF 1678883047", want: "SELECT * FROM t AT (TIMESTAMP => '2023-03-15 12:24:07.000+00:00')"},
	{sql: "SELECT * FROM a, b VERSION AS OF 2", want: "SELECT * FROM a, b AT (VERSION => /* scan.version */ '2')"},
	{sql: "SELECT * FROM (SELECT * FROM t VERSION AS OF 1) q", want: "SELECT * FROM (SELECT * FROM t AT (VERSION => /* scan.version */ '1')) q"},
	{sql: `SELECT * FROM "s"."t$x" VERSION AS OF 1;`, want: `SELECT * FROM "s"."t$x" AT (VERSION => /* scan.version */ '1');`},
	{sql: "INSERT INTO u SELECT * FROM t VERSION AS OF 1", want: "INSERT INTO u SELECT * FROM t AT (VERSION => /* scan.version */ '1')"},
	{sql: "FROM t VERSION AS OF 2 SELECT id", want: "FROM t AT (VERSION => /* scan.version */ '2') SELECT id"}, // DuckDB's FROM first
	// Flink.
	{sql: "SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2026-01-01 00:00:00'", want: "SELECT * FROM t AT (TIMESTAMP => '2026-01-01 00:00:00')"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='3') */", want: "SELECT * FROM t AT (VERSION => 3)"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id' = '3', 'scan.mode' = 'from-snapshot') */ AS a WHERE a.id > 1", want: "SELECT * FROM t AS a AT (VERSION => 3) WHERE a.id > 1"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.tag-name'='it''s') */", want: "SELECT * FROM t AT (VERSION => 'it''s')"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.version'='7') */", want: "SELECT * FROM t AT (VERSION => /* scan.version */ '7')"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.timestamp-millis'='1678883047123') */", want: "SELECT * FROM t AT (TIMESTAMP => '2023-03-15 12:24:07.123+00:00')"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.timestamp'='2026-01-01 00:00:00') */ JOIN u ON true", want: "SELECT * FROM t AT (TIMESTAMP => '2026-01-01 00:00:00') JOIN u ON true"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.mode'='latest') */", want: "SELECT * FROM t"},
	// Nothing to rewrite.
	{sql: "SELECT x::TIMESTAMP AS of FROM t", want: "SELECT x::TIMESTAMP AS of FROM t"},
	{sql: "SELECT 'VERSION AS OF 3' FROM t", want: "SELECT 'VERSION AS OF 3' FROM t"},
	{sql: "SELECT * FROM t AT (VERSION => 3)", want: "SELECT * FROM t AT (VERSION => 3)"},
	{sql: "SELECT /*+ hint */ 1", want: "SELECT /*+ hint */ 1"},
	{sql: "SELECT * FROM t 'unterminated", want: "SELECT * FROM t 'unterminated"},
	// Refused, naming what was wrong.
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.parallelism'='2') */", err: `option "scan.parallelism" is not one flightd applies`},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1', 'scan.tag-name'='x') */", err: "scan.snapshot-id and scan.tag-name each choose a snapshot"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='0') */", err: "a snapshot id is a positive integer"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1', 'scan.mode'='latest') */", err: `scan.mode = "latest" does not read one snapshot with scan.snapshot-id`},
	{sql: "SELECT * FROM t /*+ LOOKUP('table'='t') */", err: "only OPTIONS(...) hints"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */ VERSION AS OF 2", err: "both choose one"},
	{sql: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1'", want: "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1'"},
	{sql: "SELECT * FROM t VERSION AS OF 1.5", err: "a snapshot id is a positive integer"},
	{sql: "SELECT * FROM t VERSION AS OF x", err: "expected a snapshot id or a tag's name"},
	{sql: "SELECT * FROM o JOIN d FOR SYSTEM_TIME AS OF o.proc_time ON o.id = d.id", err: "no lookup joins"},
	{sql: "SELECT * FROM t TIMESTAMP AS OF now()", err: "expected a timestamp string or seconds since 1970"},
}

func TestRewriteTravels(t *testing.T) {
	for _, tc := range travelSpellTests {
		got, err := RewriteTravels(tc.sql)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.sql)
			require.Equal(t, tc.sql, got, tc.sql)
			continue
		}
		require.NoError(t, err, tc.sql)
		require.Equal(t, tc.want, got, tc.sql)
	}
}

func TestAsOfLooksForTheWords(t *testing.T) {
	for s, want := range map[string]bool{
		"t VERSION AS OF 3": true, "t as\n\tof": true, "AS OF": true,
		"SELECT 1 OFFSET 2": false, "alias of": false, "as offset": false, "hasof": false, "": false, "of": false,
	} {
		require.Equal(t, want, asOf(s), s)
	}
}
