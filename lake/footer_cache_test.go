package lake

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// TestFooterCacheServesRepeatedOpens: a data file opened again is read with
// the footer decoded the first time (the same object), scans read the same
// rows with the cache as without it, and the cache stays within its bound.
func TestFooterCacheServesRepeatedOpens(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "2"}}, false)
	require.NoError(t, err)
	var snap *Snapshot
	for i := int64(1); i <= 3; i++ {
		w := tb.NewWrite(ctx)
		writeRows(t, w, tb, []row{{i, sp("a"), "x"}, {i + 10, sp("b"), "y"}}, []RowKind{Insert, Insert}, []int64{2 * i, 2*i + 1})
		snap, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: i, ExpectedLatest: i - 1})
		require.NoError(t, err)
	}
	saved := FooterCacheBytes
	defer func() { FooterCacheBytes = saved }()

	FooterCacheBytes = 0
	uncached := scanAll(t, tb, snap, nil)
	require.Len(t, uncached, 6)

	FooterCacheBytes = 32 << 20
	require.Equal(t, uncached, scanAll(t, tb, snap, nil))
	entries, _, err := tb.dataFiles(ctx, snap)
	require.NoError(t, err)
	r := &scanReader{t: tb}
	for _, e := range entries {
		g := &scanGroup{partition: e.Partition, bucket: e.Bucket}
		p, err := r.filePath(g, &e.File)
		require.NoError(t, err)
		md, ok := parquetFooters.get(p)
		require.True(t, ok, "footer of %s not cached after a scan", e.File.FileName)
		pf, err := openParquet(ctx, tb.fio, p, nil)
		require.NoError(t, err)
		require.Same(t, md, pf.pr.MetaData(), "%s: footer parsed again", e.File.FileName)
		pf.Close()
	}
	require.Equal(t, uncached, scanAll(t, tb, snap, nil))

	// A bound of about four footers keeps the cache within it.
	one := parquetFooters.order.Front().Value.(*lruItem[*metadata.FileMetaData]).size
	FooterCacheBytes = 4 * one
	small := newLRUCache[*metadata.FileMetaData](&FooterCacheBytes)
	for i, e := range entries {
		small.put(e.File.FileName, one, nil)
		require.LessOrEqual(t, small.size, FooterCacheBytes, "after %d footers", i+1)
	}
	require.Equal(t, min(len(entries), 4), small.order.Len())
}
