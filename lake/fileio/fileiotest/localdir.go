package fileiotest

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers for the confinement tests of a local root: what lies beside it on disk.

// FilesUnder lists the files below root, relative to it, sorted.
func FilesUnder(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	}))
	sort.Strings(out)
	return out
}

// Entries lists the names in dir, sorted.
func Entries(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// OutsideDir makes <dir>/outside, beside a root in dir, holding secret ("s") and x/keep, and
// returns a check that it still holds exactly that.
func OutsideDir(t testing.TB, dir string) (path string, unchanged func()) {
	t.Helper()
	out := filepath.Join(dir, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(out, "x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "x", "keep"), []byte("k"), 0o644))
	return out, func() {
		t.Helper()
		require.Equal(t, []string{"secret", "x/keep"}, FilesUnder(t, out), "the directory outside")
		got, err := os.ReadFile(filepath.Join(out, "secret"))
		require.NoError(t, err)
		require.Equal(t, "s", string(got))
	}
}
