package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
)

// overwriting is a store that ignores conditional creates (as S3 servers
// without If-None-Match do): a create replaces what is there.
type overwriting struct{ fileio.FileIO }

func (o overwriting) CreateExclusive(ctx context.Context, path string, data []byte) error {
	return o.WriteAtomic(ctx, path, data)
}

// TestNodesRefuseAStoreWithoutConditionalWrites: several nodes need the
// store to refuse a second create of one object (the only fence between
// two snapshot commits); a store that lets it through is refused with a
// message that says so, and the probe leaves nothing behind.
func TestNodesRefuseAStoreWithoutConditionalWrites(t *testing.T) {
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(dir)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, checkConditionalWrites(ctx, cat.FileIO(), dir, "n1"))
	err = checkConditionalWrites(ctx, overwriting{cat.FileIO()}, dir, "n1")
	require.ErrorContains(t, err, "does not honour conditional writes")
	left, err := cat.FileIO().List(ctx, "_flightd")
	require.NoError(t, err)
	require.Empty(t, left, "the probes are removed")
}
