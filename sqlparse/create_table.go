package sqlparse

import (
	"fmt"
	"strings"
)

// ColumnDef is one column of a CREATE TABLE.
type ColumnDef struct {
	Name string
	// Type is the type as written, normalised only in whitespace: runs of whitespace and comments
	// become one space, and none is kept after '(', '<' or '[' or before '(', ')', '<', '>', ',',
	// '[' or ']'. Examples: "DECIMAL(10,2)", "TIMESTAMP(3) WITH LOCAL TIME ZONE",
	// "MAP<STRING, BIGINT>", "ROW<a INT, b STRING>", "DOUBLE PRECISION", "INT[]" (DuckDB's
	// ARRAY<INT>). Case is kept. NOT NULL / NULL are not part of it.
	Type string
	// NotNull reports an explicit NOT NULL. Primary key columns are not marked NotNull implicitly.
	NotNull bool
	// Comment is the column's COMMENT 'x', or "".
	Comment string
	// PrimaryKey reports that the column is part of the primary key, whether declared on the
	// column (id BIGINT PRIMARY KEY) or by a table constraint (PRIMARY KEY (id)).
	PrimaryKey bool
}

// CreateTable is a parsed CREATE TABLE statement.
type CreateTable struct {
	Name        Name
	IfNotExists bool
	Columns     []ColumnDef
	// PrimaryKey lists the primary key columns in key order, spelled as in Columns; nil if none.
	PrimaryKey []string
	// PartitionBy lists the PARTITIONED BY columns in order, spelled as in Columns; nil if none.
	PartitionBy []string
	// Options holds the WITH ('k' = 'v', ...) options; never nil.
	Options map[string]string
	// Comment is the table's COMMENT 'x', or "".
	Comment string
}

