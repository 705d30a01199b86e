package lake

import (
	"context"
	"fmt"
	"strings"

	"github.com/flightd/flightd/lake/paimontype"
)

// AddColumn is ALTER TABLE ... ADD COLUMN: Column goes at the end, or
// first, or after the column After.
type AddColumn struct {
	Column paimontype.Column
	First  bool
	After  string
}

// AddColumn writes a schema with one more column, as Java's SchemaManager
// does: a new field id (above every id the table used, nested ones
// included), nullable, since the rows already written have no value for
// it. Files and log rows of older schemas read it as null (by field id).
func (c *Catalog) AddColumn(ctx context.Context, db, name string, add AddColumn) (*Table, error) {
	return c.Alter(ctx, db, name, SchemaChange{Add: &add})
}

func (add AddColumn) apply(db, name string, ns *paimontype.TableSchema) error {
	col := add.Column
	if col.Type.NotNull {
		return fmt.Errorf("lake: alter table %s.%s: %w: column %q cannot be added NOT NULL: the rows already written have no value for it", db, name, ErrUnsupported, col.Name)
	}
	if col.Type.Root == 0 {
		return fmt.Errorf("lake: alter table %s.%s: column %q has no type", db, name, col.Name)
	}
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
	typ := paimontype.AssignNestedIDs(col.Type, &next)
	ns.HighestFieldID = next - 1
	f := paimontype.DataField{ID: id, Name: col.Name, Type: typ, Description: col.Comment}
	ns.Fields = append(ns.Fields[:at:at], append([]paimontype.DataField{f}, ns.Fields[at:]...)...)
	return nil
}

// SchemaChange is one change of an ALTER TABLE; exactly one field is
// set. Alter applies several as one schema.
type SchemaChange struct {
	Add                  *AddColumn
	RenameFrom, RenameTo string
	Drop                 string
	// Path and Change are ALTER COLUMN (see AlterColumn).
	Path   []string
	Change ColumnChange
	// Modify is Flink's MODIFY: the column named Modify.Name becomes this
	// definition (see Modify).
	Modify *paimontype.Column
}

func (ch SchemaChange) apply(db, name string, ns *paimontype.TableSchema) error {
	switch {
	case ch.Add != nil:
		return ch.Add.apply(db, name, ns)
	case ch.RenameFrom != "":
		return renameColumn(db, name, ns, ch.RenameFrom, ch.RenameTo)
	case ch.Drop != "":
		return dropColumn(db, name, ns, ch.Drop)
	case ch.Modify != nil:
		return modifyColumn(db, name, ns, *ch.Modify)
	case len(ch.Path) > 0:
		return alterColumn(db, name, ns, ch.Path, ch.Change)
	}
	return fmt.Errorf("lake: alter table %s.%s: %w: no column named", db, name, ErrInvalidName)
}

// Alter writes one schema with every change applied in order, as one
// ALTER TABLE with several changes is one schema change in Java: when any
// change is refused, nothing is written.
func (c *Catalog) Alter(ctx context.Context, db, name string, changes ...SchemaChange) (*Table, error) {
	return c.alterSchema(ctx, db, name, func(t *Table, ns *paimontype.TableSchema) error {
		for _, ch := range changes {
			if err := ch.apply(db, name, ns); err != nil {
				return err
			}
		}
		return nil
	})
}

