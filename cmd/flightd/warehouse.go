package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/s3"
)

// metadataRefresh is how often a server over a warehouse in an object store checks, in the
// background, the latest snapshot and schema of the tables it reads: what another process
// commits is read within twice this (lake.Catalog.RefreshEvery).
const metadataRefresh = time.Second

// openWarehouse opens the lake's catalog at a warehouse URL: s3://bucket/path (or s3a://)
// through the S3 FileIO with opts, file:///path or a plain path on the local file system
// (opts unused). The S3 bucket must exist; the warehouse prefix is created (a marker object)
// if missing.
func openWarehouse(ctx context.Context, warehouse string, opts s3.Options) (*lake.Catalog, error) {
	if bucket, prefix, ok := s3.ParseURL(warehouse); ok {
		fio, err := s3.New(ctx, bucket, opts)
		if err != nil {
			return nil, err
		}
		return lake.OpenCatalogFileIO(ctx, "/"+prefix, fio)
	}
	if strings.HasPrefix(warehouse, "s3:") || strings.HasPrefix(warehouse, "s3a:") {
		return nil, fmt.Errorf("invalid S3 warehouse %q (want s3://bucket/path)", warehouse)
	}
	return lake.OpenCatalogFileIO(ctx, strings.TrimPrefix(warehouse, "file://"), fileio.Local{})
}
