package sqlparse

import (
	"strings"
	"unicode/utf8"
)

// tokenKind is the lexical class of a token.
type tokenKind int

const (
	tokEOF         tokenKind = iota // end of input; pos == end == len(src)
	tokIdent                        // unquoted identifier or keyword; text is lower-cased
	tokQuotedIdent                  // "x" or `x`; text is the identifier with escapes removed
	tokString                       // 'x'; text is the value with '' escapes removed
	tokOtherString                  // E'x' or $tag$x$tag$ (DuckDB spellings); only ever part of a query
	tokNumber                       // 12, 1.5, 1e10; text is as written
	tokPunct                        // any other single character; text is that character
)

// token is one lexical token. pos and end are byte offsets into the source: src[pos:end] is the token
// exactly as written.
type token struct {
	kind     tokenKind
	text     string
	pos, end int
}

// is reports whether t is the punctuation character c.
func (t token) is(c string) bool { return t.kind == tokPunct && t.text == c }

// lex splits src into tokens, dropping whitespace and comments. The result always ends with a tokEOF
// token. On a lexical error (an unterminated string, quoted identifier or block comment) it returns the
// tokens before the error, terminated by tokEOF, together with an *Error.
func lex(src string) ([]token, *Error) {
	toks, err := lexTokens(src)
	if err != nil {
		err.Found = quoteSource(src[err.Offset:])
	}
	return toks, err
}

func lexTokens(src string) ([]token, *Error) {
	if i := strings.IndexByte(src, 0); i >= 0 {
		// DuckDB's parser reads text only up to a NUL byte.
		return []token{{kind: tokEOF, pos: len(src), end: len(src)}}, &Error{Msg: "NUL byte in statement text", Offset: i}
	}
	if !utf8.ValidString(src) {
		for i := 0; ; {
			r, n := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && n == 1 {
				return []token{{kind: tokEOF, pos: len(src), end: len(src)}}, &Error{Msg: "invalid UTF-8", Offset: i}
			}
			i += n
		}
	}
	var toks []token
	i := 0
	for {
		var err *Error
		i, err = skipSpace(src, i)
		if err != nil {
			return append(toks, token{kind: tokEOF, pos: len(src), end: len(src)}), err
		}
		if i >= len(src) {
			return append(toks, token{kind: tokEOF, pos: len(src), end: len(src)}), nil
		}
		var t token
		t, err = lexOne(src, i)
		if err != nil {
			return append(toks, token{kind: tokEOF, pos: len(src), end: len(src)}), err
		}
		toks = append(toks, t)
		i = t.end
	}
}

// skipSpace skips whitespace, -- line comments and (nestable, as in DuckDB/PostgreSQL) /* */ comments.
// Whitespace is ASCII only, and a line comment ends at '\n' or '\r', as in DuckDB's lexer (PostgreSQL's
// scan.l): a byte above 0x7F is part of an identifier, never space.
func skipSpace(src string, i int) (int, *Error) {
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			nl := strings.IndexAny(src[i:], "\n\r")
			if nl < 0 {
				return len(src), nil
			}
			i += nl + 1
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			start := i
			depth := 0
			for {
				if i+1 >= len(src) {
					return i, &Error{Msg: "unterminated block comment", Offset: start}
				}
				switch {
				case src[i] == '/' && src[i+1] == '*':
					depth++
					i += 2
				case src[i] == '*' && src[i+1] == '/':
					depth--
					i += 2
				default:
					i++
				}
				if depth == 0 {
					break
				}
			}
		default:
			return i, nil
		}
	}
	return i, nil
}

// The byte classes of DuckDB's lexer (PostgreSQL's scan.l): ident_start [A-Za-z\200-\377_],
// ident_cont adds [0-9$]; a dollar-quote tag is dolq_start (= ident_start) then dolq_cont
// [A-Za-z\200-\377_0-9]. Every byte of a multi-byte character counts as a letter, whatever the
// character is ('€', a non-breaking space).
func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c == '$' || isDigit(c) }