// keyColumn reports whether name is one of ts's primary-key, partition or
// bucket-key columns (or its sequence field), which a schema change may not
// rename or drop.
func keyColumn(ts *paimontype.TableSchema, name string) bool {
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
func fieldIndex(ts *paimontype.TableSchema, name string) int {
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
func nonKeyColumn(ns *paimontype.TableSchema, db, name, col, keeps string) (int, error) {
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
	return c.Alter(ctx, db, name, SchemaChange{RenameFrom: from, RenameTo: to})
}

func renameColumn(db, name string, ns *paimontype.TableSchema, from, to string) error {
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
}

// DropColumn writes a schema without column col. Its field id is never
// given again (HighestFieldID stays), so its values in older files and log
// rows are not read. Key columns and a table's last column stay.
func (c *Catalog) DropColumn(ctx context.Context, db, name, col string) (*Table, error) {
	return c.Alter(ctx, db, name, SchemaChange{Drop: col})
}

func dropColumn(db, name string, ns *paimontype.TableSchema, col string) error {
	i, err := nonKeyColumn(ns, db, name, col, "cannot be dropped")
	if err != nil {
		return err
	}
	if len(ns.Fields) == 1 {
		return fmt.Errorf("lake: alter table %s.%s: %w: %q is the table's only column", db, name, ErrUnsupported, ns.Fields[i].Name)
	}
	ns.Fields = append(ns.Fields[:i:i], ns.Fields[i+1:]...)
	return nil
}

// modifyColumn is Flink's MODIFY col type [NOT NULL] [COMMENT 'c']: the
// column takes the type (only widening, as ALTER COLUMN ... TYPE) and the
// nullability written (NOT NULL may be dropped, not added), and the
// comment when one is written.
func modifyColumn(db, name string, ns *paimontype.TableSchema, col paimontype.Column) error {
	i := fieldIndex(ns, col.Name)
	if i < 0 {
		return fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, col.Name)
	}
	f := ns.Fields[i]
	if col.Type.NotNull && !f.Type.NotNull {
		return fmt.Errorf("lake: alter table %s.%s: %w: %q cannot become NOT NULL: the rows already written may hold nulls", db, name, ErrUnsupported, f.Name)
	}
	ch := ColumnChange{DropNotNull: f.Type.NotNull && !col.Type.NotNull, Comment: col.Comment, SetComment: col.Comment != ""}
	if t := col.Type.WithNullable(true); t.String() != f.Type.WithNullable(true).String() {
		ch.Type = t
	}
	return alterColumn(db, name, ns, []string{f.Name}, ch)
}

// widens reports whether every value of type from is a value of type to
// with nothing lost: the implicit casts Paimon allows a column type change
// even with disable-explicit-type-casting set (larger integers, integers
// and FLOAT to DOUBLE, DECIMAL with as many integer and fraction digits or
// more, longer strings and bytes, finer timestamps), and dropping NOT
// NULL. Java's default also allows explicit, lossy casts (BIGINT to INT,
// numbers to STRING); flightd refuses them.
func widens(from, to paimontype.DataType) bool {
	if !from.NotNull && to.NotNull {
		return false
	}
	f, t := from.WithNullable(true), to.WithNullable(true)
	isInt := func(r paimontype.TypeRoot) bool { return r >= paimontype.TypeTinyInt && r <= paimontype.TypeBigInt }
	switch {
	case isInt(f.Root) && isInt(t.Root):
		return t.Root >= f.Root
	case (isInt(f.Root) || f.Root == paimontype.TypeFloat) && t.Root == paimontype.TypeDouble:
		return true
	case isInt(f.Root) && t.Root == paimontype.TypeFloat:
		return f.Root <= paimontype.TypeSmallInt
	case f.Root == paimontype.TypeDecimal && t.Root == paimontype.TypeDecimal:
		return t.Scale >= f.Scale && t.Precision-t.Scale >= f.Precision-f.Scale
	case (f.Root == paimontype.TypeChar || f.Root == paimontype.TypeVarChar) && t.Root == paimontype.TypeVarChar:
		return t.Length >= f.Length
	case (f.Root == paimontype.TypeBinary || f.Root == paimontype.TypeVarBinary) && t.Root == paimontype.TypeVarBinary:
		return t.Length >= f.Length
	case f.Root == t.Root && (f.Root == paimontype.TypeTimestamp || f.Root == paimontype.TypeTimestampLTZ || f.Root == paimontype.TypeTime):
		return t.Precision >= f.Precision
	}
	return f.String() == t.String()
}

// ColumnChange is ALTER TABLE ... ALTER COLUMN: a new type (when Type.Root
// is set; the column keeps its nullability), dropping NOT NULL, or a new
// comment (when SetComment).
type ColumnChange struct {
	Type        paimontype.DataType
	DropNotNull bool
	Comment     string
	SetComment  bool
}

// AlterColumn writes a schema with the column at path changed: path is
// one name for a top-level column, or the names leading to a value nested
// in it, as Java's SchemaManager takes UpdateColumnType's field names: a
// field name after a ROW (r, x for field x of ROW column r), "element"
// after an ARRAY and "value" after a MAP (a, element for the elements of
// ARRAY column a; m, value, x for field x of the ROWs a MAP holds). A
// MAP's keys and a MULTISET's elements cannot be named (Java cannot change
// them either). A type may only widen (see widens): values already
// written, in files and in the log, are read and cast to it (nested
// fields by field id; ids of ROW fields in an element or value type stay
// as they were, as in Java). Key columns keep their types; a ROW, ARRAY,
// MAP or MULTISET keeps its own type (what it holds is changed one field,
// element or value at a time).
func (c *Catalog) AlterColumn(ctx context.Context, db, name string, path []string, ch ColumnChange) (*Table, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("lake: alter table %s.%s: %w: no column named", db, name, ErrInvalidName)
	}
	return c.Alter(ctx, db, name, SchemaChange{Path: path, Change: ch})
}

