package sqlparse

import "strconv"

// Kind classifies a statement by its leading keywords.
type Kind int

const (
	KindQuery           Kind = iota // SELECT, WITH, VALUES, FROM, TABLE, SHOW, DESCRIBE, EXPLAIN, SUMMARIZE, (SELECT ...)
	KindCreateDatabase              // CREATE DATABASE|SCHEMA ...
	KindDropDatabase                // DROP DATABASE|SCHEMA ...
	KindCreateTable                 // CREATE TABLE ...
	KindDropTable                   // DROP TABLE ...
	KindAlterTable                  // ALTER TABLE ...
	KindInsert                      // INSERT INTO ...
	KindInsertOverwrite             // INSERT OVERWRITE ...
	KindUpdate                      // UPDATE ...
	KindDelete                      // DELETE ...
	KindUse                         // USE ...
	KindSet                         // SET ..., RESET ...
	KindCall                        // CALL procedure(...)
	KindOther                       // anything else; the caller rejects it
)

var kindNames = [...]string{
	KindQuery:           "QUERY",
	KindCreateDatabase:  "CREATE DATABASE",
	KindDropDatabase:    "DROP DATABASE",
	KindCreateTable:     "CREATE TABLE",
	KindDropTable:       "DROP TABLE",
	KindAlterTable:      "ALTER TABLE",
	KindInsert:          "INSERT",
	KindInsertOverwrite: "INSERT OVERWRITE",
	KindUpdate:          "UPDATE",
	KindDelete:          "DELETE",
	KindUse:             "USE",
	KindSet:             "SET",
	KindCall:            "CALL",
	KindOther:           "OTHER",
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Statements reports how many statements sql holds by flightd's lexer (empty ones between two ';' do
// not count). It serves error messages only: which text DuckDB runs is DuckDB's parser's decision.
func Statements(sql string) int {
	toks, _ := lex(sql)
	n, empty := 0, true
	for _, t := range toks {
		switch {
		case t.kind == tokEOF || t.is(";"):
			if !empty {
				n++
			}
			empty = true
		default:
			empty = false
		}
	}
	return n
}

// Classify reports what kind of statement sql is, from its leading keywords after whitespace, comments
// and (for queries) opening parentheses. It never fails: text it cannot classify is KindOther.
//
// Beyond the leading keywords, Classify is deliberately conservative about what it lets through as
// KindQuery, since queries are handed to DuckDB unparsed:
//   - text holding more than one statement ("SELECT 1; DROP ...") is KindOther; a trailing ';' is fine;
//   - WITH ... followed by anything but a query (e.g. WITH x AS (...) INSERT ...) is KindOther;
//   - EXPLAIN [ANALYZE] of anything but a query is KindOther;
//   - a parenthesised statement that is not a query is KindOther.
//
// A classification is not a validation: KindCreateTable means the text starts with CREATE TABLE, not
// that ParseCreateTable will accept it. If the text has a lexical error (say an unterminated string),
// Classify judges it by the tokens before the error; DuckDB or the Parse function reports the error.
func Classify(sql string) Kind {
	toks, _ := lex(sql)
	return classify(toks)
}

// classify is Classify of sql's tokens (lex's, which it does not change).
func classify(toks []token) Kind {
	// Reject multiple statements: anything but ';' after the first ';'.
	for i, t := range toks {
		if t.is(";") {
			for _, u := range toks[i+1:] {
				if u.kind != tokEOF && !u.is(";") {
					return KindOther
				}
			}
			toks = append(toks[:i:i], token{kind: tokEOF, pos: t.pos, end: t.pos})
			break
		}
	}
	return classifyTokens(toks, 0)
}

// maxClassifyDepth bounds the recursion through EXPLAIN and WITH.
const maxClassifyDepth = 8

// classifyTokens classifies the statement starting at toks[0]. toks ends with tokEOF.
func classifyTokens(toks []token, depth int) Kind {
	if depth > maxClassifyDepth {
		return KindOther
	}
	i := 0
	for toks[i].is("(") {
		i++
	}
	parens := i > 0
	k := classifyFrom(toks[i:], depth)
	if parens && k != KindQuery {
		return KindOther
	}
	return k
}

func classifyFrom(toks []token, depth int) Kind {
	at := func(n int) token {
		if n >= len(toks) {
			return toks[len(toks)-1]
		}
		return toks[n]
	}
	t := toks[0]
	if t.kind != tokIdent {
		return KindOther
	}
	switch {
	case isKeyword(t, "select"), isKeyword(t, "values"), isKeyword(t, "from"), isKeyword(t, "table"),
		isKeyword(t, "show"), isKeyword(t, "describe"), isKeyword(t, "desc"), isKeyword(t, "summarize"):
		return KindQuery
	case isKeyword(t, "with"):
		return classifyWith(toks, depth)
	case isKeyword(t, "explain"):
		j := 1
		if isKeyword(at(j), "analyze") || isKeyword(at(j), "analyse") {
			j++
		}
		if j >= len(toks) || classifyTokens(toks[j:], depth+1) != KindQuery {
			return KindOther
		}
		return KindQuery
	case isKeyword(t, "create"):
		switch u := at(1); {
		case isKeyword(u, "database"), isKeyword(u, "schema"):
			return KindCreateDatabase
		case isKeyword(u, "table"):
			return KindCreateTable
		}
	case isKeyword(t, "drop"):
		switch u := at(1); {
		case isKeyword(u, "database"), isKeyword(u, "schema"):
			return KindDropDatabase
		case isKeyword(u, "table"):
			return KindDropTable
		}
	case isKeyword(t, "alter"):
		if isKeyword(at(1), "table") {
			return KindAlterTable
		}
	case isKeyword(t, "insert"):
		switch u := at(1); {
		case isKeyword(u, "into"):
			return KindInsert
		case isKeyword(u, "overwrite"):
			return KindInsertOverwrite
		}
	case isKeyword(t, "update"):
		return KindUpdate
	case isKeyword(t, "delete"):
		return KindDelete
	case isKeyword(t, "use"):
		return KindUse
	case isKeyword(t, "set"), isKeyword(t, "reset"):
		return KindSet
	case isKeyword(t, "call"):
		return KindCall
	}
	return KindOther
}

// classifyWith finds the statement after the common table expressions of toks (which starts with
// WITH): the first token following a top-level ')' that does not continue the CTE list. It is a query
// only if that statement is.
func classifyWith(toks []token, depth int) Kind {
	level := 0
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.is("("):
			level++
		case t.is(")"):
			level--
			if level < 0 {
				return KindOther
			}
			if level > 0 {
				continue
			}
			n := toks[i+1] // toks ends with EOF, and t is not EOF
			switch {
			case n.kind == tokEOF:
				return KindQuery // incomplete; DuckDB reports it
			case n.is(","), isKeyword(n, "as"), isKeyword(n, "using"), isKeyword(n, "key"):
				continue // next CTE, or the body after a column list / USING KEY (...)
			}
			if classifyTokens(toks[i+1:], depth+1) != KindQuery {
				return KindOther
			}
			return KindQuery
		}
	}
	return KindQuery // no CTE body found; DuckDB reports the error
}
