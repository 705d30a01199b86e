package plan

import (
	"fmt"
	"strings"
	"sync"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/sqlparse"
)

// Statement is what flightd reads of a statement's text once, where the
// statement enters the server (engine.Engine's Analyze), so that every
// stage after it, describing, admitting and running the statement, uses
// it instead of reading the text again: in one pass of sqlparse's lexer
// its kind, hint comment and parameters; for a query its shape (ShapeOf)
// and the query an EXPLAIN explains; and, set by the first stage that
// needs them, its INSERT's parse and DuckDB's parse tree. It implements
// engine.Statement.
//
// A Statement is safe for concurrent use (a prepared statement's serves
// each of its executions); what it learns after Analyze it learns once.
type Statement struct {
	sql   string
	lexed sqlparse.Analysis
	nul   int // the offset of the first NUL byte, -1 when none
	// spellErr is why the text's time-travel spellings could not be
	// rewritten (sqlparse.RewriteTravels).
	spellErr error

	// A query's shape (ShapeOf), and the query it explains when it is an
	// EXPLAIN [ANALYZE] (DuckDB serialises only that query).
	shapeKey  string
	lits      []Literal
	cacheable bool
	explains  *Statement
	analyze   bool

	insertOnce sync.Once
	insert     *sqlparse.Insert
	insertErr  error
	row        sqlparse.ValuesRow
	rowOK      bool

	mu      sync.Mutex
	treeSet bool
	tree    *Object
	parsed  bool
}

var _ engine.Statement = (*Statement)(nil)

// Analyze reads sql (see Statement). A query's or an INSERT's time
// travel spelled as Spark, Flink or a Paimon OPTIONS hint spell it
// becomes DuckDB's AT clause first (sqlparse.RewriteTravels): the
// statement is that text from here on.
func Analyze(sql string) *Statement {
	st := &Statement{sql: sql, lexed: sqlparse.Analyze(sql), nul: strings.IndexByte(sql, 0)}
	if k := st.lexed.Kind; k == sqlparse.KindQuery || k == sqlparse.KindInsert {
		text, err := sqlparse.RewriteTravels(sql)
		if err != nil {
			st.spellErr = err
		} else if text != sql {
			st.sql, st.lexed = text, sqlparse.Analyze(text)
		}
	}
	if st.lexed.Kind == sqlparse.KindQuery {
		st.readQuery()
	}
	return st
}

// AnalyzeQuery reads a query the engine wrote itself (an INSERT's source
// query with its casts, a query with its parameters stood for by NULLs):
// only what running a query needs, its shape and what it explains. It
// is a query, and has no hint and no parameters.
func AnalyzeQuery(sql string) *Statement {
	st := &Statement{sql: sql, lexed: sqlparse.Analysis{Kind: sqlparse.KindQuery, Hint: -1}, nul: strings.IndexByte(sql, 0)}
	st.readQuery()
	return st
}

func (st *Statement) readQuery() {
	st.shapeKey, st.lits, st.cacheable = ShapeOf(st.sql)
	if inner, analyze, ok := explained(st.sql); ok {
		st.explains, st.analyze = AnalyzeQuery(inner), analyze
	}
}

// SQL is the statement's text.
func (st *Statement) SQL() string { return st.sql }

// Kind is how the Flight SQL server treats the statement.
func (st *Statement) Kind() engine.Kind {
	switch st.lexed.Kind {
	case sqlparse.KindQuery:
		return engine.KindQuery
	case sqlparse.KindUse, sqlparse.KindSet:
		return engine.KindSession
	}
	return engine.KindUpdate
}

// Class is the statement's kind by its leading keywords
// (sqlparse.Classify).
func (st *Statement) Class() sqlparse.Kind { return st.lexed.Kind }

