package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// Sentinel errors. Match with errors.Is. A file that does not decode (schema, snapshot, tag,
// manifest, index file, data file footer) is reported with an error matching
// manifest.ErrCorrupt.
var (
	ErrDatabaseNotFound = errors.New("lake: database not found")
	ErrDatabaseExists   = errors.New("lake: database already exists")
	ErrDatabaseNotEmpty = errors.New("lake: database is not empty")
	ErrTableNotFound    = errors.New("lake: table not found")
	ErrTableExists      = errors.New("lake: table already exists")
	ErrCommitConflict   = errors.New("lake: commit conflict")
)

const dbSuffix = ".db"

// Catalog is a Paimon filesystem catalog over a warehouse directory: <warehouse>/<db>.db/<table>/.
// Its own paths (those it gives its FileIO) are relative to the warehouse. Its methods do
// their I/O under the ctx they are given, and one whose ctx is done returns its error before
// touching storage (a local FileIO does not look at ctx itself).
type Catalog struct {
	fio    *fileio.Rooted // FileIO rooted at the warehouse
	now    func() time.Time
	states tableStates // what is known of each table's latest snapshot and schema (fresh.go)
}

// OpenCatalog opens (creating if missing) a warehouse on the local filesystem; a local
// FileIO does not look at a context, so it takes none.
func OpenCatalog(warehouse string) (*Catalog, error) {
	return OpenCatalogFileIO(context.Background(), warehouse, fileio.Local{})
}

// OpenCatalogFileIO opens (creating if missing) the warehouse at path warehouse of fio: a
// directory for a fileio.Local, "/prefix" for an S3 FileIO (the bucket's root: "/"). The
// catalog's FileIO is fio confined to the warehouse (fileio.NewRooted); a fileio.Local on
// the operating system's file system (its zero value) is confined by file descriptor (see
// package doc).
func OpenCatalogFileIO(ctx context.Context, warehouse string, fio fileio.FileIO) (*Catalog, error) {
	if warehouse == "" {
		return nil, fmt.Errorf("lake: empty warehouse path")
	}
	r := fileio.NewRooted(fio, warehouse)
	if err := fio.MkdirAll(ctx, r.Root()); err != nil {
		return nil, fmt.Errorf("lake: create warehouse %s: %w", r.Location(), err)
	}
	return &Catalog{fio: r, now: time.Now}, nil
}

// Warehouse returns the warehouse location: the local directory, or s3://bucket/prefix for a
// warehouse in S3 (Table.Path and other paths are FileIO paths).
func (c *Catalog) Warehouse() string { return c.fio.Location() }

// FileIO returns the catalog's storage. Its paths are relative to the warehouse (absolute
// paths of the underlying FileIO are accepted when they lie in the warehouse); any path that
// resolves outside the warehouse (locally: through a symbolic link too), or that holds a NUL
// byte, fails with fileio.ErrInvalidPath. Its errors name paths relative to the warehouse.
func (c *Catalog) FileIO() fileio.FileIO { return c.fio }

// dbPath and tablePath are relative to the warehouse, as all of the catalog's FileIO paths.
func (c *Catalog) dbPath(db string) string { return db + dbSuffix }

func (c *Catalog) tablePath(db, name string) string { return filepath.Join(c.dbPath(db), name) }

// CreateDatabase creates <db>.db.
func (c *Catalog) CreateDatabase(ctx context.Context, name string, ignoreIfExists bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lake: create database %s: %w", name, err)
	}
	if err := validNewDatabase(name); err != nil {
		return err
	}
	ok, err := c.DatabaseExists(ctx, name)
	if err != nil {
		return err
	}
	if ok {
		if ignoreIfExists {
			return nil
		}
		return fmt.Errorf("create database %s: %w", name, ErrDatabaseExists)
	}
	return c.fio.MkdirAll(ctx, c.dbPath(name))
}

