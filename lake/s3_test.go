package lake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio/fileiotest"
	"github.com/flightd/flightd/lake/fileio/s3"
	"github.com/flightd/flightd/lake/paimontype"
)

// The lake on S3 only; the scenarios that run on both local disk and S3 are in
// backends_test.go, the S3 FileIO's own tests in package s3.

// TestS3Warehouse: a warehouse at a prefix of the bucket is named by its URL and holds its
// databases under the prefix; the bucket's root is a warehouse too; a missing bucket is an
// error naming it.
func TestS3Warehouse(t *testing.T) {
	ctx := context.Background()
	g := startVersityGW(t)
	fio := g.FileIO(t, nil)
	c, err := OpenCatalogFileIO(ctx, "/env/wh/", fio)
	require.NoError(t, err)
	require.Equal(t, "s3://"+vgwBucket+"/env/wh", c.Warehouse())
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	_, err = os.Stat(filepath.Join(g.Root, vgwBucket, "env", "wh", "db.db"))
	require.NoError(t, err)
	// The bucket root works as a warehouse too.
	c, err = OpenCatalogFileIO(ctx, "/", fio)
	require.NoError(t, err)
	require.Equal(t, "s3://"+vgwBucket, c.Warehouse())
	dbs, err := c.ListDatabases(ctx)
	require.NoError(t, err)
	require.Empty(t, dbs) // env/ is not a database

	other, err := s3.New(ctx, "no-such-bucket", g.Options())
	require.NoError(t, err)
	_, err = OpenCatalogFileIO(ctx, "/wh", other)
	require.Error(t, err)
	require.Contains(t, err.Error(), "no-such-bucket")
}

// TestS3BigTableFileMultipart: a data file larger than a part is uploaded in parts and
// scans back whole.
func TestS3BigTableFileMultipart(t *testing.T) {
	ctx := context.Background()
	g := startVersityGW(t)
	const partSize = 5 << 20 // the smallest S3 takes
	c, err := OpenCatalogFileIO(ctx, "/bigwh", g.FileIO(t, func(o *s3.Options) { o.PartSize = partSize }))
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	tb, err := c.CreateTable(ctx, "db", "big", paimontype.Schema{Columns: testCols, Options: map[string]string{"file.compression": "none"}}, false)
	require.NoError(t, err)
	const n = 120000
	rows := make([]row, n)
	noise := fileiotest.PseudoRandom(n*24, 11)
	for i := range rows {
		rows[i] = row{int64(i), sp(fmt.Sprintf("%x", noise[i*24:i*24+24])), "x"}
	}
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, rows, nil, nil)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	files, err := c.FileIO().List(ctx, filepath.Join(tb.Path(), "bucket-0"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Greater(t, files[0].Size, int64(partSize), "the data file took a multipart upload")
	got := scanAll(t, tb, s, []string{"id"})
	require.Len(t, got, n)
}