// Check refuses statement text that DuckDB's parser would read
// differently from flightd's, or that asks for what flightd does not do:
// a NUL byte (DuckDB stops at it), a hint comment.
func (st *Statement) Check() error {
	if st.nul >= 0 {
		return fmt.Errorf("%w: the statement text holds a NUL byte at offset %d", engine.ErrInvalid, st.nul)
	}
	if st.spellErr != nil {
		return fmt.Errorf("%w: %w", engine.ErrInvalid, st.spellErr)
	}
	if i := st.lexed.Hint; i >= 0 {
		return fmt.Errorf("%w: the statement holds a hint comment (/*+ ... */) at offset %d, which flightd does not apply (it applies OPTIONS(...) with a snapshot to read right after a table's name in FROM); it is refused rather than ignored", engine.ErrInvalid, i)
	}
	return nil
}

// Params are the statement's parameter placeholders and how many
// parameters it takes (sqlparse.Params).
func (st *Statement) Params() ([]sqlparse.Param, int, error) {
	return st.lexed.Params, st.lexed.NumParams, st.lexed.ParamsErr
}

// Shape is the query's shape key and literals (ShapeOf); ok is false for
// a statement that is not a query or whose text ShapeOf does not take
// apart.
func (st *Statement) Shape() (key string, lits []Literal, ok bool) {
	return st.shapeKey, st.lits, st.cacheable
}

// Explains is the query an EXPLAIN [ANALYZE] explains, nil for any other
// statement; analyze is set for EXPLAIN ANALYZE.
func (st *Statement) Explains() (query *Statement, analyze bool) {
	return st.explains, st.analyze
}

// Insert is the statement parsed as an INSERT (sqlparse.ParseInsert).
func (st *Statement) Insert() (*sqlparse.Insert, error) {
	st.insertOnce.Do(func() {
		st.insert, st.insertErr = sqlparse.ParseInsert(st.sql)
		if st.insertErr == nil {
			st.row, st.rowOK = st.insert.ValuesRow(st.sql)
		}
	})
	return st.insert, st.insertErr
}

// ValuesRow is the one VALUES row of an INSERT INTO ... VALUES (...)
// (sqlparse.InsertValuesRow); ok is false for any other statement.
func (st *Statement) ValuesRow() (row sqlparse.ValuesRow, ok bool) {
	if _, err := st.Insert(); err != nil {
		return sqlparse.ValuesRow{}, false
	}
	return st.row, st.rowOK
}

// Tree is DuckDB's parse tree of the statement as SetTree gave it; known
// is false until it did. The tree is shared: it is read, never changed.
func (st *Statement) Tree() (tree *Object, parsed, known bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.tree, st.parsed, st.treeSet
}

// SetTree keeps tree, DuckDB's parse tree of the statement (parsed false:
// DuckDB gave none), for the stages after; a statement longer than
// MaxCachedSQL keeps none, so that what a prepared statement holds stays
// small.
func (st *Statement) SetTree(tree *Object, parsed bool) {
	if len(st.sql) > MaxCachedSQL {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.treeSet {
		st.tree, st.parsed, st.treeSet = tree, parsed, true
	}
}

// KindName names a statement by its leading keyword, two for CREATE,
// DROP and ALTER (CREATE MACRO, DROP VIEW), in refusals.
func KindName(sql string) string {
	f := strings.FieldsFunc(sql, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_')
	})
	if len(f) == 0 {
		return "empty"
	}
	k := strings.ToUpper(f[0])
	switch k {
	case "CREATE", "DROP", "ALTER":
		if len(f) > 1 {
			k += " " + strings.ToUpper(f[1])
		}
	}
	return k
}

// explained returns the query of an EXPLAIN [ANALYZE] statement.
func explained(sql string) (inner string, analyze, ok bool) {
	rest := strings.TrimLeft(sql, " \t\r\n")
	word := func() string {
		i := strings.IndexFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '(' })
		if i < 0 {
			return rest
		}
		return rest[:i]
	}
	if !strings.EqualFold(word(), "EXPLAIN") {
		return "", false, false
	}
	rest = strings.TrimLeft(rest[len("EXPLAIN"):], " \t\r\n")
	if strings.EqualFold(word(), "ANALYZE") {
		rest, analyze = rest[len("ANALYZE"):], true
	}
	return rest, analyze, true
}
