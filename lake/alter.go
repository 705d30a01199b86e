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
