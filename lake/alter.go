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

// AlterColumn writes a schema with the column at path changed: path is
// one name for a top-level column, or the names leading to a field nested
// in ROW columns (r, x for field x of ROW column r), as Java's
// SchemaManager takes UpdateColumnType's field names. A type may only
// widen (see widens): values already written, in files and in the log,
// are read and cast to it (nested fields by field id). Key columns keep
// their types; a ROW, ARRAY, MAP or MULTISET keeps its own type (its ROW
// fields are changed one by one).
func (c *Catalog) AlterColumn(ctx context.Context, db, name string, path []string, ch ColumnChange) (*Table, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("lake: alter table %s.%s: %w: no column named", db, name, ErrInvalidName)
	}
	col := strings.Join(path, ".")
	return c.alterSchema(ctx, db, name, func(t *Table, ns *TableSchema) error {
		i := fieldIndex(ns, path[0])
		if i < 0 {
			return fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, path[0])
		}
		key := keyColumn(ns, ns.Fields[i].Name)
		f, err := alterField(ns.Fields[i], path[1:], func(f *DataField) error {
			return changeField(db, name, col, f, ch, key && len(path) == 1)
		}, func(why string) error {
			return fmt.Errorf("lake: alter table %s.%s: %w: %s", db, name, ErrInvalidName, why)
		}, path[0])
		if err != nil {
			return err
		}
		ns.Fields[i] = f
		return nil
	})
}

// alterField returns f with change applied to the field that rest names in
// f's ROW type (f itself when rest is empty), copying only what it changes.
func alterField(f DataField, rest []string, change func(*DataField) error, bad func(string) error, at string) (DataField, error) {
	if len(rest) == 0 {
		err := change(&f)
		return f, err
	}
	if f.Type.Root != TypeRow {
		return f, bad(fmt.Sprintf("%q is of type %s, which has no field %q (only ROW fields can be named with '.')", at, f.Type, rest[0]))
	}
	j := -1
	for k, nf := range f.Type.Fields {
		if nf.Name == rest[0] {
			j = k
			break
		}
	}
	for k, nf := range f.Type.Fields {
		if j < 0 && strings.EqualFold(nf.Name, rest[0]) {
			j = k
		}
	}
	if j < 0 {
		return f, bad(fmt.Sprintf("ROW column %q has no field %q", at, rest[0]))
	}
	nf, err := alterField(f.Type.Fields[j], rest[1:], change, bad, at+"."+f.Type.Fields[j].Name)
	if err != nil {
		return f, err
	}
	f.Type.Fields = append([]DataField(nil), f.Type.Fields...)
	f.Type.Fields[j] = nf
	return f, nil
}

// changeField applies ch to f, the column (or nested field) named col;
// key says f is a key column.
func changeField(db, name, col string, f *DataField, ch ColumnChange, key bool) error {
	if typ := ch.Type; typ.Root != 0 {
		typ.NotNull = f.Type.NotNull
		if key && typ.String() != f.Type.String() {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column (primary, partition, bucket or sequence key), which keeps its type", db, name, ErrUnsupported, col)
		}
		if typ.isComposite() || f.Type.isComposite() {
			if typ.String() != f.Type.String() {
				return fmt.Errorf("lake: alter table %s.%s: %w: %q is of type %s and cannot become %s: a ROW, ARRAY, MAP or MULTISET keeps its type (change a ROW's fields one by one: ALTER COLUMN %s.<field> TYPE ...)",
					db, name, ErrUnsupported, col, f.Type, typ, col)
			}
			// the same type: the field ids of its ROWs stay
		} else if !widens(f.Type, typ) {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q cannot change from %s to %s: values already written might not fit (a type may only widen: larger integers, DOUBLE, a DECIMAL with as many digits, longer strings, finer timestamps, or drop NOT NULL)",
				db, name, ErrUnsupported, col, f.Type, typ)
		} else {
			f.Type = typ
		}
	}
	if ch.DropNotNull {
		if key {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column, which stays NOT NULL", db, name, ErrUnsupported, col)
		}
		f.Type.NotNull = false
	}
	if ch.SetComment {
		f.Description = ch.Comment
	}
	return nil
}
