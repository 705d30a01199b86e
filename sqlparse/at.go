package sqlparse

// AtSpan is where a table reference with DuckDB's time-travel clause is in
// a statement's text: the table's name, an optional alias, then
// AT ( ... ).
type AtSpan struct {
	NameStart, NameEnd int // the (possibly qualified) name
	AtStart, AtEnd     int // AT ( ... ), from AT to past its ')'
}

// AtClause reads the reference that starts at offset start of sql (where
// DuckDB's parse tree locates a table reference): a name of one or more
// dot-separated parts, [AS] alias, then AT and a parenthesized clause. ok is
// false when the text there is not such a reference.
func AtClause(sql string, start int) (AtSpan, bool) {
	if start < 0 || start >= len(sql) {
		return AtSpan{}, false
	}
	toks, err := lex(sql[start:])
	if err != nil {
		return AtSpan{}, false
	}
	p := &parser{src: sql[start:], toks: toks}
	var s AtSpan
	if !isName(p.peek()) || p.peek().pos != 0 {
		return AtSpan{}, false
	}
	s.NameEnd = p.next().end
	for p.peek().is(".") {
		p.next()
		if !isName(p.peek()) {
			return AtSpan{}, false
		}
		s.NameEnd = p.next().end
	}
	if p.acceptKeyword("as") {
		if !isName(p.peek()) {
			return AtSpan{}, false
		}
		p.next()
	} else if t := p.peek(); isName(t) && !isKeyword(t, "at") {
		p.next()
	}
	if !isKeyword(p.peek(), "at") {
		return AtSpan{}, false
	}
	s.AtStart = p.next().pos
	if !p.peek().is("(") {
		return AtSpan{}, false
	}
	depth := 0
	for {
		t := p.next()
		switch {
		case t.kind == tokEOF:
			return AtSpan{}, false
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
			if depth == 0 {
				s.AtEnd = t.end
				s.NameStart += start
				s.NameEnd += start
				s.AtStart += start
				s.AtEnd += start
				return s, true
			}
		}
	}
}
