package sqlparse

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// classifyTests is also used to seed FuzzParse.
var classifyTests = []struct {
	name string
	sql  string
	want Kind
}{
	{name: "select", sql: "SELECT 1", want: KindQuery},
	{name: "select lower case", sql: "select * from t", want: KindQuery},
	{name: "select trailing semicolon", sql: "SELECT 1;", want: KindQuery},
	{name: "select trailing semicolon and comment", sql: "SELECT 1; -- done", want: KindQuery},
	{name: "leading whitespace and comments", sql: " \n\t-- hi\n/* DROP TABLE x */ SELECT 1", want: KindQuery},
	{name: "parenthesised select", sql: "((SELECT 1)) UNION (SELECT 2)", want: KindQuery},
	{name: "with", sql: "WITH x AS (SELECT 1) SELECT * FROM x", want: KindQuery},
	{name: "with recursive and column list", sql: "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t), u AS (SELECT 2) SELECT * FROM t, u", want: KindQuery},
	{name: "with materialized", sql: "WITH x AS MATERIALIZED (SELECT 1) (SELECT * FROM x)", want: KindQuery},
	{name: "with insert is other", sql: "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", want: KindOther},
	{name: "with delete is other", sql: "WITH x AS (SELECT 1) DELETE FROM t", want: KindOther},
	{name: "values", sql: "VALUES (1), (2)", want: KindQuery},
	{name: "from first", sql: "FROM t", want: KindQuery},
	{name: "table", sql: "TABLE t", want: KindQuery},
	{name: "show", sql: "SHOW TABLES", want: KindQuery},
	{name: "describe", sql: "DESCRIBE t", want: KindQuery},
	{name: "explain", sql: "EXPLAIN SELECT 1", want: KindQuery},
	{name: "explain analyze", sql: "EXPLAIN ANALYZE SELECT 1", want: KindQuery},
	{name: "explain insert is other", sql: "EXPLAIN ANALYZE INSERT INTO t VALUES (1)", want: KindOther},
	{name: "summarize", sql: "SUMMARIZE t", want: KindQuery},
	{name: "pragma", sql: "PRAGMA version", want: KindOther}, // DuckDB PRAGMAs change settings: never a query
	{name: "create database", sql: "CREATE DATABASE shop", want: KindCreateDatabase},
	{name: "create schema", sql: "create schema if not exists shop", want: KindCreateDatabase},
	{name: "drop database", sql: "DROP DATABASE shop CASCADE", want: KindDropDatabase},
	{name: "drop schema", sql: "DROP SCHEMA shop", want: KindDropDatabase},
	{name: "create table", sql: "/* c */ CREATE TABLE t (a INT)", want: KindCreateTable},
	{name: "drop table", sql: "DROP TABLE t", want: KindDropTable},
	{name: "alter table", sql: "ALTER TABLE t SET ('a' = 'b')", want: KindAlterTable},
	{name: "insert", sql: "INSERT INTO t VALUES (1)", want: KindInsert},
	{name: "insert overwrite", sql: "INSERT OVERWRITE t SELECT 1", want: KindInsertOverwrite},
	{name: "update", sql: "UPDATE t SET a = 1", want: KindUpdate},
	{name: "delete", sql: "DELETE FROM t", want: KindDelete},
	{name: "use", sql: "USE shop", want: KindUse},
	{name: "create view", sql: "CREATE VIEW v AS SELECT 1", want: KindOther},
	{name: "create or replace table", sql: "CREATE OR REPLACE TABLE t (a INT)", want: KindOther},
	{name: "set", sql: "SET threads = 4", want: KindSet},
	{name: "attach", sql: "ATTACH 'x.db'", want: KindOther},
	{name: "copy", sql: "COPY t TO 'x.csv'", want: KindOther},
	{name: "insert or replace", sql: "INSERT OR REPLACE INTO t VALUES (1)", want: KindOther},
	{name: "empty", sql: "", want: KindOther},
	{name: "only comment", sql: "-- SELECT 1", want: KindOther},
	{name: "only semicolon", sql: ";", want: KindOther},
	{name: "keyword in string", sql: "'SELECT'", want: KindOther},
	{name: "quoted keyword", sql: `"SELECT" 1`, want: KindOther},
	{name: "multiple statements", sql: "SELECT 1; DROP TABLE t", want: KindOther},
	{name: "multiple statements after comment", sql: "SELECT 1 /* x */ ; ATTACH 'x'", want: KindOther},
	{name: "semicolon in string", sql: "SELECT ';DROP TABLE t'", want: KindQuery},
	{name: "semicolon in comment", sql: "SELECT 1 -- ; DROP TABLE t", want: KindQuery},
	{name: "semicolon in dollar string", sql: "SELECT $$;DROP TABLE t$$", want: KindQuery},
	{name: "parenthesised drop", sql: "(DROP TABLE t)", want: KindOther},
	{name: "unterminated string", sql: "SELECT 'abc", want: KindQuery},
	{name: "kelvin sign is not a keyword", sql: "DROP TABLE \u212aey", want: KindDropTable},
	{name: "non-ascii lookalike", sql: "\u017fELECT 1", want: KindOther},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyTests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Classify(tc.sql), "Classify(%q)", tc.sql)
		})
	}
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "QUERY", KindQuery.String())
	assert.Equal(t, "CREATE TABLE", KindCreateTable.String())
	assert.Equal(t, "INSERT OVERWRITE", KindInsertOverwrite.String())
	assert.Equal(t, "OTHER", KindOther.String())
	assert.Equal(t, "Kind(99)", Kind(99).String())
	assert.Equal(t, "Kind(-1)", Kind(-1).String())
	for k := KindQuery; k <= KindOther; k++ {
		assert.NotContains(t, k.String(), "Kind(")
	}
}
