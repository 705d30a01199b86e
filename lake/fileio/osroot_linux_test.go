package fileio_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
)

// TestSymlinkRacingIntoPathRefused swaps a directory of the root with a link to outside,
// atomically and over and over (RENAME_EXCHANGE), while files are read, created and listed
// through it: whatever the timing, nothing outside is read, created or changed.
func TestSymlinkRacingIntoPathRefused(t *testing.T) {
	ctx := context.Background()
	dir, fio := confined(t)
	wh := filepath.Join(dir, "wh")
	out, unchanged := fileiotest.OutsideDir(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(out, "probe"), []byte("outside"), 0o644))
	d := filepath.Join(wh, "db.db", "d")
	require.NoError(t, os.Mkdir(d, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "probe"), []byte("inside"), 0o644))
	other := filepath.Join(wh, "db.db", "other")
	require.NoError(t, os.Symlink(out, other))

	var stop atomic.Bool
	var swaps atomic.Int64
	var swapErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // d: the directory, the link, the directory, ...
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, other, unix.RENAME_EXCHANGE); err != nil {
				swapErr = err
				return
			}
			swaps.Add(1)
		}
	}()
	var readOutside, refused int
	for i := 0; i < 2000; i++ {
		// Errors other than a refusal are fine (a component that is a link one moment
		// and a directory the next is not a directory); reading outside is not.
		b, err := fio.Read(ctx, "db.db/d/probe")
		if err == nil && string(b) != "inside" {
			readOutside++
		}
		if errors.Is(err, fileio.ErrInvalidPath) {
			refused++
		}
		_ = fio.WriteAtomic(ctx, "db.db/d/new", []byte("w"))
		_ = fio.CreateExclusive(ctx, "db.db/d/excl", []byte("w"))
		_ = fio.Remove(ctx, "db.db/d/excl")
		_, _ = fio.List(ctx, "db.db/d")
	}
	stop.Store(true)
	wg.Wait()
	if errors.Is(swapErr, unix.EINVAL) || errors.Is(swapErr, unix.ENOSYS) {
		t.Skip("the file system cannot exchange two names")
	}
	require.NoError(t, swapErr)
	require.Zero(t, readOutside, "reads of the file outside")
	require.NoError(t, os.Remove(filepath.Join(out, "probe")))
	unchanged()
	t.Logf("%d swaps, %d of 2000 reads refused", swaps.Load(), refused)
}