// ParseCreateTable parses
//
//	CREATE TABLE [IF NOT EXISTS] [database.]table (
//	    column type [NOT NULL | NULL] [[CONSTRAINT c] PRIMARY KEY [NOT ENFORCED]] [COMMENT 'x'], ...
//	    [, [CONSTRAINT c] PRIMARY KEY (col, ...) [NOT ENFORCED]]
//	)
//	[COMMENT 'x'] [PARTITIONED BY (col, ...)] [WITH ('k' = 'v', ...)] [;]
//
// The clauses after the column list may come in any order, each at most once. Column options may come
// in any order. The table constraint may appear anywhere in the column list.
//
// Column names are unique case-insensitively (as in DuckDB). Primary key and partition columns must
// be columns of the table; they match exactly or, failing that, case-insensitively, and are reported
// with the column's declared spelling.
func ParseCreateTable(sql string) (*CreateTable, error) {
	p, err := newParser("CREATE TABLE", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("create", "at start of statement"); err != nil {
		return nil, err
	}
	if err := p.expectKeyword("table", "after CREATE"); err != nil {
		return nil, err
	}
	ct := &CreateTable{Options: map[string]string{}}
	if ct.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if ct.Name, err = p.tableName(); err != nil {
		return nil, err
	}
	if t := p.peek(); isKeyword(t, "as") || isKeyword(t, "like") {
		return nil, p.syntaxErr(t, "CREATE TABLE ... %s is not supported", upper(t.text))
	}
	if err := p.expectPunct("(", "to start the column list after the table name"); err != nil {
		return nil, err
	}

	var (
		pk       []nameRef // primary key columns as written
		pkPos    = -1      // where the primary key was declared
		colIndex = map[string]int{}
	)
	declarePK := func(pos int, cols []nameRef) error {
		if pkPos >= 0 {
			return p.semanticErr(pos, "primary key declared more than once (first at offset %d)", pkPos)
		}
		pkPos, pk = pos, cols
		return nil
	}
	for {
		t := p.peek()
		item := "table constraint" // what the current list item is, for error messages
		switch {
		case isKeyword(t, "primary") && isKeyword(p.peekAt(1), "key"),
			isKeyword(t, "constraint") && isName(p.peekAt(1)) && isConstraintKeyword(p.peekAt(2)):
			if err := p.constraintName(); err != nil {
				return nil, err
			}
			kt := p.peek()
			if !isKeyword(kt, "primary") {
				return nil, p.syntaxErr(kt, "unsupported table constraint: only PRIMARY KEY is supported")
			}
			p.next()
			if err := p.expectKeyword("key", "after PRIMARY"); err != nil {
				return nil, err
			}
			cols, err := p.nameList("primary key column")
			if err != nil {
				return nil, err
			}
			if err := p.notEnforced(); err != nil {
				return nil, err
			}
			if err := declarePK(kt.pos, cols); err != nil {
				return nil, err
			}
		case isKeyword(t, "watermark") && isKeyword(p.peekAt(1), "for"),
			(isKeyword(t, "unique") || isKeyword(t, "check")) && p.peekAt(1).is("("),
			isKeyword(t, "foreign") && isKeyword(p.peekAt(1), "key"):
			return nil, p.syntaxErr(t, "unsupported table constraint: only PRIMARY KEY is supported")
		default:
			col, colPK, err := p.columnDef()
			if err != nil {
				return nil, err
			}
			for prev := range colIndex {
				if strings.EqualFold(prev, col.Name) {
					return nil, p.semanticErr(t.pos, "duplicate column %q", col.Name)
				}
			}
			item = fmt.Sprintf("column %q", col.Name)
			colIndex[col.Name] = len(ct.Columns)
			ct.Columns = append(ct.Columns, col)
			if colPK >= 0 {
				if err := declarePK(colPK, []nameRef{{name: col.Name, pos: t.pos}}); err != nil {
					return nil, err
				}
			}
		}
		if p.acceptPunct(",") {
			continue
		}
		if p.acceptPunct(")") {
			break
		}
		return nil, p.syntaxErr(p.peek(), "expected ',' or ')' after %s", item)
	}
	if len(ct.Columns) == 0 {
		return nil, p.semanticErr(p.toks[p.i-1].pos, "a table needs at least one column")
	}

	// resolve maps a written column name to the declared one.
	resolve := func(r nameRef, role string) (string, error) {
		if _, ok := colIndex[r.name]; ok {
			return r.name, nil
		}
		for name := range colIndex {
			if strings.EqualFold(name, r.name) {
				return name, nil
			}
		}
		return "", p.semanticErr(r.pos, "%s column %q is not a column of the table", role, r.name)
	}
	resolveAll := func(refs []nameRef, role string) ([]string, error) {
		out := make([]string, 0, len(refs))
		seen := map[string]bool{}
		for _, r := range refs {
			name, err := resolve(r, role)
			if err != nil {
				return nil, err
			}
			if seen[name] {
				return nil, p.semanticErr(r.pos, "%s column %q is declared twice", role, r.name)
			}
			seen[name] = true
			out = append(out, name)
		}
		return out, nil
	}
	if pk != nil {
		if ct.PrimaryKey, err = resolveAll(pk, "primary key"); err != nil {
			return nil, err
		}
		for _, name := range ct.PrimaryKey {
			ct.Columns[colIndex[name]].PrimaryKey = true
		}
	}

	// Clauses after the column list.
	var partition []nameRef
	seen := map[string]int{}
	for {
		t := p.peek()
		var clause string
		switch {
		case isKeyword(t, "comment"):
			clause = "COMMENT"
		case isKeyword(t, "partitioned"):
			clause = "PARTITIONED BY"
		case isKeyword(t, "with"):
			clause = "WITH"
		}
		if clause == "" {
			break
		}
		if first, dup := seen[clause]; dup {
			return nil, p.semanticErr(t.pos, "%s given more than once (first at offset %d)", clause, first)
		}
		seen[clause] = t.pos
		p.next()
		switch clause {
		case "COMMENT":
			if ct.Comment, err = p.stringLit("table comment"); err != nil {
				return nil, err
			}
		case "PARTITIONED BY":
			if err := p.expectKeyword("by", "after PARTITIONED"); err != nil {
				return nil, err
			}
			if partition, err = p.nameList("partition column"); err != nil {
				return nil, err
			}
		case "WITH":
			if ct.Options, err = p.options(); err != nil {
				return nil, err
			}
		}
	}
	if t := p.peek(); isKeyword(t, "as") {
		return nil, p.syntaxErr(t, "CREATE TABLE ... AS is not supported")
	}
	if err := p.end("expected COMMENT, PARTITIONED BY, WITH or end of statement after the column list"); err != nil {
		return nil, err
	}
	if partition != nil {
		if ct.PartitionBy, err = resolveAll(partition, "partition"); err != nil {
			return nil, err
		}
	}
	return ct, nil
}

func isConstraintKeyword(t token) bool {
	return isKeyword(t, "primary") || isKeyword(t, "unique") || isKeyword(t, "check") || isKeyword(t, "foreign")
}

// constraintName skips an optional CONSTRAINT name (the name is not kept).
func (p *parser) constraintName() error {
	if !p.acceptKeyword("constraint") {
		return nil
	}
	_, _, err := p.identifier("constraint name after CONSTRAINT")
	return err
}

// notEnforced consumes an optional NOT ENFORCED after a primary key.
func (p *parser) notEnforced() error {
	if !isKeyword(p.peek(), "not") || isKeyword(p.peekAt(1), "null") {
		return nil
	}
	p.next()
	return p.expectKeyword("enforced", "after PRIMARY KEY ... NOT")
}

// columnOptionKeywords end a column's type at nesting depth 0.
var columnOptionKeywords = map[string]bool{
	"not": true, "null": true, "primary": true, "comment": true, "constraint": true,
	// Recognised only to be rejected with a clear message.
	"default": true, "as": true, "metadata": true, "generated": true, "unique": true,
	"references": true, "check": true, "collate": true, "virtual": true,
}

// columnDef reads: name type {option}. pkPos is the offset of a column-level PRIMARY KEY, or -1.
func (p *parser) columnDef() (col ColumnDef, pkPos int, err error) {
	pkPos = -1
	name, _, err := p.identifier("column name or table constraint")
	if err != nil {
		return col, pkPos, err
	}
	col.Name = name
	if col.Type, err = p.columnType(name); err != nil {
		return col, pkPos, err
	}
	seen := map[string]int{}
	once := func(opt string, pos int) error {
		if first, dup := seen[opt]; dup {
			return p.semanticErr(pos, "%s given more than once for column %q (first at offset %d)", opt, name, first)
		}
		seen[opt] = pos
		return nil
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokEOF || t.is(",") || t.is(")") || !isKeyword(t, "not") && !isKeyword(t, "null") &&
			!isKeyword(t, "primary") && !isKeyword(t, "constraint") && !isKeyword(t, "comment") &&
			!(t.kind == tokIdent && columnOptionKeywords[t.text]):
			if _, ok := seen["NULL"]; ok {
				if _, ok := seen["NOT NULL"]; ok {
					return col, pkPos, p.semanticErr(seen["NULL"], "column %q is declared both NULL and NOT NULL", name)
				}
			}
			return col, pkPos, nil
		case isKeyword(t, "not"):
			p.next()
			if err := p.expectKeyword("null", "after NOT"); err != nil {
				return col, pkPos, err
			}
			if err := once("NOT NULL", t.pos); err != nil {
				return col, pkPos, err
			}
			col.NotNull = true
		case isKeyword(t, "null"):
			p.next()
			if err := once("NULL", t.pos); err != nil {
				return col, pkPos, err
			}
		case isKeyword(t, "primary"), isKeyword(t, "constraint"):
			if err := p.constraintName(); err != nil {
				return col, pkPos, err
			}
			kt := p.peek()
			if !isKeyword(kt, "primary") {
				return col, pkPos, p.syntaxErr(kt, "unsupported constraint on column %q: only PRIMARY KEY is supported", name)
			}
			p.next()
			if err := p.expectKeyword("key", "after PRIMARY"); err != nil {
				return col, pkPos, err
			}
			if err := p.notEnforced(); err != nil {
				return col, pkPos, err
			}
			if err := once("PRIMARY KEY", kt.pos); err != nil {
				return col, pkPos, err
			}
			pkPos = kt.pos
		case isKeyword(t, "comment"):
			p.next()
			if err := once("COMMENT", t.pos); err != nil {
				return col, pkPos, err
			}
			if col.Comment, err = p.stringLit(fmt.Sprintf("comment of column %q", name)); err != nil {
				return col, pkPos, err
			}
		case t.kind == tokIdent && columnOptionKeywords[t.text]:
			return col, pkPos, p.syntaxErr(t, "unsupported column option %s for column %q", upper(t.text), name)
		default:
			return col, pkPos, nil // the caller reports that ',' or ')' was expected
		}
	}
}

