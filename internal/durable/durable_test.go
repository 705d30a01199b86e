package durable

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordFS is the operating system's file system, recording directory syncs.
type recordFS struct{ synced []string }

func (r *recordFS) Stat(name string) (fs.FileInfo, error)     { return os.Stat(name) }
func (r *recordFS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (r *recordFS) SyncDir(dir string) error {
	r.synced = append(r.synced, dir)
	return SyncDir(dir)
}

// TestMkdirAllSyncsTheParentOfEveryDirectoryItCreated: a created
// directory's name is durable only once its parent is synced; existing
// directories are left alone.
func TestMkdirAllSyncsTheParentOfEveryDirectoryItCreated(t *testing.T) {
	root := t.TempDir()
	r := &recordFS{}
	require.NoError(t, MkdirAll(r, filepath.Join(root, "a", "b", "c"), true))
	require.Equal(t, []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}, r.synced)
	require.DirExists(t, filepath.Join(root, "a", "b", "c"))

	r.synced = nil
	require.NoError(t, MkdirAll(r, filepath.Join(root, "a", "b", "c"), true))
	require.Empty(t, r.synced, "nothing created, nothing synced")

	require.NoError(t, MkdirAll(r, filepath.Join(root, "x"), false))
	require.Empty(t, r.synced, "without sync")

	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), nil, 0o644))
	require.ErrorContains(t, MkdirAll(r, filepath.Join(root, "f", "d"), true), "not a directory")
}
