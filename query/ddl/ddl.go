package ddl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// SystemDatabase holds flightd's read-only system tables: sys.tiering,
// sys.statements and sys.nodes.
const SystemDatabase = "sys"

// Catalog runs the statements that change flightd's catalog or a session
// without DuckDB. It is safe for concurrent use.
type Catalog struct {
	ls    *lakestream.Service
	drain lakestream.DrainFunc
}

// New returns a Catalog over ls; drain is what switching a table's log
// off waits for (ALTER TABLE SET ('log.enabled' = 'false')).
func New(ls *lakestream.Service, drain lakestream.DrainFunc) *Catalog {
	return &Catalog{ls: ls, drain: drain}
}

// Run runs sql, a statement of kind: CREATE/DROP DATABASE, CREATE/DROP
// TABLE or ALTER TABLE. gone names the table a DROP TABLE or RENAME TO
// took away under its name (or a DROP TABLE IF EXISTS found none under):
// whatever the caller keeps by that name is stale.
func (c *Catalog) Run(ctx context.Context, kind sqlparse.Kind, sql string) (gone *sqlparse.Name, err error) {
	switch kind {
	case sqlparse.KindCreateDatabase:
		st, err := sqlparse.ParseCreateDatabase(sql)
		if err != nil {
			return nil, invalid(err)
		}
		return nil, lakeerr.Map(c.ls.CreateDatabase(ctx, st.Name, st.IfNotExists))
	case sqlparse.KindDropDatabase:
		st, err := sqlparse.ParseDropDatabase(sql)
		if err != nil {
			return nil, invalid(err)
		}
		return nil, lakeerr.Map(c.ls.DropDatabase(ctx, st.Name, st.IfExists, st.Cascade))
	case sqlparse.KindCreateTable:
		st, err := sqlparse.ParseCreateTable(sql)
		if err != nil {
			return nil, invalid(err)
		}
		sc, err := schemaOf(st)
		if err != nil {
			return nil, invalid(err)
		}
		db := engine.DatabaseOf(ctx, st.Name.Database)
		return nil, lakeerr.Map(c.ls.CreateTable(ctx, db, st.Name.Table, sc, st.IfNotExists))
	case sqlparse.KindDropTable:
		st, err := sqlparse.ParseDropTable(sql)
		if err != nil {
			return nil, invalid(err)
		}
		if err := c.Writable(ctx, engine.DatabaseOf(ctx, st.Name.Database), st.Name.Table); err != nil {
			return nil, err
		}
		db := engine.DatabaseOf(ctx, st.Name.Database)
		if err := c.ls.DropTable(ctx, db, st.Name.Table, st.IfExists); err != nil {
			return nil, lakeerr.Map(err)
		}
		return &sqlparse.Name{Database: db, Table: st.Name.Table}, nil
	case sqlparse.KindAlterTable:
		st, err := sqlparse.ParseAlterTable(sql)
		if err != nil {
			return nil, invalid(err)
		}
		db := engine.DatabaseOf(ctx, st.Name.Database)
		if err := c.Writable(ctx, db, st.Name.Table); err != nil {
			return nil, err
		}
		if st.IfExists {
			if _, err := c.ls.Table(ctx, db, st.Name.Table); errors.Is(err, lake.ErrTableNotFound) || errors.Is(err, lake.ErrDatabaseNotFound) {
				return nil, nil // ALTER TABLE IF EXISTS of a table that is not there
			}
		}
		if len(st.Reset) > 0 {
			// Paimon's removeOption: the option goes back to its default.
			set := make(map[string]string, len(st.Reset))
			for _, k := range st.Reset {
				if k == lakestream.OptionEnabled {
					return nil, fmt.Errorf("%w: RESET ('%s'): the option switches the table's log; SET ('%s' = 'false') switches it off", engine.ErrInvalid, k, k)
				}
				set[k] = ""
			}
			return nil, lakeerr.Map(c.ls.AlterTableOptions(ctx, db, st.Name.Table, set))
		}
		if st.Add != nil {
			col, err := lakeColumn(st.Add.Column)
			if err != nil {
				return nil, invalid(err)
			}
			add := lake.AddColumn{Column: col, First: st.Add.First, After: st.Add.After}
			return nil, lakeerr.Map(c.ls.AddColumn(ctx, db, st.Name.Table, add))
		}
		if len(st.Adds) > 0 || len(st.Drops) > 0 || len(st.Modify) > 0 {
			// Flink's and Spark's lists: one schema change.
			var changes []lake.SchemaChange
			for _, a := range st.Adds {
				col, err := lakeColumn(a.Column)
				if err != nil {
					return nil, invalid(err)
				}
				changes = append(changes, lake.SchemaChange{Add: &lake.AddColumn{Column: col, First: a.First, After: a.After}})
			}
			for _, m := range st.Modify {
				col, err := lakeColumn(m)
				if err != nil {
					return nil, invalid(err)
				}
				changes = append(changes, lake.SchemaChange{Modify: &col})
			}
			for _, d := range st.Drops {
				changes = append(changes, lake.SchemaChange{Drop: d})
			}
			return nil, lakeerr.Map(c.ls.Alter(ctx, db, st.Name.Table, changes...))
		}
		if to := st.RenameTable; to != nil {
			toDB := to.Database
			if toDB == "" {
				toDB = db // an unqualified new name stays in the table's database
			}
			if err := c.ls.RenameTable(ctx, db, st.Name.Table, toDB, to.Table); err != nil {
				return nil, lakeerr.Map(err)
			}
			return &sqlparse.Name{Database: db, Table: st.Name.Table}, nil
		}
		if st.RenameFrom != "" {
			return nil, lakeerr.Map(c.ls.RenameColumn(ctx, db, st.Name.Table, st.RenameFrom, st.RenameTo))
		}
		if st.Drop != "" {
			return nil, lakeerr.Map(c.ls.DropColumn(ctx, db, st.Name.Table, st.Drop))
		}
		if a := st.Alter; a != nil {
			ch := lake.ColumnChange{DropNotNull: a.DropNotNull}
			if a.Type != "" {
				t, err := paimontype.ParseType(a.Type)
				if err != nil {
					return nil, invalid(fmt.Errorf("column %q: %w", a.Name, err))
				}
				ch.Type = t
			}
			if a.Comment != nil {
				ch.Comment, ch.SetComment = *a.Comment, true
			}
			return nil, lakeerr.Map(c.ls.AlterColumn(ctx, db, st.Name.Table, a.Path, ch))
		}
		set := make(map[string]string, len(st.Set))
		for k, v := range st.Set {
			set[k] = v
		}
		if v, ok := set[lakestream.OptionEnabled]; ok {
			delete(set, lakestream.OptionEnabled)
			on, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s must be 'true' or 'false', got %q", engine.ErrInvalid, lakestream.OptionEnabled, v)
			}
			if err := c.ls.SetRealtime(ctx, db, st.Name.Table, on, c.drain); err != nil {
				return nil, lakeerr.Map(err)
			}
		}
		if len(set) == 0 {
			return nil, nil
		}
		return nil, lakeerr.Map(c.ls.AlterTableOptions(ctx, db, st.Name.Table, set))
	}
	return nil, fmt.Errorf("%w: statement kind %s", engine.ErrUnsupported, kind)
}

