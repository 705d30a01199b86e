package fileiotest

import (
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStrictMemKeepsOnlyWhatWasSynced pins the file system model the power-cut tests rely on.
func TestStrictMemKeepsOnlyWhatWasSynced(t *testing.T) {
	m := NewStrictMem()
	require.NoError(t, m.Mkdir("/d", 0o755))
	require.NoError(t, m.SyncDir("/"))
	write := func(name, data string, sync bool) {
		f, err := m.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		require.NoError(t, err)
		_, err = f.Write([]byte(data))
		require.NoError(t, err)
		if sync {
			require.NoError(t, f.Sync())
		}
		require.NoError(t, f.Close())
	}
	write("/d/unsynced-name", "x", true)
	write("/d/unsynced-data", "x", false)
	write("/d/kept", "abc", true)
	require.NoError(t, m.SyncDir("/d"))
	write("/d/late", "y", true)
	require.NoError(t, m.Link("/d/kept", "/d/link"))
	require.NoError(t, m.Remove("/d/unsynced-name"))
	require.NoError(t, m.Mkdir("/e", 0o755)) // never synced in /

	c := m.Crash()
	ents, err := c.ReadDir("/d")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, fmt.Sprintf("%s:%d", e.Name, e.Size))
	}
	require.Equal(t, []string{"kept:3", "unsynced-data:0", "unsynced-name:1"}, names)
	_, err = c.Stat("/e")
	require.ErrorIs(t, err, fs.ErrNotExist)

	// A cut makes the operation and all later ones fail without effect.
	m.CutAt(m.Ops())
	require.ErrorIs(t, m.SyncDir("/d"), ErrPowerCut)
	_, err = m.Stat("/d")
	require.ErrorIs(t, err, ErrPowerCut)
	ents, err = m.Crash().ReadDir("/d")
	require.NoError(t, err)
	require.Len(t, ents, 3)
}
