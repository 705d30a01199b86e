package sqlparse

import "strings"

// Statement is one statement of a script, as Split cuts it.
type Statement struct {
	Text   string // from its first token to its last: no comments around it, no ';'
	Offset int    // byte offset of Text in the script
	Line   int    // line of Text's first byte, counting from 1
}

// Split cuts a script into the statements that a ';' ends, by the lexer
// that agrees with DuckDB's about where strings ('..', E'..',
// $tag$..$tag$), quoted identifiers and comments (--, nested /* */) end,
// so a ';' inside any of them ends nothing. Empty statements (";;", or
// only comments before a ';') are dropped.
//
// rest is the offset of the text after the last ';' Split used: the part
// of the script no ';' ends yet. A reader of a script line by line keeps
// it and calls Split again once more text has come; at the end of the
// script, Last says what it holds. A lexical error (an unterminated
// string, an invalid UTF-8 byte) stops the cut where the statement
// holding it starts, so that statement and all after it stay in rest.
func Split(script string) (stmts []Statement, rest int) {
	toks, _ := lexTokens(script)
	lines := lineCounter{src: script}
	start := -1 // index of the current statement's first token
	for i, t := range toks {
		switch {
		case t.kind == tokEOF:
			return stmts, rest
		case t.is(";"):
			if start >= 0 {
				first, last := toks[start], toks[i-1]
				stmts = append(stmts, Statement{Text: script[first.pos:last.end], Offset: first.pos, Line: lines.at(first.pos)})
				start = -1
			}
			rest = t.end
		case start < 0:
			start = i
		}
	}
	return stmts, rest
}

// Last returns the statement that no ';' ends in text: what Split left in
// rest at the end of a script, which a script may end without a ';'. ok is
// false when text holds nothing but whitespace and comments. On a lexical
// error (an unterminated string, quoted identifier or comment, a NUL byte,
// invalid UTF-8) err is the *Error, and st's Offset and Line are where the
// error starts. Text holding a ';' is cut by Split first, so Last sees
// only what follows its last statement.
func Last(text string) (st Statement, ok bool, err error) {
	_, rest := Split(text)
	toks, lerr := lex(text[rest:])
	lines := lineCounter{src: text}
	if lerr != nil {
		off := rest + lerr.Offset
		lerr.Offset = off
		return Statement{Offset: off, Line: lines.at(off)}, true, lerr
	}
	if len(toks) < 2 {
		return Statement{}, false, nil
	}
	first, last := toks[0], toks[len(toks)-2] // toks ends with tokEOF
	// No ';' is left after rest, so every token is the statement's.
	return Statement{Text: text[rest+first.pos : rest+last.end], Offset: rest + first.pos, Line: lines.at(rest + first.pos)}, true, nil
}

// lineCounter turns offsets, asked for in increasing order, into lines.
type lineCounter struct {
	src  string
	line int // line at offset pos; 0 before the first call
	pos  int
}

func (c *lineCounter) at(off int) int {
	if c.line == 0 {
		c.line = 1
	}
	c.line += strings.Count(c.src[c.pos:off], "\n")
	c.pos = off
	return c.line
}
