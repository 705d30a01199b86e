package lake

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// An empty manifest list (an offset-only commit has one) and an empty
// manifest are decoded once, like any other: planning must not parse their
// Avro headers on every scan.
func TestEmptyManifestsAreCached(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	list, err := manifest.EncodeList(nil)
	require.NoError(t, err)
	man, err := manifest.Encode(nil)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(tb.osPath(tb.manifestPath("")), 0o755))
	require.NoError(t, os.WriteFile(tb.osPath(tb.manifestPath("manifest-list-empty")), list, 0o644))
	require.NoError(t, os.WriteFile(tb.osPath(tb.manifestPath("manifest-empty")), man, 0o644))

	for i := 0; i < 2; i++ {
		metas, err := tb.readManifestList(ctx, "manifest-list-empty")
		require.NoError(t, err)
		require.Empty(t, metas)
		entries, err := tb.readManifest(ctx, "manifest-empty")
		require.NoError(t, err)
		require.Empty(t, entries)
		if i == 0 {
			// gone from disk: the second round must be served from the cache
			require.NoError(t, os.Remove(tb.osPath(tb.manifestPath("manifest-list-empty"))))
			require.NoError(t, os.Remove(tb.osPath(tb.manifestPath("manifest-empty"))))
		}
	}
}