// DatabaseExists reports whether <db>.db exists.
func (c *Catalog) DatabaseExists(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if validName("database", name) != nil {
		return false, nil
	}
	return c.fio.Exists(ctx, c.dbPath(name))
}

// ListDatabases returns the database names, sorted.
func (c *Catalog) ListDatabases(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lake: list databases: %w", err)
	}
	ents, err := c.fio.List(ctx, ".")
	if err != nil {
		return nil, fmt.Errorf("lake: list databases: %w", err)
	}
	out := []string{}
	for _, e := range ents {
		if e.IsDir && strings.HasSuffix(e.Name, dbSuffix) && len(e.Name) > len(dbSuffix) {
			out = append(out, strings.TrimSuffix(e.Name, dbSuffix))
		}
	}
	sort.Strings(out)
	return out, nil
}

// DropDatabase removes a database; without cascade it must have no tables.
func (c *Catalog) DropDatabase(ctx context.Context, name string, ignoreIfNotExists, cascade bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lake: drop database %s: %w", name, err)
	}
	ok, err := c.DatabaseExists(ctx, name)
	if err != nil {
		return err
	}
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return fmt.Errorf("drop database %s: %w", name, ErrDatabaseNotFound)
	}
	if !cascade {
		tables, err := c.ListTables(ctx, name)
		if err != nil {
			return err
		}
		if len(tables) > 0 {
			return fmt.Errorf("drop database %s: %w", name, ErrDatabaseNotEmpty)
		}
	}
	defer c.forgetState(c.dbPath(name))
	return c.fio.RemoveAll(ctx, c.dbPath(name))
}

// schemaIDs lists the schema ids present in a table directory, ascending.
func schemaIDs(ctx context.Context, fio fileio.FileIO, tablePath string) ([]int64, error) {
	ents, err := fio.List(ctx, filepath.Join(tablePath, "schema"))
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, e := range ents {
		if e.IsDir || !strings.HasPrefix(e.Name, "schema-") {
			continue
		}
		if id, err := strconv.ParseInt(strings.TrimPrefix(e.Name, "schema-"), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// ListTables returns the tables of a database, sorted.
func (c *Catalog) ListTables(ctx context.Context, db string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lake: list tables %s: %w", db, err)
	}
	ok, err := c.DatabaseExists(ctx, db)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("list tables %s: %w", db, ErrDatabaseNotFound)
	}
	ents, err := c.fio.List(ctx, c.dbPath(db))
	if err != nil {
		return nil, fmt.Errorf("lake: list tables %s: %w", db, err)
	}
	out := []string{}
	for _, e := range ents {
		if !e.IsDir || strings.HasPrefix(e.Name, ".") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("lake: list tables %s: %w", db, err) // a local FileIO does not look at ctx
		}
		ids, err := schemaIDs(ctx, c.fio, c.tablePath(db, e.Name))
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CreateTable validates s, normalises it and writes schema-0 atomically.
func (c *Catalog) CreateTable(ctx context.Context, db, name string, s paimontype.Schema, ignoreIfExists bool) (*Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lake: create table %s.%s: %w", db, name, err)
	}
	if err := validName("database", db); err != nil {
		return nil, err
	}
	if err := validNewTable(db, name); err != nil {
		return nil, err
	}
	if err := CheckPathOptions(s.Options); err != nil {
		return nil, fmt.Errorf("lake: create table %s.%s: %w", db, name, err)
	}
	if err := CheckStatsOptions(s.Options); err != nil {
		return nil, fmt.Errorf("lake: create table %s.%s: %w", db, name, err)
	}
	if err := CheckScanOptions(s.Options); err != nil {
		return nil, fmt.Errorf("lake: create table %s.%s: %w", db, name, err)
	}
	ok, err := c.DatabaseExists(ctx, db)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("create table %s.%s: %w", db, name, ErrDatabaseNotFound)
	}
	path := c.tablePath(db, name)
	ids, err := schemaIDs(ctx, c.fio, path)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		if ignoreIfExists {
			return c.GetTable(ctx, db, name)
		}
		return nil, fmt.Errorf("create table %s.%s: %w", db, name, ErrTableExists)
	}
	ts, err := paimontype.NewTableSchema(s, c.now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("create table %s.%s: %w", db, name, err)
	}
	data, _ := ts.MarshalJSON()
	if err := c.fio.CreateExclusive(ctx, schemaPath(path, 0), data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if ignoreIfExists {
				return c.GetTable(ctx, db, name)
			}
			return nil, fmt.Errorf("create table %s.%s: %w", db, name, ErrTableExists)
		}
		return nil, fmt.Errorf("lake: create table %s.%s: %w", db, name, err)
	}
	if err := c.fio.SyncDir(ctx, filepath.Dir(schemaPath(path, 0))); err != nil {
		return nil, fmt.Errorf("lake: create table %s.%s: %w", db, name, err)
	}
	return c.newTable(db, name, ts, data), nil
}