func alterColumn(db, name string, ns *paimontype.TableSchema, path []string, ch ColumnChange) error {
	col := strings.Join(path, ".")
	i := fieldIndex(ns, path[0])
	if i < 0 {
		return fmt.Errorf("lake: alter table %s.%s: %w: no column %q", db, name, ErrInvalidName, path[0])
	}
	key := keyColumn(ns, ns.Fields[i].Name)
	w := pathWalk{
		change: func(f *paimontype.DataField, held bool) error {
			if held && ch.SetComment {
				return fmt.Errorf("lake: alter table %s.%s: %w: %q is an ARRAY's element or a MAP's value, which has no comment (comment the column or ROW field)", db, name, ErrUnsupported, col)
			}
			return changeField(db, name, col, f, ch, key && len(path) == 1)
		},
		bad: func(unsupported bool, why string) error {
			kind := ErrInvalidName
			if unsupported {
				kind = ErrUnsupported
			}
			return fmt.Errorf("lake: alter table %s.%s: %w: %s", db, name, kind, why)
		},
	}
	f, err := w.field(ns.Fields[i], path[1:], path[0], false)
	if err != nil {
		return err
	}
	ns.Fields[i] = f
	return nil
}

// The path segments naming what an ARRAY and a MAP hold, as Java's
// SchemaManager (and Flink's and Spark's catalogs) spell them.
const (
	elementSegment = "element"
	valueSegment   = "value"
	keySegment     = "key"
)

// pathWalk finds what a path of AlterColumn names inside a column.
type pathWalk struct {
	// change changes the field found; held says it stands for an ARRAY's
	// element or a MAP's value (only its Type means anything).
	change func(f *paimontype.DataField, held bool) error
	// bad is the error for a path that does not name anything
	// (unsupported: it names something that cannot change).
	bad func(unsupported bool, why string) error
}

