package lake

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadForeignWarehouse reads db.pk from a warehouse written by another implementation (e.g.
// pypaimon) when LAKE_FOREIGN_WAREHOUSE is set, then commits on top of it.
func TestReadForeignWarehouse(t *testing.T) {
	wh := os.Getenv("LAKE_FOREIGN_WAREHOUSE")
	if wh == "" {
		t.Skip("LAKE_FOREIGN_WAREHOUSE not set")
	}
	ctx := context.Background()
	c, err := OpenCatalog(wh)
	require.NoError(t, err)
	tb, err := c.GetTable(ctx, "db", "pk")
	require.NoError(t, err)
	snap, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	rows := scanAll(t, tb, snap, nil)
	t.Logf("rows: %v", rows)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{3, sp("c-go"), "x"}, {1, nil, "x"}}, []RowKind{UpdateAfter, Delete}, []int64{1, 2})
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "go", Identifier: 1, ExpectedLatest: snap.ID})
	require.NoError(t, err)
	t.Logf("after go commit: %v", scanAll(t, tb, s, nil))
}
