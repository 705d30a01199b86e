package lake

import (
	"context"
	"fmt"
	"strings"
)

// AddColumn is ALTER TABLE ... ADD COLUMN: Column goes at the end, or
// first, or after the column After.
type AddColumn struct {
	Column Column
	First  bool
	After  string
}

// AddColumn writes a schema with one more column, as Java's SchemaManager
// does: a new field id (above every id the table used, nested ones
// included), nullable, since the rows already written have no value for
// it. Files and log rows of older schemas read it as null (by field id).
func (c *Catalog) AddColumn(ctx context.Context, db, name string, add AddColumn) (*Table, error) {
	col := add.Column
	if col.Type.NotNull {
		return nil, fmt.Errorf("lake: alter table %s.%s: %w: column %q cannot be added NOT NULL: the rows already written have no value for it", db, name, ErrUnsupported, col.Name)
	}
	if col.Type.Root == 0 {
		return nil, fmt.Errorf("lake: alter table %s.%s: column %q has no type", db, name, col.Name)
	}
	return c.alterSchema(ctx, db, name, func(t *Table, ns *TableSchema) error {
		if j := fieldIndex(ns, col.Name); j >= 0 {
			return fmt.Errorf("lake: alter table %s.%s: %w: column %q exists", db, name, ErrInvalidName, ns.Fields[j].Name)
		}
		at := len(ns.Fields)
		switch {
		case add.First:
			at = 0
		case add.After != "":
			j := fieldIndex(ns, add.After)
			if j < 0 {
				return fmt.Errorf("lake: alter table %s.%s: %w: no column %q to add %q after", db, name, ErrInvalidName, add.After, col.Name)
			}
			at = j + 1
		}
		next := ns.HighestFieldID + 1
		id := next
		next++
		typ := assignNestedIDs(col.Type, &next)
		ns.HighestFieldID = next - 1
		f := DataField{ID: id, Name: col.Name, Type: typ, Description: col.Comment}
		ns.Fields = append(ns.Fields[:at], append([]DataField{f}, ns.Fields[at:]...)...)
		return nil
	})
}

// keyColumn reports whether name is one of ts's primary-key, partition or
// bucket-key columns (or its sequence field), which a schema change may not
// rename or drop.
func keyColumn(ts *TableSchema, name string) bool {
	keys := append(append(append([]string{}, ts.PrimaryKeys...), ts.PartitionKeys...), ts.BucketKeys()...)
	for _, k := range strings.Split(ts.Options["sequence.field"], ",") {
		keys = append(keys, strings.TrimSpace(k))
	}
	for _, k := range keys {
		if k == name {
			return true
		}
	}
	return false
}

// fieldIndex is the position of the column named name, matched exactly
// or, failing that, without case.
func fieldIndex(ts *TableSchema, name string) int {
	if i := ts.FieldIndex(name); i >= 0 {
		return i
	}
	for i, f := range ts.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// nonKeyColumn is the position of column col of ns, which must not be a
// key column: what may happen to those is said by keeps ("keeps its
// name", "cannot be dropped").
func nonKeyColumn(ns *TableSchema, db, name, col, keeps string) (int, error) {
	i := fieldIndex(ns, col)
	if i < 0 {
		return -1, fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, col)
	}
	if keyColumn(ns, ns.Fields[i].Name) {
		return -1, fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column (primary, partition, bucket or sequence key), which %s", db, name, ErrUnsupported, ns.Fields[i].Name, keeps)
	}
	return i, nil
}

// RenameColumn writes a schema in which column from is named to. The
// field keeps its id, so files and log rows written before read under the
// new name. Key columns keep their names.
func (c *Catalog) RenameColumn(ctx context.Context, db, name, from, to string) (*Table, error) {
	return c.alterSchema(ctx, db, name, func(t *Table, ns *TableSchema) error {
		i, err := nonKeyColumn(ns, db, name, from, "keeps its name")
		if err != nil {
			return err
		}
		if j := fieldIndex(ns, to); j >= 0 && j != i {
			return fmt.Errorf("lake: alter table %s.%s: %w: column %q exists", db, name, ErrInvalidName, ns.Fields[j].Name)
		}
		if strings.TrimSpace(to) == "" {
			return fmt.Errorf("lake: alter table %s.%s: %w: empty column name", db, name, ErrInvalidName)
		}
		ns.Fields[i].Name = to
		return nil
	})
}