// field returns f with the change applied to what rest names in f's type
// (f itself when rest is empty), copying only what it changes; at is the
// path to f.
func (w pathWalk) field(f paimontype.DataField, rest []string, at string, held bool) (paimontype.DataField, error) {
	if len(rest) == 0 {
		err := w.change(&f, held)
		return f, err
	}
	seg := rest[0]
	inner := func(t *paimontype.DataType, name string) (*paimontype.DataType, error) {
		nf, err := w.field(paimontype.DataField{Name: name, Type: *t}, rest[1:], at+"."+name, true)
		if err != nil {
			return nil, err
		}
		return &nf.Type, nil
	}
	switch f.Type.Root {
	case paimontype.TypeArray:
		if !strings.EqualFold(seg, elementSegment) {
			return f, w.bad(false, fmt.Sprintf("%q is of type %s: name its elements %s.%s", at, f.Type, at, elementSegment))
		}
		e, err := inner(f.Type.Elem, elementSegment)
		if err != nil {
			return f, err
		}
		f.Type.Elem = e
		return f, nil
	case paimontype.TypeMap:
		switch {
		case strings.EqualFold(seg, keySegment):
			return f, w.bad(true, fmt.Sprintf("%q is of type %s, whose keys keep their type (Paimon changes only a MAP's values: %s.%s)", at, f.Type, at, valueSegment))
		case !strings.EqualFold(seg, valueSegment):
			return f, w.bad(false, fmt.Sprintf("%q is of type %s: name its values %s.%s", at, f.Type, at, valueSegment))
		}
		v, err := inner(f.Type.Value, valueSegment)
		if err != nil {
			return f, err
		}
		f.Type.Value = v
		return f, nil
	case paimontype.TypeMultiset:
		return f, w.bad(true, fmt.Sprintf("%q is of type %s, whose elements keep their type (Paimon cannot name them)", at, f.Type))
	case paimontype.TypeRow:
	default:
		return f, w.bad(false, fmt.Sprintf("%q is of type %s, which has no field %q (only ROW fields, ARRAY elements and MAP values can be named with '.')", at, f.Type, seg))
	}
	j := -1
	for k, nf := range f.Type.Fields {
		if nf.Name == seg {
			j = k
			break
		}
	}
	for k, nf := range f.Type.Fields {
		if j < 0 && strings.EqualFold(nf.Name, seg) {
			j = k
		}
	}
	if j < 0 {
		return f, w.bad(false, fmt.Sprintf("ROW column %q has no field %q", at, seg))
	}
	nf, err := w.field(f.Type.Fields[j], rest[1:], at+"."+f.Type.Fields[j].Name, false)
	if err != nil {
		return f, err
	}
	f.Type.Fields = append([]paimontype.DataField(nil), f.Type.Fields...)
	f.Type.Fields[j] = nf
	return f, nil
}

// compositeHint says how to change what a composite column col of type t
// holds.
func compositeHint(col string, t paimontype.DataType) string {
	switch t.Root {
	case paimontype.TypeRow:
		return fmt.Sprintf("change a ROW's fields one by one: ALTER COLUMN %s.<field> TYPE ...", col)
	case paimontype.TypeArray:
		return fmt.Sprintf("change an ARRAY's elements: ALTER COLUMN %s.%s TYPE ...", col, elementSegment)
	case paimontype.TypeMap:
		return fmt.Sprintf("change a MAP's values: ALTER COLUMN %s.%s TYPE ...; its keys keep their type", col, valueSegment)
	}
	return "a MULTISET's elements keep their type"
}

// changeField applies ch to f, the column (or nested field) named col;
// key says f is a key column.
func changeField(db, name, col string, f *paimontype.DataField, ch ColumnChange, key bool) error {
	if typ := ch.Type; typ.Root != 0 {
		typ.NotNull = f.Type.NotNull
		if key && typ.String() != f.Type.String() {
			return fmt.Errorf("lake: alter table %s.%s: %w: %q is a key column (primary, partition, bucket or sequence key), which keeps its type", db, name, ErrUnsupported, col)
		}
		if typ.IsComposite() || f.Type.IsComposite() {
			if typ.String() != f.Type.String() {
				return fmt.Errorf("lake: alter table %s.%s: %w: %q is of type %s and cannot become %s: a ROW, ARRAY, MAP or MULTISET keeps its type (%s)",
					db, name, ErrUnsupported, col, f.Type, typ, compositeHint(col, f.Type))
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
