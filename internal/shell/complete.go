package shell

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// keywords are what completion offers besides names: SQL's and flightd's
// own (Paimon DDL, time travel, sessions).
var keywords = strings.Fields(`
ADD ALL ALTER AND ANALYZE AS ASC AT AUTO_INCREMENT BETWEEN BIGINT BINARY BOOLEAN BY BYTES CALL CASCADE CASE CAST
CHAR COLUMN COMMENT COUNT CREATE CROSS DATABASE DATE DECIMAL DEFAULT DELETE DESC DESCRIBE DISTINCT DOUBLE DROP
ELSE END ENFORCED EXCEPT EXISTS EXPLAIN FALSE FIRST FLOAT FROM FULL GROUP HAVING IF IN INNER INSERT INT INTEGER
INTERSECT INTERVAL INTO IS JOIN KEY LAST LEFT LIKE LIMIT MAP NOT NULL NULLS OFFSET ON OR ORDER OUTER OVERWRITE
PARTITIONED PRIMARY RENAME RESET RIGHT ROW SELECT SET SHOW SMALLINT STRING SUMMARIZE TABLE TABLES THEN TIME TIMESTAMP
TINYINT TO TRUE TYPE UNION UPDATE USE USING VALUES VARBINARY VARCHAR VERSION VIEW WHEN WHERE WITH`)

// metaCommands are completed at the start of a line.
var metaCommands = []string{`\d`, `\format`, `\q`, `\timing`, `\?`}

// reserved are the words that must be quoted to name a table or database
// (DuckDB's reserved keywords, PostgreSQL's list).
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric both case cast check collate
column constraint create default deferrable desc describe distinct do else end except false fetch for foreign from
grant group having in initially intersect into lateral leading limit not null offset on only or order pivot
pivot_longer pivot_wider placing primary qualify references returning select show some summarize symmetric table
then to trailing true union unique unpivot using variadic when where window with`) {
		reserved[w] = true
	}
}

// quoteIdent writes a name so that SQL reads it back: as is when it is a
// plain lower-case identifier, else in double quotes ("orders$rt",
// "default").
func quoteIdent(name string) string {
	plain := name != "" && !reserved[name]
	for i := 0; i < len(name) && plain; i++ {
		c := name[i]
		plain = c == '_' || ('a' <= c && c <= 'z') || (i > 0 && '0' <= c && c <= '9')
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// tableCache holds the table names completion offers, fetched from the
// server (GetTables) at the first Tab and again after DDL or USE.
type tableCache struct {
	mu     sync.Mutex
	valid  bool
	tables [][2]string // database, table
}

func (t *tableCache) invalidate() {
	t.mu.Lock()
	t.valid = false
	t.mu.Unlock()
}

// names returns the tables, asking the server if the cache is stale. A
// server that does not answer within a moment leaves completion to
// keywords rather than holding the prompt.
func (s *Shell) tableNames() [][2]string {
	t := s.tables
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.valid {
		return t.tables
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	recs, err := s.c.getTables(ctx, nil, nil, false)
	if err != nil {
		return t.tables
	}
	defer release(recs)
	t.tables = t.tables[:0]
	for _, rec := range recs {
		dbs, ok1 := column(rec, "db_schema_name").(*array.String)
		names, ok2 := column(rec, "table_name").(*array.String)
		if !ok1 || !ok2 {
			return t.tables
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			t.tables = append(t.tables, [2]string{dbs.Value(i), names.Value(i)})
		}
	}
	t.valid = true
	return t.tables
}

// complete is the line editor's completer: for the word before the
// cursor it offers backslash commands (at the start of a line), table
// names (db.table, and bare names of the current database) and keywords,
// keywords in the case the word was typed in.
func (s *Shell) complete(line string, pos int) (head string, completions []string, tail string) {
	runes := []rune(line)
	if pos > len(runes) {
		pos = len(runes)
	}
	before, tail := string(runes[:pos]), string(runes[pos:])
	start := len(before)
	for start > 0 && wordByte(before[start-1]) {
		start--
	}
	head, word := before[:start], before[start:]
	if strings.TrimSpace(head) == "" && strings.HasPrefix(word, `\`) {
		for _, c := range metaCommands {
			if strings.HasPrefix(c, word) {
				completions = append(completions, c)
			}
		}
		return head, completions, tail
	}
	lw := strings.ToLower(word)
	seen := map[string]bool{}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			completions = append(completions, c)
		}
	}
	var tables []string
	for _, t := range s.tableNames() {
		db, name := t[0], t[1]
		for _, c := range []string{quoteIdent(db) + "." + quoteIdent(name), unqualified(db, name, s.database())} {
			if c == "" {
				continue
			}
			// Typed with or without the quotes: shop.orders$ finds shop."orders$rt".
			if strings.HasPrefix(strings.ToLower(c), lw) || strings.HasPrefix(strings.ToLower(strings.ReplaceAll(c, `"`, "")), lw) {
				tables = append(tables, c)
			}
		}
	}
	sort.Strings(tables)
	for _, c := range tables {
		add(c)
	}
	if word != "" && !strings.ContainsAny(word, `."`) {
		lower := strings.ToLower(word) == word
		for _, k := range keywords {
			if strings.HasPrefix(strings.ToLower(k), lw) {
				if lower {
					k = strings.ToLower(k)
				}
				add(k)
			}
		}
	}
	return head, completions, tail
}

// unqualified is name alone when it is in the current database, else "".
func unqualified(db, name, current string) string {
	if db != current {
		return ""
	}
	return quoteIdent(name)
}

// wordByte reports whether c can be part of a word completion replaces:
// a name, a qualified name, a quoted name (anything but space and the
// punctuation that separates words).
func wordByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '(', ')', ',', ';', '=', '<', '>', '+', '*', '/', '\'', '|':
		return false
	}
	return true
}
