package lakestream_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
)

func tableSchema(t *testing.T, opts map[string]string) paimontype.Schema {
	t.Helper()
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	str, err := paimontype.ParseType("STRING")
	require.NoError(t, err)
	return paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}, {Name: "v", Type: str}}, Options: opts}
}

// topLevel lists what lies in dir.
func topLevel(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// The attack: CREATE TABLE ... WITH ('data-file.prefix' = '../../../tmp/x-') made tiering
// write Parquet files with the client's rows outside the warehouse.
func TestDataFilePrefixCannotEscapeTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openEnv(t, dir, 0)
	require.NoError(t, e.ls.CreateDatabase(ctx, "db", false))
	before := topLevel(t, dir)

	for _, prefix := range []string{"../../../tmp/x-", "../x-", "a/b-", `..\x-`, "x\x00-"} {
		err := e.ls.CreateTable(ctx, "db", "t", tableSchema(t, map[string]string{"data-file.prefix": prefix}), false)
		require.ErrorIs(t, err, lakestream.ErrInvalidOption, "%q", prefix)
		require.ErrorContains(t, err, "data-file.prefix")
		require.ErrorContains(t, err, "db.t")
	}
	tables, err := e.ls.Tables(ctx, "db")
	require.NoError(t, err)
	require.Empty(t, tables)

	require.NoError(t, e.ls.CreateTable(ctx, "db", "t", tableSchema(t, nil), false))
	for k, v := range map[string]string{"data-file.prefix": "../../../tmp/x-", "changelog-file.prefix": "../c-",
		"data-file.path-directory": "../../d", "data-file.external-paths": "file:///tmp/ext", "branch": "../b"} {
		err := e.ls.AlterTableOptions(ctx, "db", "t", map[string]string{k: v})
		require.ErrorIs(t, err, lakestream.ErrInvalidOption, "%s", k)
		require.ErrorContains(t, err, k)
		require.ErrorContains(t, err, "db.t")
	}

	// Writes and tiering still land in the table.
	rec := dataBatch([]int64{1, 2, 3}, []string{"a", "b", "c"})
	_, err = e.ls.Write(ctx, "db", "t", rec)
	rec.Release()
	require.NoError(t, err)
	require.NoError(t, e.tr.Drain(ctx, "db", "t"))
	require.Equal(t, before, topLevel(t, dir), "nothing created beside the warehouse and the log")
	var parquet []string
	wh := filepath.Join(dir, "warehouse")
	require.NoError(t, filepath.WalkDir(wh, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(wh, p)
			parquet = append(parquet, filepath.ToSlash(rel))
		}
		return err
	}))
	require.NotEmpty(t, parquet)
	for _, p := range parquet {
		require.True(t, strings.HasPrefix(p, "db.db/t/bucket-0/data-"), p)
	}
}

func TestNameWithNULRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openEnv(t, dir, 0)
	err := e.ls.CreateDatabase(ctx, "a\x00b", false)
	require.ErrorIs(t, err, lake.ErrInvalidName)
	require.NotContains(t, err.Error(), "\x00")
	require.NoError(t, e.ls.CreateDatabase(ctx, "db", false))
	for _, n := range []string{"t\x00", "\x00/../../x", "../t", "a/b", ".", ""} {
		err := e.ls.CreateTable(ctx, "db", n, tableSchema(t, nil), false)
		require.ErrorIs(t, err, lake.ErrInvalidName, "%q", n)
	}
	dbs, err := e.ls.Databases(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"db"}, dbs)
	tables, err := e.ls.Tables(ctx, "db")
	require.NoError(t, err)
	require.Empty(t, tables)
}

func TestErrorsCarryNoAbsolutePaths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openEnv(t, dir, 0)
	createTable(t, e, "t", 0)
	rec := dataBatch([]int64{1, 2}, []string{"a", "b"})
	_, err := e.ls.Write(ctx, "db", "t", rec)
	rec.Release()
	require.NoError(t, err)
	require.NoError(t, e.tr.Drain(ctx, "db", "t"))

	// Lose the table's data files: the scan fails naming them inside the warehouse.
	wh := filepath.Join(dir, "warehouse")
	bucket := filepath.Join(wh, "db.db", "t", "bucket-0")
	ents, err := os.ReadDir(bucket)
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	for _, f := range ents {
		require.NoError(t, os.Remove(filepath.Join(bucket, f.Name())))
	}
	r, err := e.ls.Scan(ctx, "db", "t", false)
	if err == nil {
		for r.Next() {
		}
		err = r.Err()
		r.Release()
	}
	require.ErrorIs(t, err, fs.ErrNotExist)
	t.Log(err)
	require.NotContains(t, err.Error(), dir)
	require.Contains(t, err.Error(), "db.db/t/bucket-0/")
}
