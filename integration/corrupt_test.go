package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestCorruptLakeFiles: a damaged data file or manifest of one table gives
// an error naming the table and the file; other tables keep serving, and
// the read rewrites nothing.
func TestCorruptLakeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	for _, tbl := range []string{"good", "bad_data", "bad_manifest"} {
		c.mustExec("CREATE TABLE " + tbl + " (id BIGINT, v STRING)")
		c.mustExec("INSERT INTO " + tbl + " VALUES (1, 'a'), (2, 'b')")
	}
	testserver.Eventually(t, 30*time.Second, func() error {
		for _, tbl := range []string{"good", "bad_data", "bad_manifest"} {
			if n := c.scalar("SELECT count(*) FROM " + tbl); n != "2" {
				return fmt.Errorf("%s has %s rows in the lake", tbl, n)
			}
		}
		return nil
	})
	tableDir := func(name string) string { return filepath.Join(dir, "warehouse", "default.db", name) }
	data, err := filepath.Glob(filepath.Join(tableDir("bad_data"), "bucket-0", "*.parquet"))
	require.NoError(t, err)
	require.NotEmpty(t, data)
	require.NoError(t, os.WriteFile(data[0], []byte("not parquet at all"), 0o644))
	manifests, err := filepath.Glob(filepath.Join(tableDir("bad_manifest"), "manifest", "manifest-*"))
	require.NoError(t, err)
	var victim string
	for _, m := range manifests {
		if !strings.HasPrefix(filepath.Base(m), "manifest-list-") {
			victim = m
		}
	}
	require.NotEmpty(t, victim)
	require.NoError(t, os.WriteFile(victim, []byte("garbage"), 0o644))
	// Manifests are immutable, so the server keeps them decoded once read:
	// damage done under a running server shows after a restart.
	srv.Restart(syscall.SIGTERM)
	c = connect(t, srv)

	_, err = c.query("SELECT * FROM bad_data")
	require.ErrorContains(t, err, "bad_data")
	require.ErrorContains(t, err, filepath.Base(data[0]))
	_, err = c.query("SELECT * FROM bad_manifest")
	require.ErrorContains(t, err, "bad_manifest")
	require.ErrorContains(t, err, filepath.Base(victim))
	require.Equal(t, "2", c.scalar("SELECT count(*) FROM good"), "other tables keep serving")
	got, err := os.ReadFile(data[0])
	require.NoError(t, err)
	require.Equal(t, "not parquet at all", string(got), "a read rewrites nothing")
}
