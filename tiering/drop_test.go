package tiering

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// DROP TABLE of an append table that staging was writing into answered
// "unlinkat .../bucket-0: directory not empty": a staged file was created
// while the table's directory was being removed. The drop now waits for
// the table's round or staging pass and aborts its staged round.
func TestDropTableWhileStagingLeavesNothing(t *testing.T) {
	e := open(t, t.TempDir()) // MaxRowsPerRound 50: a flush every 50 rows
	ctx := context.Background()
	write := func(name string, n int) {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(i)
		}
		rec := batch(ids, make([]string, n))
		defer rec.Release()
		_, err := e.ls.Write(ctx, "db", name, rec)
		require.NoError(t, err)
	}
	dir := filepath.Join(e.dir, "warehouse", "db.db", "ap")

	// A staged round is aborted by the drop, not left to a later pass.
	createTable(t, e, "ap", 0)
	write("ap", 120)
	e.tr.stage(ctx, "db", "ap")
	require.Len(t, dataFilesOnDisk(t, e, "ap"), 1)
	require.NoError(t, e.ls.DropTable(ctx, "db", "ap", false))
	e.tr.mu.Lock()
	_, staged := e.tr.staged[tableKey{"db", "ap"}]
	e.tr.mu.Unlock()
	require.False(t, staged, "the dropped table's staged round is gone")
	_, err := os.Stat(dir)
	require.True(t, os.IsNotExist(err), "the table's directory is gone: %v", err)

	// Drops racing staging passes: never an error, never a file left.
	for i := 0; i < 20; i++ {
		createTable(t, e, "ap", 0)
		write("ap", 120)
		var wg sync.WaitGroup
		start := make(chan struct{})
		var dropErr error
		wg.Add(2)
		go func() { defer wg.Done(); <-start; e.tr.stage(ctx, "db", "ap") }()
		go func() { defer wg.Done(); <-start; dropErr = e.ls.DropTable(ctx, "db", "ap", false) }()
		close(start)
		wg.Wait()
		require.NoError(t, dropErr, "round %d", i)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "round %d: the table's directory is gone: %v", i, err)
	}
}
