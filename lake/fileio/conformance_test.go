package fileio_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
)

// TestLocalConformance runs the suite on the operating system's file system.
func TestLocalConformance(t *testing.T) {
	fileiotest.Run(t, fileiotest.Harness{Open: func(t *testing.T) (fileio.FileIO, string) {
		return fileio.Local{}, t.TempDir()
	}})
}

// TestRootedLocalConformance runs the suite on a Local confined to a directory, by
// descriptor (os.Root).
func TestRootedLocalConformance(t *testing.T) {
	fileiotest.Run(t, fileiotest.Harness{Open: func(t *testing.T) (fileio.FileIO, string) {
		root := filepath.Join(t.TempDir(), "wh")
		require.NoError(t, os.Mkdir(root, 0o755))
		return fileio.NewRooted(fileio.Local{}, root), ""
	}})
}

// TestStrictMemConformance runs the suite on the file system of the power-cut tests, as
// they use it: through a Local, and through a Local confined to a directory (by its text
// only: not the operating system's file system).
func TestStrictMemConformance(t *testing.T) {
	t.Run("Local", func(t *testing.T) {
		fileiotest.Run(t, fileiotest.Harness{Open: func(t *testing.T) (fileio.FileIO, string) {
			return fileio.Local{FS: fileiotest.NewStrictMem()}, "/d"
		}})
	})
	t.Run("Rooted", func(t *testing.T) {
		fileiotest.Run(t, fileiotest.Harness{Open: func(t *testing.T) (fileio.FileIO, string) {
			m := fileiotest.NewStrictMem()
			require.NoError(t, m.Mkdir("/parent", 0o755))
			require.NoError(t, m.Mkdir("/parent/wh", 0o755))
			return fileio.NewRooted(fileio.Local{FS: m}, "/parent/wh"), ""
		}})
	})
}
