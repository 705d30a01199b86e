package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio/fileiotest"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// confinedCatalog opens a local warehouse at <dir>/wh, so that a path escaping it would land
// in dir, next to it.
func confinedCatalog(t *testing.T) (dir string, c *Catalog) {
	t.Helper()
	dir = t.TempDir()
	c, err := OpenCatalog(filepath.Join(dir, "wh"))
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	return dir, c
}

// requireOnlyWarehouse checks that nothing but the warehouse was created in dir.
func requireOnlyWarehouse(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"wh"}, names, "files outside the warehouse")
}

func TestDataFilePrefixCannotEscapeTable(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	escape := map[string]string{"data-file.prefix": "../../../tmp/x-"}

	_, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, Options: escape}, false)
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorContains(t, err, "data-file.prefix")
	require.ErrorContains(t, err, "db.t")
	tables, err := c.ListTables(ctx, "db")
	require.NoError(t, err)
	require.Empty(t, tables, "a refused CREATE TABLE leaves no table")

	_, err = c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, Options: map[string]string{"data-file.prefix": "part-"}}, false)
	require.NoError(t, err)
	_, err = c.AlterTableOptions(ctx, "db", "t", escape)
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorContains(t, err, "data-file.prefix")
	require.ErrorContains(t, err, "db.t")
	tb, err := c.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	require.Equal(t, int64(0), tb.Schema().ID, "a refused ALTER writes no schema")

	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, nil, nil)
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	// A schema written elsewhere (another engine, a bug) with an escaping prefix: writes are
	// refused before a file is named.
	ns := *tb.schema
	ns.ID, ns.Options = 1, map[string]string{"data-file.prefix": "../../../x-"}
	data, _ := ns.MarshalJSON()
	require.NoError(t, c.fio.CreateExclusive(ctx, schemaPath(tb.Path(), 1), data))
	tb, err = c.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	w = tb.NewWrite(ctx)
	rec := buildRows(t, tb, []row{{2, sp("b"), "x"}})
	defer rec.Release()
	err = w.Write(ctx, 0, rec, nil, nil)
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorContains(t, err, "db.t")
	w.Abort()
	_, err = tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", MinFiles: 1})
	require.ErrorIs(t, err, ErrInvalidOption)

	requireOnlyWarehouse(t, dir)
	for _, f := range fileiotest.FilesUnder(t, filepath.Join(dir, "wh")) {
		require.False(t, strings.Contains(f, "x-"), f)
		if strings.HasSuffix(f, ".parquet") {
			require.True(t, strings.HasPrefix(f, "db.db/t/bucket-0/part-"), f)
		}
	}
}

func TestPathOptionsRefused(t *testing.T) {
	ctx := context.Background()
	_, c := confinedCatalog(t)
	_, err := c.CreateTable(ctx, "db", "ok", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	bad := []map[string]string{
		{"data-file.prefix": "a/b-"},
		{"data-file.prefix": `a\b-`},
		{"data-file.prefix": ".."},
		{"data-file.prefix": "x..y-"},
		{"data-file.prefix": ".hidden-"},
		{"data-file.prefix": "x\x00-"},
		{"data-file.prefix": "x\n-"},
		{"changelog-file.prefix": "../c-"},
		{"branch": "../../b"},
		{"branch": ".."},
		{"scan.fallback-branch": "a/b"},
		{"partition.default-name": "x\x00"},
		{"path": "/tmp/elsewhere"},
		{"data-file.path-directory": "../data"},
		{"data-file.path-directory": "data"},
		{"data-file.external-paths": "file:///tmp/ext"},
		{"global-index.external-path": "/tmp/idx"},
	}
	for _, o := range bad {
		var key string
		for k := range o {
			key = k
		}
		_, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, Options: o}, false)
		require.ErrorIs(t, err, ErrInvalidOption, "%q", o)
		require.ErrorContains(t, err, key)
		require.ErrorContains(t, err, "db.t")
		require.NotContains(t, err.Error(), "\x00")
		_, err = c.AlterTableOptions(ctx, "db", "ok", o)
		require.ErrorIs(t, err, ErrInvalidOption, "%q", o)
		require.ErrorContains(t, err, key)
		require.ErrorContains(t, err, "db.ok")
	}
	good := map[string]string{"data-file.prefix": "data-v2-", "changelog-file.prefix": "cl_", "branch": "main",
		"partition.default-name": "__NULL__"}
	_, err = c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, Options: good}, false)
	require.NoError(t, err)
	// Removing an option (empty value) is never refused.
	_, err = c.AlterTableOptions(ctx, "db", "t", map[string]string{"data-file.prefix": "", "path": ""})
	require.NoError(t, err)
}