func schemaOf(st *sqlparse.CreateTable) (paimontype.Schema, error) {
	sc := paimontype.Schema{PrimaryKeys: st.PrimaryKey, PartitionKeys: st.PartitionBy, Options: st.Options, Comment: st.Comment}
	for _, c := range st.Columns {
		col, err := lakeColumn(c)
		if err != nil {
			return paimontype.Schema{}, err
		}
		sc.Columns = append(sc.Columns, col)
	}
	return sc, nil
}

// lakeColumn is a column definition of CREATE TABLE or ADD COLUMN as the lake
// declares it.
func lakeColumn(c sqlparse.ColumnDef) (paimontype.Column, error) {
	typ := c.Type
	if c.NotNull {
		typ += " NOT NULL"
	}
	t, err := paimontype.ParseType(typ)
	if err != nil {
		return paimontype.Column{}, fmt.Errorf("column %q: %w", c.Name, err)
	}
	return paimontype.Column{Name: c.Name, Type: t, Comment: c.Comment}, nil
}

func invalid(err error) error { return fmt.Errorf("%w: %w", engine.ErrInvalid, err) }

// Writable refuses a write to a name that reads but cannot be written:
// t$rt and t$changelog, which are views of t, and flightd's system tables.
// Their base tables exist, so "not found" (what looking the name up as a
// table says) would be wrong.
func (c *Catalog) Writable(ctx context.Context, db, table string) error {
	if strings.EqualFold(db, SystemDatabase) {
		return fmt.Errorf("%w: %s.%s is one of flightd's read-only system tables", engine.ErrInvalid, db, table)
	}
	suffix := lakestream.ReservedSuffix(table)
	if suffix == "" {
		return nil
	}
	base := table[:len(table)-len(suffix)]
	if _, err := c.ls.Table(ctx, db, base); err != nil {
		return fmt.Errorf("%w: table %s.%s does not exist, so neither does %s.%s", engine.ErrNotFound, db, base, db, table)
	}
	what := "real-time view"
	switch suffix {
	case lakestream.ChangelogSuffix:
		what = "changelog"
	case lakestream.RealtimeSuffix:
	default:
		what = "system table"
	}
	return fmt.Errorf("%w: %s.%s is the read-only %s of %s.%s; write to %s.%s", engine.ErrInvalid, db, table, what, db, base, db, base)
}

// Use checks USE db and returns the database as the catalog spells it.
func (c *Catalog) Use(ctx context.Context, sql string) (string, error) {
	st, err := sqlparse.ParseUse(sql)
	if err != nil {
		return "", invalid(err)
	}
	db, found, err := c.Database(ctx, st.Name)
	if err != nil {
		return "", lakeerr.Map(err)
	}
	if !found {
		return "", fmt.Errorf("%w: database %q does not exist (CREATE DATABASE %s makes it)", engine.ErrNotFound, st.Name, plan.QuoteIdent(st.Name))
	}
	return db, nil
}

// SetStreaming reads SET streaming = true | false (and RESET streaming):
// the one session setting flightd has.
func SetStreaming(sql string) (bool, error) {
	st, err := sqlparse.ParseSet(sql)
	if err != nil || !strings.EqualFold(st.Name, "streaming") {
		what := plan.KindName(sql)
		if err == nil {
			what += " " + st.Name
		}
		msg := fmt.Sprintf("%s is not allowed: flightd has one session setting, streaming (SET streaming = true | false)", what)
		if err != nil {
			msg += "; " + err.Error()
		}
		return false, fmt.Errorf("%w: %s", engine.ErrInvalid, msg)
	}
	if st.Reset {
		return false, nil
	}
	if on, ok := engine.ParseSwitch(st.Value); ok {
		return on, nil
	}
	return false, fmt.Errorf("%w: SET streaming takes true or false, not %q", engine.ErrInvalid, st.Value)
}

// Database finds the database db as the catalog spells it (exactly, else
// without case).
func (c *Catalog) Database(ctx context.Context, db string) (string, bool, error) {
	dbs, err := c.ls.Databases(ctx)
	if err != nil {
		return "", false, err
	}
	d, found := engine.FindName(dbs, db)
	return d, found, nil
}