// MaxTypeDepth bounds how deeply a column type nests composite types, as the
// lake does (paimontype.MaxTypeDepth): ARRAY<INT> has depth 1. A type's brackets
// may nest one level more, for parameters such as DECIMAL(10, 2).
const MaxTypeDepth = 32

// columnType reads a column type up to, at nesting depth 0, ',' or ')' or a column option keyword.
// '(' ')' and '<' '>' nest. See ColumnDef.Type for the whitespace rule.
func (p *parser) columnType(col string) (string, error) {
	var (
		b     strings.Builder
		stack []string // expected closers
		prev  token
		n     int
	)
	for {
		t := p.peek()
		if len(stack) == 0 && (t.kind == tokEOF || t.is(",") || t.is(")") ||
			(t.kind == tokIdent && (columnOptionKeywords[t.text] || p.typeEnd[t.text]) && t.end-t.pos == len(t.text)) ||
			// Clauses that follow the column list: the user forgot the ')'.
			isKeyword(t, "with") && p.peekAt(1).is("(") ||
			isKeyword(t, "partitioned") && isKeyword(p.peekAt(1), "by")) {
			break
		}
		switch {
		case t.kind == tokEOF:
			return "", p.syntaxErr(t, "unterminated type of column %q: expected '%s'", col, stack[len(stack)-1])
		case t.is("(") || t.is("<") || t.is("["):
			if len(stack) > MaxTypeDepth {
				return "", p.syntaxErr(t, "type of column %q nested deeper than %d levels", col, MaxTypeDepth)
			}
			stack = append(stack, map[string]string{"(": ")", "<": ">", "[": "]"}[t.text])
		case t.is(")"), t.is(">"), t.is("]"):
			if len(stack) == 0 {
				return "", p.syntaxErr(t, "unbalanced '%s' in type of column %q", t.text, col)
			}
			if want := stack[len(stack)-1]; t.text != want {
				return "", p.syntaxErr(t, "expected '%s' in type of column %q", want, col)
			}
			stack = stack[:len(stack)-1]
		case t.is(","), t.kind == tokIdent, t.kind == tokQuotedIdent, t.kind == tokNumber:
		case t.kind == tokString && isKeyword(prev, "comment"): // ROW<a INT COMMENT 'x'>
		default:
			return "", p.syntaxErr(t, "unexpected token in type of column %q", col)
		}
		if n > 0 && p.src[prev.end:t.pos] != "" && !prev.is("(") && !prev.is("<") && !prev.is("[") &&
			!t.is("(") && !t.is(")") && !t.is("<") && !t.is(">") && !t.is(",") && !t.is("[") && !t.is("]") {
			b.WriteByte(' ')
		}
		b.WriteString(p.src[t.pos:t.end])
		prev = t
		n++
		p.next()
	}
	if n == 0 {
		return "", p.syntaxErr(p.peek(), "expected a type for column %q", col)
	}
	return b.String(), nil
}
