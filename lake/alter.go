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
		at := len(ns.Fields)
		for i, f := range ns.Fields {
			if strings.EqualFold(f.Name, col.Name) {
				return fmt.Errorf("lake: alter table %s.%s: %w: column %q exists", db, name, ErrInvalidName, f.Name)
			}
			if add.After != "" && f.Name == add.After {
				at = i + 1
			}
		}
		switch {
		case add.First:
			at = 0
		case add.After != "" && at == len(ns.Fields) && ns.Fields[len(ns.Fields)-1].Name != add.After:
			return fmt.Errorf("lake: alter table %s.%s: %w: no column %q to add %q after", db, name, ErrInvalidName, add.After, col.Name)
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

// RenameColumn writes a schema in which column from is named to. The
// field keeps its id, so files and log rows written before read under the
// new name. Key columns keep their names.
func (c *Catalog) RenameColumn(ctx context.Context, db, name, from, to string) (*Table, error) {
	return c.alterSchema(ctx, db, name, func(t *Table, ns *TableSchema) error {
		i := fieldIndex(ns, from)
		if i < 0 {
			return fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, from)
		}
		if keyColumn(ns, ns.Fields[i].Name) {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column (primary, partition, bucket or sequence key), which keeps its name", db, name, ErrUnsupported, ns.Fields[i].Name)
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
		i := fieldIndex(ns, col)
		if i < 0 {
			return fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, col)
		}
		if keyColumn(ns, ns.Fields[i].Name) {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column (primary, partition, bucket or sequence key), which cannot be dropped", db, name, ErrUnsupported, ns.Fields[i].Name)
		}
		if len(ns.Fields) == 1 {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is the table's only column", db, name, ErrUnsupported, ns.Fields[i].Name)
		}
		ns.Fields = append(ns.Fields[:i], ns.Fields[i+1:]...)
		return nil
	})
}
