package sqlparse

import "strings"

// Name is a possibly qualified table name, [database.]table. Database is "" when unqualified.
// Unquoted identifiers are lower-cased; quoted ones ("x" or `x`) are kept exactly.
type Name struct {
	Database string
	Table    string
}

// String renders the name as database.table, or table when unqualified, without quoting.
func (n Name) String() string {
	if n.Database == "" {
		return n.Table
	}
	return n.Database + "." + n.Table
}

// CreateDatabase is CREATE DATABASE|SCHEMA [IF NOT EXISTS] name.
type CreateDatabase struct {
	Name        string
	IfNotExists bool
}

// ParseCreateDatabase parses CREATE DATABASE|SCHEMA [IF NOT EXISTS] name [;].
func ParseCreateDatabase(sql string) (*CreateDatabase, error) {
	p, err := newParser("CREATE DATABASE", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("create", "at start of statement"); err != nil {
		return nil, err
	}
	if !p.acceptKeyword("database") && !p.acceptKeyword("schema") {
		return nil, p.syntaxErr(p.peek(), "expected DATABASE or SCHEMA after CREATE")
	}
	var cd CreateDatabase
	if cd.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if cd.Name, err = p.simpleName("database name"); err != nil {
		return nil, err
	}
	if err := p.end("expected end of statement"); err != nil {
		return nil, err
	}
	return &cd, nil
}

// DropDatabase is DROP DATABASE|SCHEMA [IF EXISTS] name [CASCADE|RESTRICT].
type DropDatabase struct {
	Name     string
	IfExists bool
	Cascade  bool // CASCADE given; RESTRICT or nothing leaves it false
}

// ParseDropDatabase parses DROP DATABASE|SCHEMA [IF EXISTS] name [CASCADE|RESTRICT] [;].
func ParseDropDatabase(sql string) (*DropDatabase, error) {
	p, err := newParser("DROP DATABASE", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("drop", "at start of statement"); err != nil {
		return nil, err
	}
	if !p.acceptKeyword("database") && !p.acceptKeyword("schema") {
		return nil, p.syntaxErr(p.peek(), "expected DATABASE or SCHEMA after DROP")
	}
	var dd DropDatabase
	if dd.IfExists, err = p.ifExists(); err != nil {
		return nil, err
	}
	if dd.Name, err = p.simpleName("database name"); err != nil {
		return nil, err
	}
	if p.acceptKeyword("cascade") {
		dd.Cascade = true
	} else {
		p.acceptKeyword("restrict")
	}
	if err := p.end("expected CASCADE, RESTRICT or end of statement"); err != nil {
		return nil, err
	}
	return &dd, nil
}

// DropTable is DROP TABLE [IF EXISTS] name.
type DropTable struct {
	Name     Name
	IfExists bool
}

// ParseDropTable parses DROP TABLE [IF EXISTS] [database.]table [;].
func ParseDropTable(sql string) (*DropTable, error) {
	p, err := newParser("DROP TABLE", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("drop", "at start of statement"); err != nil {
		return nil, err
	}
	if err := p.expectKeyword("table", "after DROP"); err != nil {
		return nil, err
	}
	var dt DropTable
	if dt.IfExists, err = p.ifExists(); err != nil {
		return nil, err
	}
	if dt.Name, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.end("expected end of statement"); err != nil {
		return nil, err
	}
	return &dt, nil
}

// AlterTable is ALTER TABLE name SET ('k' = 'v', ...) or ALTER TABLE name RESET ('k', ...). Exactly one
// of Set (non-empty) and Reset (non-empty) is set; the other is nil.
type AlterTable struct {
	Name Name
	// IfExists is ALTER TABLE IF EXISTS: a missing table is no error.
	IfExists bool
	Set      map[string]string
	Reset    []string
	Add      *AddColumn // ADD [COLUMN] ...
	// RenameFrom and RenameTo are RENAME [COLUMN] from TO to.
	RenameFrom, RenameTo string
	// RenameTable is RENAME TO [database.]table: the table's new name
	// (Database "" when the new name is unqualified).
	RenameTable *Name
	// Drop is DROP [COLUMN] name.
	Drop string
	// Adds is ADD (def, ...) (Flink), ADD COLUMNS (def, ...) or ADD
	// COLUMN def, def (Spark); Drops is DROP (a, b) or DROP COLUMNS a, b;
	// Modify is Flink's MODIFY def or MODIFY (def, ...). Each is one
	// schema change: every column or none.
	Adds   []AddColumn
	Drops  []string
	Modify []ColumnDef
	// Alter is ALTER [COLUMN] name TYPE t | SET DATA TYPE t | DROP NOT NULL
	// | COMMENT 'c'.
	Alter *AlterColumn
}

// AlterColumn is one change of ALTER TABLE ... ALTER [COLUMN] name.
type AlterColumn struct {
	// Name is the column as written, its parts joined by '.': a field of
	// a ROW column is named by the path to it (r.x), an ARRAY's elements
	// and a MAP's values by the segments element and value (a.element,
	// m.value.x).
	Name string
	// Path is Name's parts: one for a top-level column, more for a value
	// nested in it.
	Path        []string
	Type        string // as written, "" for none
	DropNotNull bool
	Comment     *string
}

// AddColumn is ALTER TABLE ... ADD [COLUMN] name type [NOT NULL] [COMMENT
// 'c'] [FIRST | AFTER column].
type AddColumn struct {
	Column ColumnDef
	First  bool
	After  string
}

// ParseAlterTable parses ALTER TABLE [IF EXISTS] [database.]table SET ('k' = 'v', ...) [;],
// ALTER TABLE [database.]table RESET ('k', ...) [;], ALTER TABLE
// [database.]table ADD [COLUMN] column-definition [FIRST | AFTER column] [;],
// ALTER TABLE [database.]table RENAME [COLUMN] a TO b [;], ALTER TABLE
// [database.]table RENAME TO [database.]table2 [;], ALTER TABLE
// [database.]table DROP [COLUMN] a [;] and ALTER TABLE [database.]table
// ALTER [COLUMN] a[.field...] ..., and the lists of Flink and Spark: ADD
// (def, ...), ADD COLUMNS (def, ...), MODIFY def | (def, ...), DROP (a,
// ...), DROP COLUMNS (a, ...). Other ALTER TABLE forms are rejected.
func ParseAlterTable(sql string) (*AlterTable, error) {
	p, err := newParser("ALTER TABLE", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("alter", "at start of statement"); err != nil {
		return nil, err
	}
	if err := p.expectKeyword("table", "after ALTER"); err != nil {
		return nil, err
	}
	var at AlterTable
	if at.IfExists, err = p.ifExists(); err != nil {
		return nil, err
	}
	if at.Name, err = p.tableName(); err != nil {
		return nil, err
	}
	switch t := p.peek(); {
	case isKeyword(t, "set"):
		p.next()
		if at.Set, err = p.options(); err != nil {
			return nil, err
		}
	case isKeyword(t, "reset"):
		p.next()
		if err := p.expectPunct("(", "after RESET"); err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for {
			kt := p.peek()
			key, err := p.stringLit("option key")
			if err != nil {
				return nil, err
			}
			if seen[key] {
				return nil, p.semanticErr(kt.pos, "duplicate option %q", key)
			}
			seen[key] = true
			at.Reset = append(at.Reset, key)
			if p.acceptPunct(",") {
				continue
			}
			if err := p.expectPunct(")", "or ',' in RESET list"); err != nil {
				return nil, err
			}
			break
		}
	case isKeyword(t, "add"):
		p.next()
		p.typeEnd = map[string]bool{"first": true, "after": true}
		if !p.acceptKeyword("column") && !p.acceptKeyword("columns") && !p.peek().is("(") {
			if isKeyword(p.peek(), "primary") || isKeyword(p.peek(), "constraint") || isKeyword(p.peek(), "watermark") {
				return nil, p.syntaxErr(p.peek(), "ADD adds columns: a table's primary key is fixed when it is created, and flightd has no watermarks")
			}
		}
		adds, paren, err := columnList(p, "ADD", func() (AddColumn, error) { return p.addColumn(t) })
		if err != nil {
			return nil, err
		}
		if len(adds) == 1 && !paren {
			at.Add = &adds[0]
		} else {
			at.Adds = adds
		}
	case isKeyword(t, "modify"):
		p.next()
		p.typeEnd = map[string]bool{"first": true, "after": true}
		mods, _, err := columnList(p, "MODIFY", func() (ColumnDef, error) {
			col, pk, err := p.columnDef()
			if err != nil {
				return col, err
			}
			if pk >= 0 || col.PrimaryKey {
				return col, p.semanticErr(t.pos, "MODIFY cannot change a table's primary key: it is fixed when the table is created")
			}
			if c := p.peek(); isKeyword(c, "first") || isKeyword(c, "after") {
				return col, p.syntaxErr(c, "MODIFY cannot move a column (flightd keeps the order of columns)")
			}
			return col, nil
		})
		if err != nil {
			return nil, err
		}
		at.Modify = mods
	case isKeyword(t, "rename"):
		p.next()
		if p.acceptKeyword("to") {
			to, err := p.tableName()
			if err != nil {
				return nil, err
			}
			at.RenameTable = &to
			break
		}
		p.acceptKeyword("column")
		if at.RenameFrom, _, err = p.identifier("column to rename"); err != nil {
			return nil, err
		}
		if err := p.expectKeyword("to", "after the column to rename"); err != nil {
			return nil, err
		}
		if at.RenameTo, _, err = p.identifier("new column name"); err != nil {
			return nil, err
		}
	case isKeyword(t, "alter"):
		p.next()
		p.acceptKeyword("column")
		at.Alter = &AlterColumn{}
		for {
			part, _, err := p.identifier("column to alter")
			if err != nil {
				return nil, err
			}
			at.Alter.Path = append(at.Alter.Path, part)
			if !p.acceptPunct(".") {
				break
			}
		}
		at.Alter.Name = strings.Join(at.Alter.Path, ".")
		switch c := p.peek(); {
		case isKeyword(c, "type"), isKeyword(c, "set"):
			p.next()
			if isKeyword(c, "set") {
				if err := p.expectKeyword("data", "after SET"); err != nil {
					return nil, err
				}
				if err := p.expectKeyword("type", "after SET DATA"); err != nil {
					return nil, err
				}
			}
			if at.Alter.Type, err = p.columnType(at.Alter.Name); err != nil {
				return nil, err
			}
			if at.Alter.Type == "" {
				return nil, p.syntaxErr(p.peek(), "expected the column's new type")
			}
		case isKeyword(c, "drop"):
			p.next()
			if err := p.expectKeyword("not", "after DROP"); err != nil {
				return nil, err
			}
			if err := p.expectKeyword("null", "after DROP NOT"); err != nil {
				return nil, err
			}
			at.Alter.DropNotNull = true
		case isKeyword(c, "comment"):
			p.next()
			s, err := p.stringLit("comment")
			if err != nil {
				return nil, err
			}
			at.Alter.Comment = &s
		default:
			return nil, p.syntaxErr(c, "expected TYPE, SET DATA TYPE, DROP NOT NULL or COMMENT after the column to alter")
		}
	case isKeyword(t, "drop"):
		p.next()
		if !p.acceptKeyword("column") {
			p.acceptKeyword("columns")
		}
		drops, paren, err := columnList(p, "DROP", func() (string, error) {
			name, _, err := p.identifier("column to drop")
			return name, err
		})
		if err != nil {
			return nil, err
		}
		if len(drops) == 1 && !paren {
			at.Drop = drops[0]
		} else {
			at.Drops = drops
		}
	default:
		return nil, p.syntaxErr(t, "unsupported ALTER TABLE operation: expected SET (...), RESET (...), ADD [COLUMN[S]], MODIFY, RENAME [COLUMN], RENAME TO, DROP [COLUMN[S]] or ALTER COLUMN after the table name")
	}
	if err := p.end("expected end of statement"); err != nil {
		return nil, err
	}
	return &at, nil
}

// columnList reads what ADD, MODIFY and DROP change: one item, items
// separated by ',' (Spark), or '(' items ')' (Flink, Spark); paren says
// the items were in parentheses.
func columnList[T any](p *parser, what string, item func() (T, error)) ([]T, bool, error) {
	paren := p.acceptPunct("(")
	var out []T
	for {
		x, err := item()
		if err != nil {
			return nil, false, err
		}
		out = append(out, x)
		if !p.acceptPunct(",") {
			break
		}
	}
	if paren {
		if err := p.expectPunct(")", "or ',' in the "+what+" list"); err != nil {
			return nil, false, err
		}
	}
	return out, paren, nil
}

// addColumn reads one column ADD adds: a column definition, then FIRST or
// AFTER column.
func (p *parser) addColumn(add token) (AddColumn, error) {
	col, pk, err := p.columnDef()
	if err != nil {
		return AddColumn{}, err
	}
	if pk >= 0 || col.PrimaryKey {
		return AddColumn{}, p.semanticErr(add.pos, "ADD COLUMN cannot add a primary key column: a table's primary key is fixed when it is created")
	}
	a := AddColumn{Column: col}
	switch {
	case p.acceptKeyword("first"):
		a.First = true
	case p.acceptKeyword("after"):
		if a.After, _, err = p.identifier("column name after AFTER"); err != nil {
			return AddColumn{}, err
		}
	}
	return a, nil
}

// Use is USE name.
type Use struct {
	Name string
}

// ParseUse parses USE database [;].
func ParseUse(sql string) (*Use, error) {
	p, err := newParser("USE", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("use", "at start of statement"); err != nil {
		return nil, err
	}
	var u Use
	if u.Name, err = p.simpleName("database name"); err != nil {
		return nil, err
	}
	if err := p.end("expected end of statement"); err != nil {
		return nil, err
	}
	return &u, nil
}

// Set is SET name = value or RESET name: a session setting. Value is the
// value as written (a word, a number or a string's contents); RESET leaves
// it "" with Reset set.
type Set struct {
	Name  string
	Value string
	Reset bool
}

// ParseSet parses SET [SESSION] name {= | TO} value [;] and RESET name [;].
func ParseSet(sql string) (*Set, error) {
	p, err := newParser("SET", sql)
	if err != nil {
		return nil, err
	}
	var st Set
	switch {
	case p.acceptKeyword("reset"):
		st.Reset = true
		p.stmt = "RESET"
	case p.acceptKeyword("set"):
		p.acceptKeyword("session")
	default:
		return nil, p.syntaxErr(p.peek(), "expected SET or RESET at start of statement")
	}
	if st.Name, err = p.simpleName("setting name"); err != nil {
		return nil, err
	}
	if !st.Reset {
		if !p.acceptPunct("=") && !p.acceptKeyword("to") {
			return nil, p.syntaxErr(p.peek(), "expected = or TO after the setting name")
		}
		t := p.peek()
		switch t.kind {
		case tokIdent, tokString, tokNumber:
			p.next()
			st.Value = t.text
		default:
			return nil, p.syntaxErr(t, "expected the setting's value")
		}
	}
	if err := p.end("expected end of statement"); err != nil {
		return nil, err
	}
	return &st, nil
}