func TestNameWithNULRefused(t *testing.T) {
	dir, c := confinedCatalog(t)
	for _, n := range []string{"a\x00b", "\x00", "a\x00/../../x"} {
		err := c.CreateDatabase(t.Context(), n, false)
		require.ErrorIs(t, err, ErrInvalidName, "%q", n)
		require.NotContains(t, err.Error(), "\x00", "the name is quoted")
		_, err = c.CreateTable(t.Context(), "db", n, paimontype.Schema{Columns: testCols}, false)
		require.ErrorIs(t, err, ErrInvalidName, "%q", n)
		_, err = c.CreateTable(t.Context(), n, "t", paimontype.Schema{Columns: testCols}, false)
		require.ErrorIs(t, err, ErrInvalidName, "%q", n)
		_, err = c.GetTable(t.Context(), "db", n)
		require.ErrorIs(t, err, ErrTableNotFound)
	}
	requireOnlyWarehouse(t, dir)
	require.Equal(t, []string{"db.db/"}, dirsUnder(t, filepath.Join(dir, "wh")))
}

func TestNamesThatAreNotOnePathElementRefused(t *testing.T) {
	dir, c := confinedCatalog(t)
	for _, n := range []string{"", ".", "..", "a/b", `a\b`, "../x", "/abs", ".hidden", "tab\tname", "bell\a",
		"del\x7f", "c1\u0085", "bad\xffutf8", strings.Repeat("n", 253)} {
		err := c.CreateDatabase(t.Context(), n, false)
		require.ErrorIs(t, err, ErrInvalidName, "%q", n)
		_, err = c.CreateTable(t.Context(), "db", n, paimontype.Schema{Columns: testCols}, false)
		require.ErrorIs(t, err, ErrInvalidName, "%q", n)
	}
	// As Java Paimon: no database "sys", no '$' in a table name.
	require.ErrorIs(t, c.CreateDatabase(t.Context(), "sys", false), ErrInvalidName)
	for _, n := range []string{"t$snapshots", "t$branch_b", "$"} {
		_, err := c.CreateTable(t.Context(), "db", n, paimontype.Schema{Columns: testCols}, false)
		require.ErrorIs(t, err, ErrInvalidName, "%q", n)
	}
	// Names Paimon accepts still work.
	require.NoError(t, c.CreateDatabase(t.Context(), "My-DB_1 ü", false))
	_, err := c.CreateTable(t.Context(), "My-DB_1 ü", "t.1 €", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	_, err = c.CreateTable(t.Context(), "db", strings.Repeat("n", maxNameBytes), paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	requireOnlyWarehouse(t, dir)
}

// dirsUnder lists the directories right below root, with a trailing '/'.
func dirsUnder(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name()+"/")
		}
	}
	return out
}

// A partition value holding a NUL byte failed the commit: the path kept the
// raw NUL. Java's PartitionPathUtils.escapePathName writes it as %00 (and
// '/', '.', ... as Java does), so the value stays one path element below
// the table and reads back unchanged.
func TestPartitionValueWithNULIsEscaped(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols, PartitionKeys: []string{"dt"}}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	val := "x\x00/../../../../escape"
	writeRows(t, w, tb, []row{{1, sp("a"), val}}, nil, nil)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)
	requireOnlyWarehouse(t, dir)
	require.Equal(t, []string{"bucket-0/"}, dirsUnder(t, filepath.Join(dir, "wh", "db.db", "ap", "dt=x%00%2F..%2F..%2F..%2F..%2Fescape")))
	require.Equal(t, []string{"1,a," + val}, scanAll(t, tb, s, nil))
}

func TestEscapePathNameAsJava(t *testing.T) {
	// Java escapes 0x00-0x1F, 0x7F and "#%'*/:=?\{}[]^ as %XX (upper-case hex).
	escaped := "\"#%'*/:=?\\{}[]^\x7f"
	for c := 0; c < 0x80; c++ {
		want := string(rune(c))
		if c < 0x20 || strings.ContainsRune(escaped, rune(c)) {
			want = fmt.Sprintf("%%%02X", c)
		}
		require.Equal(t, want, escapePathName(string(rune(c))), "char %#x", c)
	}
	require.Equal(t, "a%3Db%00ü€", escapePathName("a=b\x00ü€"))
}

// requireRelative checks that err names no absolute path of the server.
func requireRelative(t *testing.T, err error, dir string, want ...string) {
	t.Helper()
	require.Error(t, err)
	t.Log(err)
	require.NotContains(t, err.Error(), dir)
	for _, w := range want {
		require.Contains(t, err.Error(), w)
	}
}