func schemaPath(tablePath string, id int64) string {
	return filepath.Join(tablePath, "schema", "schema-"+strconv.FormatInt(id, 10))
}

// newTable is db.name opened at ts, read from (or written as) the schema file holding src.
func (c *Catalog) newTable(db, name string, ts *paimontype.TableSchema, src []byte) *Table {
	return &Table{cat: c, fio: c.fio, db: db, name: name, path: c.tablePath(db, name), schema: ts, now: c.now, latest: c.state(c.tablePath(db, name)), older: &olderSchemas{},
		opened: &schemaFile{id: ts.ID, data: src}}
}

// GetTable reads the latest schema of a table.
func (c *Catalog) GetTable(ctx context.Context, db, name string) (*Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lake: get table %s.%s: %w", db, name, err)
	}
	if validName("table", name) != nil || validName("database", db) != nil {
		return nil, fmt.Errorf("get table %s.%s: %w", db, name, ErrTableNotFound)
	}
	path := c.tablePath(db, name)
	at := c.now()
	ids, err := schemaIDs(ctx, c.fio, path)
	if err != nil {
		return nil, fmt.Errorf("lake: get table %s.%s: %w", db, name, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("get table %s.%s: %w", db, name, ErrTableNotFound)
	}
	ts, data, err := readSchemaFile(ctx, c.fio, path, ids[len(ids)-1])
	if err != nil {
		return nil, fmt.Errorf("lake: get table %s.%s: %w", db, name, err)
	}
	t := c.newTable(db, name, ts, data)
	// The listing found no newer schema: a recent read of t need not check.
	t.latest.schemaCurrent(t.opened, at)
	return t, nil
}

func readSchema(ctx context.Context, fio fileio.FileIO, tablePath string, id int64) (*paimontype.TableSchema, error) {
	ts, _, err := readSchemaFile(ctx, fio, tablePath, id)
	return ts, err
}

// readSchemaFile reads schema-id, returning it parsed and as the bytes of its file.
func readSchemaFile(ctx context.Context, fio fileio.FileIO, tablePath string, id int64) (*paimontype.TableSchema, []byte, error) {
	p := schemaPath(tablePath, id)
	data, err := fio.Read(ctx, p)
	if err != nil {
		return nil, nil, fmt.Errorf("read schema %s: %w", p, err)
	}
	var ts paimontype.TableSchema
	if err := json.Unmarshal(data, &ts); err != nil {
		return nil, nil, fmt.Errorf("parse schema %s: %w: %w", p, manifest.ErrCorrupt, err)
	}
	return &ts, data, nil
}

// DropTable removes a table directory.
func (c *Catalog) DropTable(ctx context.Context, db, name string, ignoreIfNotExists bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lake: drop table %s.%s: %w", db, name, err)
	}
	if _, err := c.GetTable(ctx, db, name); err != nil {
		if errors.Is(err, ErrTableNotFound) && ignoreIfNotExists {
			return nil
		}
		return err
	}
	defer c.forgetState(c.tablePath(db, name))
	return c.fio.RemoveAll(ctx, c.tablePath(db, name))
}