func isTagPart(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// lexOne reads the token starting at src[i], which is not whitespace or a comment.
func lexOne(src string, i int) (token, *Error) {
	c := src[i]
	switch {
	case c == '\'':
		return lexQuoted(src, i, '\'', tokString, "string literal")
	case c == '"':
		return lexQuoted(src, i, '"', tokQuotedIdent, "quoted identifier")
	case c == '`':
		return lexQuoted(src, i, '`', tokQuotedIdent, "quoted identifier")
	case (c == 'e' || c == 'E') && i+1 < len(src) && src[i+1] == '\'':
		return lexEscapeString(src, i)
	case c == '$':
		if t, ok, err := lexDollarString(src, i); ok || err != nil {
			return t, err
		}
	case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
		return lexNumber(src, i), nil
	}
	if isIdentStart(c) {
		j := i + 1
		for j < len(src) && isIdentPart(src[j]) {
			j++
		}
		return token{kind: tokIdent, text: strings.ToLower(src[i:j]), pos: i, end: j}, nil
	}
	return token{kind: tokPunct, text: src[i : i+1], pos: i, end: i + 1}, nil
}

// lexQuoted reads a token delimited by q in which a doubled q stands for one q.
func lexQuoted(src string, i int, q byte, kind tokenKind, what string) (token, *Error) {
	var b strings.Builder
	j := i + 1
	for {
		k := strings.IndexByte(src[j:], q)
		if k < 0 {
			return token{}, &Error{Msg: "unterminated " + what, Offset: i}
		}
		b.WriteString(src[j : j+k])
		j += k + 1
		if j < len(src) && src[j] == q {
			b.WriteByte(q)
			j++
			continue
		}
		return token{kind: kind, text: b.String(), pos: i, end: j}, nil
	}
}

// lexEscapeString reads a DuckDB/PostgreSQL E'...' string, in which a backslash escapes the next byte.
// Its text is left as written: such strings are only ever part of a query handed on to DuckDB.
func lexEscapeString(src string, i int) (token, *Error) {
	j := i + 2
	for j < len(src) {
		switch src[j] {
		case '\\':
			j += 2
		case '\'':
			if j+1 < len(src) && src[j+1] == '\'' {
				j += 2
				continue
			}
			return token{kind: tokOtherString, text: src[i : j+1], pos: i, end: j + 1}, nil
		default:
			j++
		}
	}
	return token{}, &Error{Msg: "unterminated string literal", Offset: i}
}

// lexDollarString reads a DuckDB/PostgreSQL $tag$...$tag$ string. ok is false when src[i:] does not
// start a dollar-quoted string (e.g. a $1 parameter).
func lexDollarString(src string, i int) (t token, ok bool, err *Error) {
	j := i + 1
	for j < len(src) && src[j] != '$' {
		if !isIdentStart(src[j]) && !(j > i+1 && isTagPart(src[j])) {
			return token{}, false, nil
		}
		j++
	}
	if j >= len(src) {
		return token{}, false, nil
	}
	tag := src[i : j+1]
	k := strings.Index(src[j+1:], tag)
	if k < 0 {
		return token{}, true, &Error{Msg: "unterminated dollar-quoted string", Offset: i}
	}
	end := j + 1 + k + len(tag)
	return token{kind: tokOtherString, text: src[i:end], pos: i, end: end}, true, nil
}

// lexNumber reads digits [. digits] [e [+-] digits].
func lexNumber(src string, i int) token {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	return token{kind: tokNumber, text: src[i:j], pos: i, end: j}
}

// Hint returns the offset of the first Flink-style hint comment (/*+ ...
// */) in sql, outside strings and quoted names, or -1. DuckDB reads such a
// comment as a comment, so a hint such as OPTIONS('scan.snapshot-id' = '3')
// would be ignored without a word; flightd refuses it instead.
func Hint(sql string) int {
	toks, err := lexTokens(sql)
	if err != nil {
		return -1
	}
	return hint(sql, toks)
}

// hint is Hint of sql whose tokens, lexed without error, are toks.
func hint(sql string, toks []token) int {
	prev := 0
	for _, t := range toks {
		if k := strings.Index(sql[prev:t.pos], "/*+"); k >= 0 {
			return prev + k
		}
		prev = t.end
	}
	return -1
}