func TestErrorsCarryNoAbsolutePaths(t *testing.T) {
	ctx := context.Background()
	dir, c := confinedCatalog(t)
	wh := filepath.Join(dir, "wh")
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{1, sp("a"), "x"}}, nil, nil)
	s1, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.NoError(t, err)

	// A missing snapshot: fs.ErrNotExist still matches, the path is the table's.
	_, err = tb.Snapshot(ctx, 7)
	require.ErrorIs(t, err, fs.ErrNotExist)
	requireRelative(t, err, dir, "db.db/t/snapshot/snapshot-7")

	// Publishing over an existing snapshot (link(2) fails).
	err = c.fio.CreateExclusive(ctx, tb.snapshotPath(1), []byte("{}"))
	require.ErrorIs(t, err, fs.ErrExist)
	requireRelative(t, err, dir, "db.db/t/snapshot/snapshot-1")

	// A manifest that is not a manifest.
	metas, err := tb.readManifestList(ctx, s1.DeltaManifestList)
	require.NoError(t, err)
	mf := filepath.Join(wh, tb.manifestPath(metas[0].FileName))
	orig, err := os.ReadFile(mf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mf, []byte("garbage"), 0o644))
	err = scanErr(ctx, tb, s1)
	require.ErrorIs(t, err, manifest.ErrCorrupt)
	requireRelative(t, err, dir, metas[0].FileName)
	require.NoError(t, os.WriteFile(mf, orig, 0o644))

	// A data file gone from under a snapshot.
	files, _, err := tb.dataFiles(ctx, s1)
	require.NoError(t, err)
	require.Len(t, files, 1)
	dataRel := tb.dataFilePath(nil, nil, 0, files[0].File.FileName)
	require.NoError(t, os.Remove(filepath.Join(wh, dataRel)))
	err = scanErr(ctx, tb, s1)
	require.ErrorIs(t, err, fs.ErrNotExist)
	requireRelative(t, err, dir, dataRel)

	// A schema directory that cannot be read.
	require.NoError(t, os.RemoveAll(filepath.Join(wh, "db.db", "t", "schema")))
	require.NoError(t, os.WriteFile(filepath.Join(wh, "db.db", "t", "schema"), []byte("not a dir"), 0o644))
	_, err = c.GetTable(ctx, "db", "t")
	requireRelative(t, err, dir, "db.db/t/schema")

	// Errors of an opened file and of a file being written.
	f, err := c.fio.Open(ctx, tb.snapshotPath(1))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = f.ReadAt(make([]byte, 1), 0)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "db.db/t/snapshot/snapshot-1", pe.Path)
	requireRelative(t, err, dir)
	wc, err := c.fio.Create(ctx, "db.db/t/tmp-file")
	require.NoError(t, err)
	require.NoError(t, wc.Close())
	_, err = wc.Write([]byte("x"))
	requireRelative(t, err, dir, "db.db/t/tmp-file")

	// The warehouse itself, when it cannot be listed.
	require.NoError(t, os.RemoveAll(wh))
	require.NoError(t, os.WriteFile(wh, nil, 0o644))
	_, err = c.ListDatabases(ctx)
	requireRelative(t, err, dir)
}

// scanErr scans a snapshot to the end and returns the first error.
func scanErr(ctx context.Context, tb *Table, s *Snapshot) error {
	rr, err := tb.Scan(ctx, s, ScanOptions{})
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
	}
	if err := rr.Err(); err != nil {
		return err
	}
	return errors.New("scan succeeded")
}

// A float partition value whose shortest form has one significant digit
// but is not exact (Float.MIN_VALUE, Double.MIN_VALUE) was rendered
// "1.0E-45" where Java's Float.toString writes "1.4E-45": another path.
func TestFloatPartitionStringAsJava(t *testing.T) {
	for _, c := range []struct {
		v    float64
		bits int
		want string
	}{
		{math.SmallestNonzeroFloat32, 32, "1.4E-45"},
		{math.SmallestNonzeroFloat64, 64, "4.9E-324"},
		{math.MaxFloat32, 32, "3.4028235E38"},
		{math.MaxFloat64, 64, "1.7976931348623157E308"},
		{1e10, 64, "1.0E10"},
		{1e-5, 64, "1.0E-5"},
		{1e7, 32, "1.0E7"},
		{100, 64, "100.0"},
		{0.001, 64, "0.001"},
		{-2.5e-4, 64, "-2.5E-4"},
		{math.Copysign(0, -1), 64, "-0.0"},
	} {
		require.Equal(t, c.want, javaFloatString(c.v, c.bits), "%v", c.v)
	}
}
