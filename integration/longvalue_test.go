package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// A string over 1 MiB broke the table after the first tiering round: both
// t and t$rt failed with "decode manifest ...: avro: ReadBYTES: size is
// greater than Config.MaxByteSliceSize", and so did compaction. Rows with
// 1.06-1.4 MiB strings (over that limit, which is what broke; larger ones
// only cost time) in a primary-key table and an append table are tiered
// round by round until compaction has run, and t and t$rt give every value
// back (lengths and md5) after each round; a 1.1 MiB value is read whole.
func TestLongStringsAfterTieringAndCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE big")
	c.mustExec(`CREATE TABLE big.pk (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'lakestream.freshness' = '1s')`)
	c.mustExec(`CREATE TABLE big.ap (id BIGINT, s STRING) WITH ('lakestream.freshness' = '1s')`)
	compacted := func(table string) bool {
		snaps, _ := filepath.Glob(filepath.Join(dir, "warehouse", "big.db", table, "snapshot", "snapshot-*"))
		for _, p := range snaps {
			b, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(b), `"commitKind" : "COMPACT"`) {
				return true
			}
		}
		return false
	}
	size := func(r int) int { return 1<<20 + (1+r%6)<<16 }
	for _, table := range []string{"pk", "ap"} {
		var want []string
		rounds := 6 // a primary-key bucket is compacted at 5 files
		if table == "ap" {
			rounds = 10 // an append bucket at 10 small files
		}
		for r := 0; r < rounds; r++ {
			c.mustExec(fmt.Sprintf(`INSERT INTO big.%s SELECT %d, repeat('ab', %d) || '%d'`, table, r, size(r)/2, r))
			want = append(want, fmt.Sprintf("%d|%d", r, size(r)+1))
			q := `SELECT id, length(s), md5(s) = md5(repeat('ab', (length(s) - 1) // 2) || id::VARCHAR) FROM big.%s ORDER BY id`
			testserver.Eventually(t, 60*time.Second, func() error {
				rows, err := c.query(fmt.Sprintf(q, table))
				if err != nil {
					return err
				}
				if len(rows) != len(want) {
					return fmt.Errorf("%s has %d rows, want %d", table, len(rows), len(want))
				}
				return nil
			})
			for _, name := range []string{table, `"` + table + `$rt"`} {
				rows := c.mustQuery(fmt.Sprintf(q, name))
				var got []string
				for _, row := range rows {
					require.Equal(t, "true", row[2], "%s: the value of id %s", name, row[0])
					got = append(got, row[0]+"|"+row[1])
				}
				require.Equal(t, want, got, name)
			}
		}
		testserver.Eventually(t, 60*time.Second, func() error {
			if !compacted(table) {
				return fmt.Errorf("%s not compacted yet", table)
			}
			return nil
		})
		for _, name := range []string{table, `"` + table + `$rt"`} {
			require.Equal(t, fmt.Sprint(rounds), c.scalar(fmt.Sprintf(`SELECT count(*) FROM big.%s WHERE length(s) > %d`, name, 1<<20)), name)
			v := c.scalar(fmt.Sprintf(`SELECT s FROM big.%s WHERE id = 1`, name))
			require.Equal(t, strings.Repeat("ab", size(1)/2)+"1", v, name)
		}
	}
}
