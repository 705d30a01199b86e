package lakestream_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
)

// TestRenameTableHoldsTheDropGuard: the rename asks the table's background
// writer (tiering) to stop writing into the old directory before it moves,
// and lets it go once the table is under its new name.
func TestRenameTableHoldsTheDropGuard(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 0)
	createTable(t, e, "t", 2)
	var calls []string
	e.ls.SetDropGuard(func(db, name string) func() {
		_, err := e.cat.GetTable(ctx, "db", "t")
		require.NoError(t, err, "guarded before the directory moves")
		calls = append(calls, "guard "+db+"."+name)
		return func() {
			_, err := e.cat.GetTable(ctx, "db", "u")
			require.NoError(t, err, "released after the directory moved")
			calls = append(calls, "release")
		}
	})
	_, err := e.ls.Table(ctx, "db", "t") // cached
	require.NoError(t, err)
	require.NoError(t, e.ls.RenameTable(ctx, "db", "t", "db", "u"))
	require.Equal(t, []string{"guard db.t", "release"}, calls)
	_, err = e.ls.Table(ctx, "db", "t")
	require.ErrorIs(t, err, lake.ErrTableNotFound, "the cached metadata of the old name is gone")
	_, err = e.ls.Table(ctx, "db", "u")
	require.NoError(t, err)
}

// TestRenameTableRefusesWhatCannotFollow: a log named after the table (no
// lakestream.table-id: it would not follow the rename) and the read-only
// names are refused before anything moves.
func TestRenameTableRefusesWhatCannotFollow(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), 0)
	createTable(t, e, "t", 2)
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	_, err = e.cat.CreateTable(ctx, "db", "legacy", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}},
		Options: map[string]string{lakestream.OptionEnabled: "true"}}, false)
	require.NoError(t, err)
	err = e.ls.RenameTable(ctx, "db", "legacy", "db", "x")
	require.ErrorIs(t, err, lake.ErrUnsupported)
	require.ErrorContains(t, err, "rename table db.legacy: its log has no lakestream.table-id")
	err = e.ls.RenameTable(ctx, "db", "t$rt", "db", "x")
	require.ErrorIs(t, err, lake.ErrInvalidName)
	require.ErrorContains(t, err, "read-only view of table db.t")
	err = e.ls.RenameTable(ctx, "db", "t", "db", "x$changelog")
	require.ErrorIs(t, err, lake.ErrInvalidName)
	tables, err := e.ls.Tables(ctx, "db")
	require.NoError(t, err)
	require.Equal(t, []string{"legacy", "t"}, tables)
}
