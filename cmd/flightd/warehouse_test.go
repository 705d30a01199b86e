package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/s3"
)

// TestOpenWarehouse: a file:// URL or a plain path opens a local warehouse (confined to its
// directory by descriptor); an s3: URL that is not s3://bucket/path is refused.
func TestOpenWarehouse(t *testing.T) {
	ctx := context.Background()
	_, err := openWarehouse(ctx, "s3:/b/x", s3.Options{})
	require.ErrorContains(t, err, "s3://bucket/path")

	dir := t.TempDir()
	lc, err := openWarehouse(ctx, "file://"+dir, s3.Options{})
	require.NoError(t, err)
	require.Equal(t, dir, lc.Warehouse())
	lc, err = openWarehouse(ctx, filepath.Join(dir, "w2"), s3.Options{})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "w2"), lc.Warehouse())
	r, ok := lc.FileIO().(*fileio.Rooted)
	require.True(t, ok)
	_, isLocal := r.Unwrap().(fileio.Local)
	require.True(t, isLocal)
	require.DirExists(t, filepath.Join(dir, "w2"))
}