// DropColumn writes a schema without column col. Its field id is never
// given again (HighestFieldID stays), so its values in older files and log
// rows are not read. Key columns and a table's last column stay.
func (c *Catalog) DropColumn(ctx context.Context, db, name, col string) (*Table, error) {
	return c.alterSchema(ctx, db, name, func(t *Table, ns *TableSchema) error {
		i, err := nonKeyColumn(ns, db, name, col, "cannot be dropped")
		if err != nil {
			return err
		}
		if len(ns.Fields) == 1 {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is the table's only column", db, name, ErrUnsupported, ns.Fields[i].Name)
		}
		ns.Fields = append(ns.Fields[:i], ns.Fields[i+1:]...)
		return nil
	})
}

// widens reports whether every value of type from is a value of type to
// with nothing lost: the implicit casts Paimon allows a column type change
// by default (larger integers, integers and FLOAT to DOUBLE, DECIMAL with
// as many integer and fraction digits or more, longer strings and bytes,
// finer timestamps), and dropping NOT NULL.
func widens(from, to DataType) bool {
	if !from.NotNull && to.NotNull {
		return false
	}
	f, t := from.WithNullable(true), to.WithNullable(true)
	isInt := func(r TypeRoot) bool { return r >= TypeTinyInt && r <= TypeBigInt }
	switch {
	case isInt(f.Root) && isInt(t.Root):
		return t.Root >= f.Root
	case (isInt(f.Root) || f.Root == TypeFloat) && t.Root == TypeDouble:
		return true
	case isInt(f.Root) && t.Root == TypeFloat:
		return f.Root <= TypeSmallInt
	case f.Root == TypeDecimal && t.Root == TypeDecimal:
		return t.Scale >= f.Scale && t.Precision-t.Scale >= f.Precision-f.Scale
	case (f.Root == TypeChar || f.Root == TypeVarChar) && t.Root == TypeVarChar:
		return t.Length >= f.Length
	case (f.Root == TypeBinary || f.Root == TypeVarBinary) && t.Root == TypeVarBinary:
		return t.Length >= f.Length
	case f.Root == t.Root && (f.Root == TypeTimestamp || f.Root == TypeTimestampLTZ || f.Root == TypeTime):
		return t.Precision >= f.Precision
	}
	return f.String() == t.String()
}

// ColumnChange is ALTER TABLE ... ALTER COLUMN: a new type (when Type.Root
// is set; the column keeps its nullability), dropping NOT NULL, or a new
// comment (when SetComment).
type ColumnChange struct {
	Type        DataType
	DropNotNull bool
	Comment     string
	SetComment  bool
}

// AlterColumn writes a schema with column col changed. A type may only
// widen (see widens): values already written, in files and in the log,
// are read and cast to it. Key columns keep their types.
func (c *Catalog) AlterColumn(ctx context.Context, db, name, col string, ch ColumnChange) (*Table, error) {
	return c.alterSchema(ctx, db, name, func(t *Table, ns *TableSchema) error {
		i := fieldIndex(ns, col)
		if i < 0 {
			return fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, col)
		}
		f := ns.Fields[i]
		if typ := ch.Type; typ.Root != 0 {
			typ.NotNull = f.Type.NotNull
			if keyColumn(ns, f.Name) && typ.String() != f.Type.String() {
				return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column (primary, partition, bucket or sequence key), which keeps its type", db, name, ErrUnsupported, f.Name)
			}
			if typ.Root == TypeRow || typ.Root == TypeArray || typ.Root == TypeMap || typ.Root == TypeMultiset ||
				f.Type.Root == TypeRow || f.Type.Root == TypeArray || f.Type.Root == TypeMap || f.Type.Root == TypeMultiset {
				return fmt.Errorf("lake: alter table %s.%s: %w: changing the type of nested column %q is not supported yet", db, name, ErrUnsupported, f.Name)
			}
			if !widens(f.Type, typ) {
				return fmt.Errorf("lake: alter table %s.%s: %w: %q cannot change from %s to %s: values already written might not fit (a type may only widen: larger integers, DOUBLE, a DECIMAL with as many digits, longer strings, finer timestamps, or drop NOT NULL)",
					db, name, ErrUnsupported, f.Name, f.Type, typ)
			}
			f.Type = typ
		}
		if ch.DropNotNull {
			if keyColumn(ns, f.Name) {
				return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column, which stays NOT NULL", db, name, ErrUnsupported, f.Name)
			}
			f.Type.NotNull = false
		}
		if ch.SetComment {
			f.Description = ch.Comment
		}
		ns.Fields[i] = f
		return nil
	})
}