// RenameTable renames db.name to toDB.to, as Java Paimon's filesystem catalog does
// (AbstractCatalog.renameTable, FileSystemCatalog.renameTableImpl): the table directory
// <db>.db/<name> becomes <toDB>.db/<to> in one rename, so every snapshot, schema, manifest
// and data file moves with it (Paimon's metadata names files relative to the table). Like
// Java it refuses system tables ('$' in either name) and a target that exists
// (ErrTableExists), and moves tables between databases; unlike Java's LocalFileIO, which
// creates a missing target database directory, a missing target database is
// ErrDatabaseNotFound. On storage that cannot rename a directory in one step (S3) it is
// ErrUnsupported: an object store copies and deletes object by object, and a failure midway
// would leave the table split between both names.
func (c *Catalog) RenameTable(ctx context.Context, db, name, toDB, to string) error {
	what := fmt.Sprintf("rename table %s.%s to %s.%s", db, name, toDB, to)
	for _, n := range [][2]string{{db, name}, {toDB, to}} {
		if n[0] == systemDatabase {
			return fmt.Errorf("lake: %s: %w: %q is Paimon's system database, whose tables cannot be renamed", what, ErrInvalidName, n[0])
		}
		if strings.Contains(n[1], "$") {
			return fmt.Errorf("lake: %s: %w: %s.%s names a system table or branch ('$'); only a table itself can be renamed, to a name without '$'", what, ErrInvalidName, n[0], n[1])
		}
	}
	if err := validName("table", to); err != nil {
		return fmt.Errorf("lake: %s: %w", what, err)
	}
	if err := validName("database", toDB); err != nil {
		return fmt.Errorf("lake: %s: %w", what, err)
	}
	if _, err := c.GetTable(ctx, db, name); err != nil {
		return err
	}
	if _, ok := c.fio.Unwrap().(fileio.DirRenamer); !ok {
		return fmt.Errorf("lake: %s: %w: the warehouse %s is in an object store, which cannot rename a table's directory in one step: "+
			"it would copy and delete each file on its own, and a failure midway would leave the table split between both names",
			what, ErrUnsupported, c.Warehouse())
	}
	ok, err := c.DatabaseExists(ctx, toDB)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w: database %s", what, ErrDatabaseNotFound, toDB)
	}
	if db == toDB && name == to {
		return fmt.Errorf("%s: %w: that is the table's name", what, ErrTableExists)
	}
	ids, err := schemaIDs(ctx, c.fio, c.tablePath(toDB, to))
	if err != nil {
		return fmt.Errorf("lake: %s: %w", what, err)
	}
	if len(ids) > 0 {
		return fmt.Errorf("%s: %w: %s.%s", what, ErrTableExists, toDB, to)
	}
	defer c.forgetState(c.tablePath(toDB, to))
	defer c.forgetState(c.tablePath(db, name))
	if err := c.fio.RenameDir(ctx, c.tablePath(db, name), c.tablePath(toDB, to)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w: a directory %s that is not a table is in the way", what, ErrTableExists, c.tablePath(toDB, to))
		}
		return fmt.Errorf("lake: %s: %w", what, err)
	}
	return nil
}

