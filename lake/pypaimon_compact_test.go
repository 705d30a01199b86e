package lake

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPypaimonReadsCompacted writes tiering-like commits, compacts, commits again on top, expires
// snapshots and has pypaimon read the table. It runs when $LAKE_PYPAIMON names a Python with
// pypaimon installed (e.g. .venv-paimon/bin/python after `make py-deps`).
func TestPypaimonReadsCompacted(t *testing.T) {
	t.Parallel()
	py := os.Getenv("LAKE_PYPAIMON")
	if py == "" {
		t.Skip("LAKE_PYPAIMON not set")
	}
	ctx := context.Background()
	c := newTestCatalog(t)
	tb := pkPartitionedTable(t, c, "pk", nil)
	m := newTierModel(tb, 7)
	for i := 0; i < 6; i++ {
		m.commit(t, 50, 40)
	}
	cs, err := tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: m.latest})
	require.NoError(t, err)
	require.NotNil(t, cs)
	m.latest = cs.ID
	read := func() []string {
		script := `
import sys, json
from pypaimon import CatalogFactory
cat = CatalogFactory.create({"warehouse": sys.argv[1]})
tb = cat.get_table("db.pk")
rb = tb.new_read_builder()
t = rb.new_read().to_arrow(rb.new_scan().plan().splits())
out = []
for r in t.to_pylist():
    out.append("%d,%s,%s" % (r["id"], "null" if r["name"] is None else r["name"], r["dt"]))
print(json.dumps(out))
`
		out, err := exec.Command(py, "-c", script, c.Warehouse()).CombinedOutput()
		require.NoError(t, err, string(out))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var rows []string
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &rows), string(out))
		sort.Strings(rows)
		return rows
	}
	require.Equal(t, m.expected(), read(), "after compaction")
	// level-0 files on top of the compacted level-5 files
	for i := 0; i < 2; i++ {
		m.commit(t, 30, 40)
	}
	require.Equal(t, m.expected(), read(), "level 0 over level 5")
	// merged manifests (more than merge-min-count commits), a second compaction, then expiry
	for i := 0; i < 35; i++ {
		m.commit(t, 5, 40)
	}
	cs, err = tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: m.latest})
	require.NoError(t, err)
	require.NotNil(t, cs)
	m.latest = cs.ID
	m.commit(t, 5, 40)
	n, err := tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 3, Now: time.Now().Add(2 * time.Hour)})
	require.NoError(t, err)
	require.Greater(t, n, 30)
	require.Equal(t, m.expected(), read(), "after manifest merging, compaction and expiry")
	t.Logf("pypaimon read %d rows of %s", len(m.expected()), filepath.Join(c.Warehouse(), "db.db", "pk"))
}
