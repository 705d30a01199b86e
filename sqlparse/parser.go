package sqlparse

import "fmt"

// parser is a cursor over the tokens of one statement.
type parser struct {
	src  string
	toks []token // always ends with tokEOF
	i    int
	stmt string // statement name used in error messages, e.g. "CREATE TABLE"
	// typeEnd are the (lower-case) words that end a column's type besides
	// its options, e.g. FIRST and AFTER of ADD COLUMN.
	typeEnd map[string]bool
}

func newParser(stmt, src string) (*parser, error) {
	toks, err := lex(src)
	if err != nil {
		err.Statement = stmt
		return nil, err
	}
	return &parser{src: src, toks: toks, stmt: stmt}, nil
}

// peekAt returns the token n places ahead (0 = current); past the end it returns the EOF token.
func (p *parser) peekAt(n int) token {
	if p.i+n >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+n]
}

func (p *parser) peek() token { return p.peekAt(0) }

func (p *parser) next() token {
	t := p.peek()
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

// isKeyword reports whether t is the unquoted keyword kw (given in lower case). Keywords match
// ASCII-case-insensitively only: the length check rejects non-ASCII letters that lower-case to ASCII
// (e.g. U+212A KELVIN SIGN), which are never keywords.
func isKeyword(t token, kw string) bool {
	return t.kind == tokIdent && t.text == kw && t.end-t.pos == len(kw)
}

// isName reports whether t can be an identifier.
func isName(t token) bool { return t.kind == tokIdent || t.kind == tokQuotedIdent }

// syntaxErr reports that the token t was unexpected.
func (p *parser) syntaxErr(t token, format string, args ...any) error {
	return &Error{Statement: p.stmt, Msg: fmt.Sprintf(format, args...), Offset: t.pos, Found: describe(p.src, t)}
}

// semanticErr reports an error about a well-formed construct at offset off.
func (p *parser) semanticErr(off int, format string, args ...any) error {
	return &Error{Statement: p.stmt, Msg: fmt.Sprintf(format, args...), Offset: off}
}

func (p *parser) acceptKeyword(kw string) bool {
	if isKeyword(p.peek(), kw) {
		p.next()
		return true
	}
	return false
}

// expectKeyword consumes the keyword kw (lower case) or fails with "expected KW <context>".
func (p *parser) expectKeyword(kw, context string) error {
	if p.acceptKeyword(kw) {
		return nil
	}
	return p.syntaxErr(p.peek(), "expected %s %s", upper(kw), context)
}

func (p *parser) acceptPunct(c string) bool {
	if p.peek().is(c) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectPunct(c, context string) error {
	if p.acceptPunct(c) {
		return nil
	}
	return p.syntaxErr(p.peek(), "expected '%s' %s", c, context)
}

// identifier reads one identifier: unquoted ones are lower-cased, quoted ones kept exactly.
func (p *parser) identifier(what string) (string, token, error) {
	t := p.peek()
	if !isName(t) {
		return "", t, p.syntaxErr(t, "expected %s", what)
	}
	if t.kind == tokQuotedIdent && t.text == "" {
		return "", t, p.syntaxErr(t, "empty quoted identifier is not allowed as %s", what)
	}
	p.next()
	return t.text, t, nil
}

// simpleName reads an unqualified name (a database name).
func (p *parser) simpleName(what string) (string, error) {
	name, _, err := p.identifier(what)
	if err != nil {
		return "", err
	}
	if t := p.peek(); t.is(".") {
		return "", p.syntaxErr(t, "%s must not be qualified", what)
	}
	return name, nil
}

// tableName reads [database.]table.
func (p *parser) tableName() (Name, error) {
	first, _, err := p.identifier("table name")
	if err != nil {
		return Name{}, err
	}
	if !p.acceptPunct(".") {
		return Name{Table: first}, nil
	}
	second, _, err := p.identifier("table name after '.'")
	if err != nil {
		return Name{}, err
	}
	if t := p.peek(); t.is(".") {
		return Name{}, p.syntaxErr(t, "too many name parts: expected [database.]table")
	}
	return Name{Database: first, Table: second}, nil
}

// ifClause reports whether the next tokens are IF <keyword-or-name>, i.e. an IF [NOT] EXISTS clause
// rather than an object that happens to be called "if".
func (p *parser) ifClause() bool {
	return isKeyword(p.peek(), "if") && isName(p.peekAt(1))
}

// ifNotExists consumes an optional IF NOT EXISTS.
func (p *parser) ifNotExists() (bool, error) {
	if !p.ifClause() {
		return false, nil
	}
	p.next()
	if err := p.expectKeyword("not", "after IF"); err != nil {
		return false, err
	}
	if err := p.expectKeyword("exists", "after IF NOT"); err != nil {
		return false, err
	}
	return true, nil
}

// ifExists consumes an optional IF EXISTS.
func (p *parser) ifExists() (bool, error) {
	if !p.ifClause() {
		return false, nil
	}
	p.next()
	if err := p.expectKeyword("exists", "after IF"); err != nil {
		return false, err
	}
	return true, nil
}

// stringLit reads a single-quoted string literal.
func (p *parser) stringLit(what string) (string, error) {
	t := p.peek()
	if t.kind != tokString {
		return "", p.syntaxErr(t, "expected %s as a single-quoted string", what)
	}
	p.next()
	return t.text, nil
}

// end accepts an optional trailing ';' and requires the end of input. context describes what else
// could have followed, e.g. "expected WITH or end of statement".
func (p *parser) end(expected string) error {
	if p.acceptPunct(";") {
		if t := p.peek(); t.kind != tokEOF {
			return p.syntaxErr(t, "multiple statements are not supported: unexpected text after ';'")
		}
		return nil
	}
	if t := p.peek(); t.kind != tokEOF {
		return p.syntaxErr(t, "%s", expected)
	}
	return nil
}

func upper(kw string) string {
	b := []byte(kw)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// nameRef is an identifier together with where it was written.
type nameRef struct {
	name string
	pos  int
}

// nameList reads '(' name {',' name} ')'.
func (p *parser) nameList(what string) ([]nameRef, error) {
	if err := p.expectPunct("(", "to start the "+what+" list"); err != nil {
		return nil, err
	}
	var out []nameRef
	for {
		name, t, err := p.identifier(what + " name")
		if err != nil {
			return nil, err
		}
		out = append(out, nameRef{name: name, pos: t.pos})
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")", "or ',' in "+what+" list"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// options reads '(' 'k' = 'v' {',' 'k' = 'v'} ')'.
func (p *parser) options() (map[string]string, error) {
	if err := p.expectPunct("(", "to start the option list"); err != nil {
		return nil, err
	}
	opts := map[string]string{}
	for {
		kt := p.peek()
		key, err := p.stringLit("option key")
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, p.semanticErr(kt.pos, "empty option key")
		}
		if _, dup := opts[key]; dup {
			return nil, p.semanticErr(kt.pos, "duplicate option %q", key)
		}
		if err := p.expectPunct("=", fmt.Sprintf("after option key %q", key)); err != nil {
			return nil, err
		}
		val, err := p.stringLit(fmt.Sprintf("value of option %q", key))
		if err != nil {
			return nil, err
		}
		opts[key] = val
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")", "or ',' in option list"); err != nil {
			return nil, err
		}
		return opts, nil
	}
}