// AlterTableOptions sets options and writes schema-(N+1). An empty value removes the option.
func (c *Catalog) AlterTableOptions(ctx context.Context, db, name string, set map[string]string) (*Table, error) {
	if err := CheckPathOptions(set); err != nil {
		return nil, fmt.Errorf("lake: alter table %s.%s: %w", db, name, err)
	}
	if err := CheckStatsOptions(set); err != nil {
		return nil, fmt.Errorf("lake: alter table %s.%s: %w", db, name, err)
	}
	if err := CheckScanOptions(set); err != nil {
		return nil, fmt.Errorf("lake: alter table %s.%s: %w", db, name, err)
	}
	return c.alterSchema(ctx, db, name, func(t *Table, ns *paimontype.TableSchema) error {
		ns.Options = make(map[string]string, len(t.schema.Options)+len(set))
		for k, v := range t.schema.Options {
			ns.Options[k] = v
		}
		for k, v := range set {
			switch k {
			case "bucket", "primary-key", "partition", "merge-engine", "sequence.field", "bucket-key":
				if ns.Options[k] != v {
					return fmt.Errorf("lake: alter table %s.%s: %w: option %q cannot be changed", db, name, ErrInvalidOption, k)
				}
			}
			if v == "" {
				delete(ns.Options, k)
			} else {
				ns.Options[k] = v
			}
		}
		// As Java's SchemaManager: switching deletion vectors on or off without a full
		// compaction duplicates or hides rows, unless deletion-vectors.modifiable says so.
		if DeletionVectorsEnabled(ns.Options) != DeletionVectorsEnabled(t.schema.Options) &&
			!strings.EqualFold(strings.TrimSpace(ns.Options["deletion-vectors.modifiable"]), "true") {
			return fmt.Errorf("lake: alter table %s.%s: %w: deletion-vectors.enabled cannot be changed (set 'deletion-vectors.modifiable' = 'true' to force it)",
				db, name, ErrUnsupported)
		}
		return nil
	})
}

// alterSchema writes schema-(N+1) of db.name: the latest schema as change
// leaves it. Another writer's schema-(N+1) first makes it start again
// from that one.
func (c *Catalog) alterSchema(ctx context.Context, db, name string, change func(t *Table, ns *paimontype.TableSchema) error) (*Table, error) {
	for attempt := 0; attempt < 10; attempt++ {
		t, err := c.GetTable(ctx, db, name)
		if err != nil {
			return nil, err
		}
		ns := *t.schema
		ns.Fields = append([]paimontype.DataField(nil), t.schema.Fields...)
		if err := change(t, &ns); err != nil {
			return nil, err
		}
		ns.ID = t.schema.ID + 1
		ns.TimeMillis = c.now().UnixMilli()
		data, _ := ns.MarshalJSON()
		err = c.fio.CreateExclusive(ctx, schemaPath(t.path, ns.ID), data)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			err = c.fio.SyncDir(ctx, filepath.Dir(schemaPath(t.path, ns.ID)))
		}
		if err != nil {
			return nil, fmt.Errorf("lake: alter table %s.%s: %w", db, name, err)
		}
		return c.newTable(db, name, &ns, data), nil
	}
	return nil, fmt.Errorf("alter table %s.%s: %w", db, name, ErrCommitConflict)
}

// Table is an immutable view of one schema version of one table.
type Table struct {
	cat    *Catalog
	fio    fileio.FileIO
	db     string
	name   string
	path   string
	schema *paimontype.TableSchema
	now    func() time.Time
	latest *latestSnapshot // the latest snapshot found, see LatestSnapshot
	older  *olderSchemas   // schemas of older ids read so far, see SchemaByID
	opened *schemaFile     // the schema file the table was opened with, see CheckSchema
}

// Database returns the database name.
func (t *Table) Database() string { return t.db }

// Name returns the table name.
func (t *Table) Name() string { return t.name }

// Schema returns the table schema; callers must not modify it.
func (t *Table) Schema() *paimontype.TableSchema { return t.schema }

// AtSchema returns t read under ts, one of its older schemas (SchemaByID):
// a snapshot written under ts then scans with ts's columns, as Java Paimon
// reads a past snapshot. It is for reading; writes and commits go through
// t.
func (t *Table) AtSchema(ts *paimontype.TableSchema) *Table {
	c := *t
	c.schema = ts
	return &c
}

// Path returns the table directory as a path of the FileIO the catalog was opened with
// (Catalog.FileIO accepts it too). The lake's own paths, and its errors, are relative to the
// warehouse ("db.db/t").
func (t *Table) Path() string { return t.cat.fio.Abs(t.path) }

// FullName is db.table.
func (t *Table) FullName() string { return t.db + "." + t.name }
