package sqlparse

import "strings"

// Insert is INSERT INTO name [(cols)] <query>.
type Insert struct {
	Name Name
	// Columns is the optional column list; nil when absent.
	Columns []string
	// Query is the source query exactly as written, from its first token to its last: leading and
	// trailing whitespace and comments and the trailing ';' are dropped, everything in between (comments
	// included) is kept. It starts with SELECT, WITH, VALUES, FROM, TABLE or '('.
	Query string
}

// ParseInsert parses INSERT INTO [database.]table [(col, ...)] query [;]. The query is not parsed
// beyond checking that it starts like a query and is a single statement; the caller runs it on DuckDB.
// INSERT OVERWRITE is not accepted.
func ParseInsert(sql string) (*Insert, error) {
	p, err := newParser("INSERT", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("insert", "at start of statement"); err != nil {
		return nil, err
	}
	if err := p.expectKeyword("into", "after INSERT"); err != nil {
		return nil, err
	}
	var ins Insert
	if ins.Name, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.peek().is("(") && !startsQuery(p.peekAt(1)) {
		cols, err := p.nameList("insert column")
		if err != nil {
			return nil, err
		}
		for i, c := range cols {
			for _, prev := range cols[:i] {
				if strings.EqualFold(prev.name, c.name) {
					return nil, p.semanticErr(c.pos, "column %q is listed twice", c.name)
				}
			}
			ins.Columns = append(ins.Columns, c.name)
		}
	}
	first := p.peek()
	if !startsQuery(first) {
		after := "table name"
		if ins.Columns != nil {
			after = "column list"
		}
		return nil, p.syntaxErr(first, "expected a query (SELECT, VALUES, WITH, FROM, TABLE or '(') after the %s", after)
	}
	// The query runs to the first ';', which must end the input.
	last := first
	for {
		t := p.peek()
		if t.kind == tokEOF {
			break
		}
		if t.is(";") {
			if err := p.end(""); err != nil {
				return nil, err
			}
			break
		}
		last = t
		p.next()
	}
	ins.Query = sql[first.pos:last.end]
	return &ins, nil
}

// startsQuery reports whether t can start the source query of an INSERT.
func startsQuery(t token) bool {
	return t.is("(") || isKeyword(t, "select") || isKeyword(t, "with") || isKeyword(t, "values") ||
		isKeyword(t, "from") || isKeyword(t, "table")
}

// ValuesListRow is one row of a VALUES list: its text as written and how
// many values it holds.
type ValuesListRow struct {
	Text   string
	Values int
}

// ValuesList returns the rows of query when it is nothing but
// VALUES (...), (...), ...; ok is false for any other query (one with
// ORDER BY or LIMIT, say), which the caller checks another way.
func ValuesList(query string) (rows []ValuesListRow, ok bool) {
	toks, err := lex(query)
	if err != nil || !isKeyword(toks[0], "values") {
		return nil, false
	}
	i := 1
	for {
		if !toks[i].is("(") {
			return nil, false
		}
		start, depth, n := toks[i].pos, 0, 0
		for {
			t := toks[i]
			switch {
			case t.kind == tokEOF:
				return nil, false
			case t.is("(") || t.is("[") || t.is("{"):
				depth++
			case t.is(")") || t.is("]") || t.is("}"):
				depth--
			case t.is(",") && depth == 1:
				n++
			}
			if depth == 1 && n == 0 && !t.is("(") {
				n = 1 // the row holds a first value
			}
			i++
			if depth == 0 {
				break
			}
		}
		rows = append(rows, ValuesListRow{Text: query[start:toks[i-1].end], Values: n})
		switch {
		case toks[i].is(","):
			i++
		case toks[i].kind == tokEOF:
			return rows, true
		default:
			return nil, false
		}
	}
}
