package sqlparse

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var createTableTests = []struct {
	name string
	sql  string
	want *CreateTable
}{
	{
		name: "DuckDB array spelling",
		sql:  "CREATE TABLE t (a INT[], b VARCHAR(3) [ ] [] NOT NULL, c MAP<STRING, INT[]>)",
		want: &CreateTable{
			Name: Name{Table: "t"},
			Columns: []ColumnDef{
				{Name: "a", Type: "INT[]"},
				{Name: "b", Type: "VARCHAR(3)[][]", NotNull: true},
				{Name: "c", Type: "MAP<STRING, INT[]>"},
			},
			Options: map[string]string{},
		},
	},
	{
		name: "full example with NOT ENFORCED",
		sql:  "CREATE TABLE shop.orders (id BIGINT, customer STRING, amount DOUBLE, ts TIMESTAMP(6), PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')",
		want: &CreateTable{
			Name: Name{Database: "shop", Table: "orders"},
			Columns: []ColumnDef{
				{Name: "id", Type: "BIGINT", PrimaryKey: true},
				{Name: "customer", Type: "STRING"},
				{Name: "amount", Type: "DOUBLE"},
				{Name: "ts", Type: "TIMESTAMP(6)"},
			},
			PrimaryKey: []string{"id"},
			Options:    map[string]string{"bucket": "4"},
		},
	},
	{
		name: "primary key without NOT ENFORCED",
		sql:  "create table orders (id bigint, v string, primary key (id));",
		want: &CreateTable{
			Name:       Name{Table: "orders"},
			Columns:    []ColumnDef{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "v", Type: "string"}},
			PrimaryKey: []string{"id"},
			Options:    map[string]string{},
		},
	},
	{
		name: "composite key, partitioned, comment, options in any order",
		sql: `CREATE TABLE IF NOT EXISTS t (
			dt STRING NOT NULL,
			id BIGINT NOT NULL COMMENT 'the id',
			v DECIMAL(10,2) NULL,
			CONSTRAINT pk PRIMARY KEY (dt, id) NOT ENFORCED
		) WITH ('bucket' = '4', 'changelog-producer' = 'input') COMMENT 'it''s a table' PARTITIONED BY (dt)`,
		want: &CreateTable{
			Name:        Name{Table: "t"},
			IfNotExists: true,
			Columns: []ColumnDef{
				{Name: "dt", Type: "STRING", NotNull: true, PrimaryKey: true},
				{Name: "id", Type: "BIGINT", NotNull: true, Comment: "the id", PrimaryKey: true},
				{Name: "v", Type: "DECIMAL(10,2)"},
			},
			PrimaryKey:  []string{"dt", "id"},
			PartitionBy: []string{"dt"},
			Options:     map[string]string{"bucket": "4", "changelog-producer": "input"},
			Comment:     "it's a table",
		},
	},
	{
		name: "column-level primary key",
		sql:  "CREATE TABLE t (id BIGINT PRIMARY KEY, v STRING)",
		want: &CreateTable{
			Name:       Name{Table: "t"},
			Columns:    []ColumnDef{{Name: "id", Type: "BIGINT", PrimaryKey: true}, {Name: "v", Type: "STRING"}},
			PrimaryKey: []string{"id"},
			Options:    map[string]string{},
		},
	},
	{
		name: "column-level named primary key with options in any order",
		sql:  "CREATE TABLE t (id BIGINT COMMENT 'k' CONSTRAINT pk PRIMARY KEY NOT ENFORCED NOT NULL)",
		want: &CreateTable{
			Name:       Name{Table: "t"},
			Columns:    []ColumnDef{{Name: "id", Type: "BIGINT", NotNull: true, Comment: "k", PrimaryKey: true}},
			PrimaryKey: []string{"id"},
			Options:    map[string]string{},
		},
	},
	{
		name: "column-level primary key then NOT NULL",
		sql:  "CREATE TABLE t (id BIGINT PRIMARY KEY NOT NULL)",
		want: &CreateTable{
			Name:       Name{Table: "t"},
			Columns:    []ColumnDef{{Name: "id", Type: "BIGINT", NotNull: true, PrimaryKey: true}},
			PrimaryKey: []string{"id"},
			Options:    map[string]string{},
		},
	},
	{
		name: "table constraint first",
		sql:  "CREATE TABLE t (PRIMARY KEY (ID), id INT)",
		want: &CreateTable{
			Name:       Name{Table: "t"},
			Columns:    []ColumnDef{{Name: "id", Type: "INT", PrimaryKey: true}},
			PrimaryKey: []string{"id"},
			Options:    map[string]string{},
		},
	},
	{
		name: "quoted names keep case and odd characters",
		sql:  "CREATE TABLE shop.\"Orders\" (`Id` BIGINT, \"a.b$c d\" STRING, PRIMARY KEY (`Id`)) PARTITIONED BY (\"a.b$c d\")",
		want: &CreateTable{
			Name:        Name{Database: "shop", Table: "Orders"},
			Columns:     []ColumnDef{{Name: "Id", Type: "BIGINT", PrimaryKey: true}, {Name: "a.b$c d", Type: "STRING"}},
			PrimaryKey:  []string{"Id"},
			PartitionBy: []string{"a.b$c d"},
			Options:     map[string]string{},
		},
	},
	{
		name: "unquoted names fold, key resolves to declared spelling",
		sql:  `CREATE TABLE Shop.Orders (ID BIGINT, "Region" STRING, PRIMARY KEY (Id, region)) PARTITIONED BY (REGION)`,
		want: &CreateTable{
			Name:        Name{Database: "shop", Table: "orders"},
			Columns:     []ColumnDef{{Name: "id", Type: "BIGINT", PrimaryKey: true}, {Name: "Region", Type: "STRING", PrimaryKey: true}},
			PrimaryKey:  []string{"id", "Region"},
			PartitionBy: []string{"Region"},
			Options:     map[string]string{},
		},
	},
	{
		name: "complex types",
		sql: `CREATE TABLE t (
			a TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL,
			b ARRAY<INT>,
			c MAP<STRING, BIGINT>,
			d ROW<x INT, y STRING>,
			e DOUBLE   PRECISION,
			f VARCHAR (20),
			g MAP< STRING , ARRAY<ROW<x INT NOT NULL COMMENT 'n', y DECIMAL(5, 1)>> >,
			h TIMESTAMP /* six */ ( 6 ),
			i ROW<"Quoted Field" INT>
		)`,
		want: &CreateTable{
			Name: Name{Table: "t"},
			Columns: []ColumnDef{
				{Name: "a", Type: "TIMESTAMP(3) WITH LOCAL TIME ZONE", NotNull: true},
				{Name: "b", Type: "ARRAY<INT>"},
				{Name: "c", Type: "MAP<STRING, BIGINT>"},
				{Name: "d", Type: "ROW<x INT, y STRING>"},
				{Name: "e", Type: "DOUBLE PRECISION"},
				{Name: "f", Type: "VARCHAR(20)"},
				{Name: "g", Type: "MAP<STRING, ARRAY<ROW<x INT NOT NULL COMMENT 'n', y DECIMAL(5, 1)>>>"},
				{Name: "h", Type: "TIMESTAMP(6)"},
				{Name: "i", Type: `ROW<"Quoted Field" INT>`},
			},
			Options: map[string]string{},
		},
	},
	{
		name: "comments everywhere",
		sql:  "-- lead\n/* x */ CREATE /* y */ TABLE t ( -- cols\n a INT -- the a\n ) -- tail\n ; -- after",
		want: &CreateTable{
			Name:    Name{Table: "t"},
			Columns: []ColumnDef{{Name: "a", Type: "INT"}},
			Options: map[string]string{},
		},
	},
	{
		name: "keyword-like column names",
		sql:  `CREATE TABLE t (primary INT, constraint STRING NOT NULL, comment STRING, "not" INT, key INT, "with" INT)`,
		want: &CreateTable{
			Name: Name{Table: "t"},
			Columns: []ColumnDef{
				{Name: "primary", Type: "INT"}, {Name: "constraint", Type: "STRING", NotNull: true},
				{Name: "comment", Type: "STRING"}, {Name: "not", Type: "INT"}, {Name: "key", Type: "INT"},
				{Name: "with", Type: "INT"},
			},
			Options: map[string]string{},
		},
	},
	{
		name: "table named if",
		sql:  "CREATE TABLE if (a INT)",
		want: &CreateTable{Name: Name{Table: "if"}, Columns: []ColumnDef{{Name: "a", Type: "INT"}}, Options: map[string]string{}},
	},
	{
		name: "option values with quotes and empty value",
		sql:  "CREATE TABLE t (a INT) WITH ('k' = 'it''s', 'e' = '')",
		want: &CreateTable{Name: Name{Table: "t"}, Columns: []ColumnDef{{Name: "a", Type: "INT"}}, Options: map[string]string{"k": "it's", "e": ""}},
	},
}

func TestParseCreateTable(t *testing.T) {
	for _, tc := range createTableTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCreateTable(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindCreateTable, Classify(tc.sql))
		})
	}
}

var createDatabaseTests = []struct {
	name string
	sql  string
	want *CreateDatabase
}{
	{name: "database", sql: "CREATE DATABASE shop", want: &CreateDatabase{Name: "shop"}},
	{name: "schema if not exists", sql: "create schema IF NOT EXISTS Shop;", want: &CreateDatabase{Name: "shop", IfNotExists: true}},
	{name: "quoted", sql: `CREATE DATABASE "My.Shop"`, want: &CreateDatabase{Name: "My.Shop"}},
	{name: "backtick", sql: "CREATE DATABASE `a``b`", want: &CreateDatabase{Name: "a`b"}},
	{name: "named if", sql: "CREATE DATABASE if", want: &CreateDatabase{Name: "if"}},
}

func TestParseCreateDatabase(t *testing.T) {
	for _, tc := range createDatabaseTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCreateDatabase(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindCreateDatabase, Classify(tc.sql))
		})
	}
}

var dropDatabaseTests = []struct {
	name string
	sql  string
	want *DropDatabase
}{
	{name: "database", sql: "DROP DATABASE shop", want: &DropDatabase{Name: "shop"}},
	{name: "if exists cascade", sql: "drop schema if exists shop cascade;", want: &DropDatabase{Name: "shop", IfExists: true, Cascade: true}},
	{name: "restrict", sql: "DROP DATABASE \"Shop\" RESTRICT", want: &DropDatabase{Name: "Shop"}},
}

func TestParseDropDatabase(t *testing.T) {
	for _, tc := range dropDatabaseTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDropDatabase(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindDropDatabase, Classify(tc.sql))
		})
	}
}

var dropTableTests = []struct {
	name string
	sql  string
	want *DropTable
}{
	{name: "unqualified", sql: "DROP TABLE orders", want: &DropTable{Name: Name{Table: "orders"}}},
	{name: "qualified if exists", sql: "DROP TABLE IF EXISTS Shop.Orders;", want: &DropTable{Name: Name{Database: "shop", Table: "orders"}, IfExists: true}},
	{name: "quoted", sql: "DROP TABLE shop.\"orders\"", want: &DropTable{Name: Name{Database: "shop", Table: "orders"}}},
	{name: "quoted with dot", sql: `DROP TABLE "a.b"."c.d"`, want: &DropTable{Name: Name{Database: "a.b", Table: "c.d"}}},
	{name: "spaces around dot", sql: "DROP TABLE shop . orders", want: &DropTable{Name: Name{Database: "shop", Table: "orders"}}},
}

func TestParseDropTable(t *testing.T) {
	for _, tc := range dropTableTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDropTable(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindDropTable, Classify(tc.sql))
		})
	}
}

var alterTableTests = []struct {
	name string
	sql  string
	want *AlterTable
}{
	{name: "set", sql: "ALTER TABLE shop.orders SET ('bucket' = '8', 'snapshot.num-retained.max' = '10')",
		want: &AlterTable{Name: Name{Database: "shop", Table: "orders"}, Set: map[string]string{"bucket": "8", "snapshot.num-retained.max": "10"}}},
	{name: "reset", sql: "alter table orders reset ('a', 'b');",
		want: &AlterTable{Name: Name{Table: "orders"}, Reset: []string{"a", "b"}}},
	{name: "add column", sql: "ALTER TABLE t ADD COLUMN w DECIMAL(10, 2) COMMENT 'weight' AFTER id",
		want: &AlterTable{Name: Name{Table: "t"}, Add: &AddColumn{Column: ColumnDef{Name: "w", Type: "DECIMAL(10, 2)", Comment: "weight"}, After: "id"}}},
	{name: "add first", sql: "alter table t add z string not null first",
		want: &AlterTable{Name: Name{Table: "t"}, Add: &AddColumn{Column: ColumnDef{Name: "z", Type: "string", NotNull: true}, First: true}}},
	{name: "rename column", sql: `ALTER TABLE db.t RENAME COLUMN "a b" TO c`,
		want: &AlterTable{Name: Name{Database: "db", Table: "t"}, RenameFrom: "a b", RenameTo: "c"}},
	{name: "drop column", sql: "ALTER TABLE t DROP w", want: &AlterTable{Name: Name{Table: "t"}, Drop: "w"}},
	{name: "alter type", sql: "ALTER TABLE t ALTER COLUMN n TYPE BIGINT",
		want: &AlterTable{Name: Name{Table: "t"}, Alter: &AlterColumn{Name: "n", Path: []string{"n"}, Type: "BIGINT"}}},
	{name: "alter nested type", sql: `ALTER TABLE t ALTER COLUMN r."S".x TYPE BIGINT`,
		want: &AlterTable{Name: Name{Table: "t"}, Alter: &AlterColumn{Name: "r.S.x", Path: []string{"r", "S", "x"}, Type: "BIGINT"}}},
	{name: "alter element and value type", sql: "ALTER TABLE t ALTER COLUMN a.element.m.value TYPE BIGINT",
		want: &AlterTable{Name: Name{Table: "t"}, Alter: &AlterColumn{Name: "a.element.m.value", Path: []string{"a", "element", "m", "value"}, Type: "BIGINT"}}},
	{name: "rename table", sql: "ALTER TABLE t RENAME TO u",
		want: &AlterTable{Name: Name{Table: "t"}, RenameTable: &Name{Table: "u"}}},
	{name: "if exists", sql: "ALTER TABLE IF EXISTS shop.t RENAME TO u",
		want: &AlterTable{Name: Name{Database: "shop", Table: "t"}, IfExists: true, RenameTable: &Name{Table: "u"}}},
	{name: "table named if", sql: `ALTER TABLE "if" SET ('a' = 'b')`,
		want: &AlterTable{Name: Name{Table: "if"}, Set: map[string]string{"a": "b"}}},
	{name: "rename table qualified", sql: `alter table shop.t rename to shop."U";`,
		want: &AlterTable{Name: Name{Database: "shop", Table: "t"}, RenameTable: &Name{Database: "shop", Table: "U"}}},
	{name: "set data type", sql: "ALTER TABLE t ALTER n SET DATA TYPE VARCHAR(20)",
		want: &AlterTable{Name: Name{Table: "t"}, Alter: &AlterColumn{Name: "n", Path: []string{"n"}, Type: "VARCHAR(20)"}}},
	{name: "drop not null", sql: "ALTER TABLE t ALTER n DROP NOT NULL",
		want: &AlterTable{Name: Name{Table: "t"}, Alter: &AlterColumn{Name: "n", Path: []string{"n"}, DropNotNull: true}}},
	{name: "comment", sql: "ALTER TABLE t ALTER COLUMN n COMMENT 'it''s n'",
		want: &AlterTable{Name: Name{Table: "t"}, Alter: &AlterColumn{Name: "n", Path: []string{"n"}, Comment: ptr("it's n")}}},
	// Flink's and Spark's lists, as Paimon's documentation writes them.
	{name: "flink add list", sql: "ALTER TABLE t ADD (c1 INT COMMENT 'c1', c2 STRING FIRST, c3 DOUBLE AFTER c1)",
		want: &AlterTable{Name: Name{Table: "t"}, Adds: []AddColumn{{Column: ColumnDef{Name: "c1", Type: "INT", Comment: "c1"}}, {Column: ColumnDef{Name: "c2", Type: "STRING"}, First: true}, {Column: ColumnDef{Name: "c3", Type: "DOUBLE"}, After: "c1"}}}},
	{name: "flink add one in parentheses", sql: "ALTER TABLE t ADD (c3 DOUBLE)",
		want: &AlterTable{Name: Name{Table: "t"}, Adds: []AddColumn{{Column: ColumnDef{Name: "c3", Type: "DOUBLE"}}}}},
	{name: "spark add columns", sql: "ALTER TABLE t ADD COLUMNS (c1 INT, c2 DECIMAL(10, 2))",
		want: &AlterTable{Name: Name{Table: "t"}, Adds: []AddColumn{{Column: ColumnDef{Name: "c1", Type: "INT"}}, {Column: ColumnDef{Name: "c2", Type: "DECIMAL(10, 2)"}}}}},
	{name: "spark add column list", sql: "ALTER TABLE t ADD COLUMN c1 INT, c2 STRING",
		want: &AlterTable{Name: Name{Table: "t"}, Adds: []AddColumn{{Column: ColumnDef{Name: "c1", Type: "INT"}}, {Column: ColumnDef{Name: "c2", Type: "STRING"}}}}},
	{name: "flink modify", sql: "ALTER TABLE t MODIFY a BIGINT",
		want: &AlterTable{Name: Name{Table: "t"}, Modify: []ColumnDef{{Name: "a", Type: "BIGINT"}}}},
	{name: "flink modify list", sql: "ALTER TABLE t MODIFY (a BIGINT NOT NULL, b STRING COMMENT 'b')",
		want: &AlterTable{Name: Name{Table: "t"}, Modify: []ColumnDef{{Name: "a", Type: "BIGINT", NotNull: true}, {Name: "b", Type: "STRING", Comment: "b"}}}},
	{name: "flink rename", sql: "ALTER TABLE t RENAME c TO d", want: &AlterTable{Name: Name{Table: "t"}, RenameFrom: "c", RenameTo: "d"}},
	{name: "flink drop list", sql: "ALTER TABLE t DROP (c1, c2)", want: &AlterTable{Name: Name{Table: "t"}, Drops: []string{"c1", "c2"}}},
	{name: "spark drop columns", sql: "ALTER TABLE t DROP COLUMNS (c1, c2)", want: &AlterTable{Name: Name{Table: "t"}, Drops: []string{"c1", "c2"}}},
}

func ptr(s string) *string { return &s }

func TestParseAlterTable(t *testing.T) {
	for _, tc := range alterTableTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAlterTable(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindAlterTable, Classify(tc.sql))
		})
	}
}

var useTests = []struct {
	name string
	sql  string
	want *Use
}{
	{name: "plain", sql: "USE Shop", want: &Use{Name: "shop"}},
	{name: "quoted with semicolon", sql: `use "Shop";`, want: &Use{Name: "Shop"}},
}

func TestParseUse(t *testing.T) {
	for _, tc := range useTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUse(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindUse, Classify(tc.sql))
		})
	}
}

var insertTests = []struct {
	name string
	sql  string
	want *Insert
}{
	{name: "values", sql: "INSERT INTO shop.orders VALUES (1, 'a'), (2, 'b')",
		want: &Insert{Name: Name{Database: "shop", Table: "orders"}, Query: "VALUES (1, 'a'), (2, 'b')"}},
	{name: "columns and select", sql: "insert into Orders (ID, \"Name\") select * from x;",
		want: &Insert{Name: Name{Table: "orders"}, Columns: []string{"id", "Name"}, Query: "select * from x"}},
	{name: "parenthesised query", sql: "INSERT INTO t (SELECT 1)",
		want: &Insert{Name: Name{Table: "t"}, Query: "(SELECT 1)"}},
	{name: "doubly parenthesised query", sql: "INSERT INTO t ((SELECT 1) UNION (SELECT 2))",
		want: &Insert{Name: Name{Table: "t"}, Query: "((SELECT 1) UNION (SELECT 2))"}},
	{name: "with query", sql: "INSERT INTO t (a) WITH x AS (SELECT 1) SELECT * FROM x",
		want: &Insert{Name: Name{Table: "t"}, Columns: []string{"a"}, Query: "WITH x AS (SELECT 1) SELECT * FROM x"}},
	{name: "inner comments kept, outer dropped", sql: "INSERT INTO t /* lead */ SELECT 1 /* in */ + 2 -- tail\n; -- after",
		want: &Insert{Name: Name{Table: "t"}, Query: "SELECT 1 /* in */ + 2"}},
	{name: "semicolons inside strings", sql: "INSERT INTO t VALUES (';', E'\\';', $$;$$)",
		want: &Insert{Name: Name{Table: "t"}, Query: "VALUES (';', E'\\';', $$;$$)"}},
	{name: "multi-line query kept as written", sql: "INSERT INTO t\nSELECT a,\n       b\nFROM   x",
		want: &Insert{Name: Name{Table: "t"}, Query: "SELECT a,\n       b\nFROM   x"}},
	{name: "from-first and table", sql: "INSERT INTO t FROM x", want: &Insert{Name: Name{Table: "t"}, Query: "FROM x"}},
}

func TestParseInsert(t *testing.T) {
	for _, tc := range insertTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseInsert(tc.sql)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, KindInsert, Classify(tc.sql))
		})
	}
}

// errorTests lists rejected statements. Each error must contain every string in want, which always
// includes the offending token (or name).
var errorTests = []struct {
	name   string
	parse  string // which Parse function
	sql    string
	want   []string
	offset int // expected Error.Offset
}{
	// CREATE TABLE
	{name: "missing close paren", parse: "create table", sql: "CREATE TABLE shop.orders (id BIGINT, customer STRING WITH ('bucket' = '4')",
		want: []string{"CREATE TABLE:", `expected ',' or ')' after column "customer"`, `found "WITH"`}, offset: 53},
	{name: "missing close paren before partitioned", parse: "create table", sql: "CREATE TABLE t (a INT COMMENT 'x' PARTITIONED BY (a)",
		want: []string{`expected ',' or ')' after column "a"`, `found "PARTITIONED"`}, offset: 34},
	{name: "missing comma", parse: "create table", sql: "CREATE TABLE t (a INT NOT NULL b INT)",
		want: []string{`expected ',' or ')' after column "a"`, `found "b"`}, offset: 31},
	{name: "junk in type", parse: "create table", sql: "CREATE TABLE t (a INT = 1)",
		want: []string{`unexpected token in type of column "a"`, `found "="`}, offset: 22},
	{name: "unclosed column list", parse: "create table", sql: "CREATE TABLE t (a INT",
		want: []string{`expected ',' or ')' after column "a"`, "found end of input"}, offset: 21},
	{name: "junk after column list", parse: "create table", sql: "CREATE TABLE t (a INT) PARTITION BY (a)",
		want: []string{"expected COMMENT, PARTITIONED BY, WITH or end of statement", `found "PARTITION"`}, offset: 23},
	{name: "duplicate column", parse: "create table", sql: "CREATE TABLE t (a INT, A STRING)",
		want: []string{`duplicate column "a"`}, offset: 23},
	{name: "duplicate quoted column", parse: "create table", sql: `CREATE TABLE t ("A" INT, "a" STRING)`,
		want: []string{`duplicate column "a"`}, offset: 25},
	{name: "primary key column twice", parse: "create table", sql: "CREATE TABLE t (x INT, PRIMARY KEY (x, X))",
		want: []string{`primary key column "x" is declared twice`}, offset: 39},
	{name: "primary key unknown column", parse: "create table", sql: "CREATE TABLE t (a INT, PRIMARY KEY (b))",
		want: []string{`primary key column "b" is not a column of the table`}, offset: 36},
	{name: "two primary keys", parse: "create table", sql: "CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))",
		want: []string{"primary key declared more than once", "offset 22"}, offset: 42},
	{name: "two column primary keys", parse: "create table", sql: "CREATE TABLE t (a INT PRIMARY KEY, b INT PRIMARY KEY)",
		want: []string{"primary key declared more than once"}, offset: 41},
	{name: "partition unknown column", parse: "create table", sql: "CREATE TABLE t (a INT) PARTITIONED BY (dt)",
		want: []string{`partition column "dt" is not a column of the table`}, offset: 39},
	{name: "partition column twice", parse: "create table", sql: "CREATE TABLE t (a INT) PARTITIONED BY (a, a)",
		want: []string{`partition column "a" is declared twice`}, offset: 42},
	{name: "empty partition list", parse: "create table", sql: "CREATE TABLE t (a INT) PARTITIONED BY ()",
		want: []string{"expected partition column name", `found ")"`}, offset: 39},
	{name: "empty column list", parse: "create table", sql: "CREATE TABLE t ()",
		want: []string{"expected column name or table constraint", `found ")"`}, offset: 16},
	{name: "only a constraint", parse: "create table", sql: "CREATE TABLE t (PRIMARY KEY (a))",
		want: []string{"a table needs at least one column"}, offset: 31},
	{name: "missing type", parse: "create table", sql: "CREATE TABLE t (a NOT NULL)",
		want: []string{`expected a type for column "a"`, `found "NOT"`}, offset: 18},
	{name: "missing type before comma", parse: "create table", sql: "CREATE TABLE t (a, b INT)",
		want: []string{`expected a type for column "a"`, `found ","`}, offset: 17},
	{name: "unbalanced angle", parse: "create table", sql: "CREATE TABLE t (a ARRAY<INT)",
		want: []string{`expected '>' in type of column "a"`, `found ")"`}, offset: 27},
	{name: "stray angle", parse: "create table", sql: "CREATE TABLE t (a INT>)",
		want: []string{`unbalanced '>' in type of column "a"`, `found ">"`}, offset: 21},
	{name: "unterminated type", parse: "create table", sql: "CREATE TABLE t (a DECIMAL(10, 2",
		want: []string{`unterminated type of column "a"`, "found end of input"}, offset: 31},
	{name: "null and not null", parse: "create table", sql: "CREATE TABLE t (a INT NULL NOT NULL)",
		want: []string{`column "a" is declared both NULL and NOT NULL`}, offset: 22},
	{name: "comment twice", parse: "create table", sql: "CREATE TABLE t (a INT COMMENT 'x' COMMENT 'y')",
		want: []string{`COMMENT given more than once for column "a"`}, offset: 34},
	{name: "unquoted column comment", parse: "create table", sql: "CREATE TABLE t (a INT COMMENT x)",
		want: []string{`expected comment of column "a" as a single-quoted string`, `found "x"`}, offset: 30},
	{name: "default unsupported", parse: "create table", sql: "CREATE TABLE t (a INT DEFAULT 1)",
		want: []string{`unsupported column option DEFAULT for column "a"`, `found "DEFAULT"`}, offset: 22},
	{name: "computed column unsupported", parse: "create table", sql: "CREATE TABLE t (a INT, b AS a + 1)",
		want: []string{`expected a type for column "b"`, `found "AS"`}, offset: 25},
	{name: "watermark unsupported", parse: "create table", sql: "CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts)",
		want: []string{"unsupported table constraint", `found "WATERMARK"`}, offset: 33},
	{name: "unique constraint unsupported", parse: "create table", sql: "CREATE TABLE t (a INT, CONSTRAINT u UNIQUE (a))",
		want: []string{"unsupported table constraint", `found "UNIQUE"`}, offset: 36},
	{name: "column unique unsupported", parse: "create table", sql: "CREATE TABLE t (a INT UNIQUE)",
		want: []string{`unsupported column option UNIQUE for column "a"`, `found "UNIQUE"`}, offset: 22},
	{name: "enforced without not", parse: "create table", sql: "CREATE TABLE t (a INT, PRIMARY KEY (a) ENFORCED)",
		want: []string{"expected ',' or ')' after table constraint", `found "ENFORCED"`}, offset: 39},
	{name: "not without enforced", parse: "create table", sql: "CREATE TABLE t (a INT, PRIMARY KEY (a) NOT VALID)",
		want: []string{"expected ENFORCED after PRIMARY KEY ... NOT", `found "VALID"`}, offset: 43},
	{name: "ctas unsupported", parse: "create table", sql: "CREATE TABLE t AS SELECT 1",
		want: []string{"CREATE TABLE ... AS is not supported", `found "AS"`}, offset: 15},
	{name: "like unsupported", parse: "create table", sql: "CREATE TABLE t LIKE u",
		want: []string{"CREATE TABLE ... LIKE is not supported", `found "LIKE"`}, offset: 15},
	{name: "missing column list", parse: "create table", sql: "CREATE TABLE t WITH ('a' = 'b')",
		want: []string{"expected '(' to start the column list after the table name", `found "WITH"`}, offset: 15},
	{name: "three part name", parse: "create table", sql: "CREATE TABLE paimon.shop.orders (a INT)",
		want: []string{"too many name parts", `found "."`}, offset: 24},
	{name: "empty quoted name", parse: "create table", sql: `CREATE TABLE "" (a INT)`,
		want: []string{"empty quoted identifier", `found "\"\""`}, offset: 13},
	{name: "string as table name", parse: "create table", sql: "CREATE TABLE 'orders' (a INT)",
		want: []string{"expected table name", `found "'orders'"`}, offset: 13},
	{name: "if without not exists", parse: "create table", sql: "CREATE TABLE IF EXISTS t (a INT)",
		want: []string{"expected NOT after IF", `found "EXISTS"`}, offset: 16},
	{name: "not create table", parse: "create table", sql: "CREATE VIEW v AS SELECT 1",
		want: []string{"expected TABLE after CREATE", `found "VIEW"`}, offset: 7},
	{name: "wrong statement", parse: "create table", sql: "SELECT 1",
		want: []string{"expected CREATE at start of statement", `found "SELECT"`}, offset: 0},
	{name: "empty input", parse: "create table", sql: "  -- nothing",
		want: []string{"expected CREATE at start of statement", "found end of input"}, offset: 12},
	{name: "leading paren", parse: "create table", sql: "(CREATE TABLE t (a INT))",
		want: []string{"expected CREATE", `found "("`}, offset: 0},
	{name: "duplicate option", parse: "create table", sql: "CREATE TABLE t (a INT) WITH ('bucket' = '4', 'bucket' = '8')",
		want: []string{`duplicate option "bucket"`}, offset: 45},
	{name: "unquoted option value", parse: "create table", sql: "CREATE TABLE t (a INT) WITH ('bucket' = 4)",
		want: []string{`expected value of option "bucket" as a single-quoted string`, `found "4"`}, offset: 40},
	{name: "unquoted option key", parse: "create table", sql: "CREATE TABLE t (a INT) WITH (bucket = '4')",
		want: []string{"expected option key as a single-quoted string", `found "bucket"`}, offset: 29},
	{name: "option missing equals", parse: "create table", sql: "CREATE TABLE t (a INT) WITH ('bucket' '4')",
		want: []string{`expected '=' after option key "bucket"`, `found "'4'"`}, offset: 38},
	{name: "empty option key", parse: "create table", sql: "CREATE TABLE t (a INT) WITH ('' = '4')",
		want: []string{"empty option key"}, offset: 29},
	{name: "with given twice", parse: "create table", sql: "CREATE TABLE t (a INT) WITH ('a' = 'b') WITH ('c' = 'd')",
		want: []string{"WITH given more than once"}, offset: 40},
	{name: "unterminated string", parse: "create table", sql: "CREATE TABLE t (a INT) COMMENT 'abc",
		want: []string{"CREATE TABLE: unterminated string literal", `found "'abc"`}, offset: 31},
	{name: "second statement", parse: "create table", sql: "CREATE TABLE t (a INT); DROP TABLE u",
		want: []string{"multiple statements are not supported", `found "DROP"`}, offset: 24},

	// CREATE DATABASE
	{name: "create database qualified", parse: "create database", sql: "CREATE DATABASE a.b",
		want: []string{"CREATE DATABASE: database name must not be qualified", `found "."`}, offset: 17},
	{name: "create database missing name", parse: "create database", sql: "CREATE DATABASE",
		want: []string{"expected database name", "found end of input"}, offset: 15},
	{name: "create database wrong object", parse: "create database", sql: "CREATE TABLE t",
		want: []string{"expected DATABASE or SCHEMA after CREATE", `found "TABLE"`}, offset: 7},
	{name: "create database junk", parse: "create database", sql: "CREATE DATABASE a WITH ('x' = 'y')",
		want: []string{"expected end of statement", `found "WITH"`}, offset: 18},

	// DROP DATABASE
	{name: "drop database bad option", parse: "drop database", sql: "DROP DATABASE a PURGE",
		want: []string{"expected CASCADE, RESTRICT or end of statement", `found "PURGE"`}, offset: 16},
	{name: "drop database if not exists", parse: "drop database", sql: "DROP DATABASE IF NOT EXISTS a",
		want: []string{"expected EXISTS after IF", `found "NOT"`}, offset: 17},

	// DROP TABLE
	{name: "drop table list", parse: "drop table", sql: "DROP TABLE a, b",
		want: []string{"DROP TABLE: expected end of statement", `found ","`}, offset: 12},
	{name: "drop table missing name", parse: "drop table", sql: "DROP TABLE IF EXISTS;",
		want: []string{"expected table name", `found ";"`}, offset: 20},
	{name: "drop table dangling dot", parse: "drop table", sql: "DROP TABLE shop.",
		want: []string{"expected table name after '.'", "found end of input"}, offset: 16},

	// ALTER TABLE
	{name: "alter modify moves", parse: "alter table", sql: "ALTER TABLE t MODIFY a BIGINT FIRST",
		want: []string{"MODIFY cannot move a column", `found "FIRST"`}, offset: 30},
	{name: "alter add list unclosed", parse: "alter table", sql: "ALTER TABLE t ADD (a INT, b INT",
		want: []string{"expected ')' or ',' in the ADD list", "found end of input"}, offset: 31},
	{name: "alter add primary key", parse: "alter table", sql: "ALTER TABLE t ADD PRIMARY KEY (a) NOT ENFORCED",
		want: []string{"primary key is fixed"}, offset: 18},
	{name: "alter rename table no name", parse: "alter table", sql: "ALTER TABLE t RENAME TO",
		want: []string{"expected table name", "found end of input"}, offset: 23},
	{name: "alter rename table three parts", parse: "alter table", sql: "ALTER TABLE t RENAME TO a.b.c",
		want: []string{"too many name parts", `found "."`}, offset: 27},
	{name: "alter rename table junk", parse: "alter table", sql: "ALTER TABLE t RENAME TO u v",
		want: []string{"expected end of statement", `found "v"`}, offset: 26},
	{name: "alter nested dangling dot", parse: "alter table", sql: "ALTER TABLE t ALTER COLUMN r.) TYPE INT",
		want: []string{"expected column to alter", `found ")"`}, offset: 29},
	{name: "alter other unsupported", parse: "alter table", sql: "ALTER TABLE t SWAP a",
		want: []string{"unsupported ALTER TABLE operation", `found "SWAP"`}, offset: 14},
	{name: "alter set empty", parse: "alter table", sql: "ALTER TABLE t SET ()",
		want: []string{"expected option key", `found ")"`}, offset: 19},
	{name: "alter reset duplicate", parse: "alter table", sql: "ALTER TABLE t RESET ('a', 'a')",
		want: []string{`duplicate option "a"`}, offset: 26},
	{name: "alter reset unquoted", parse: "alter table", sql: "ALTER TABLE t RESET (a)",
		want: []string{"expected option key as a single-quoted string", `found "a"`}, offset: 21},
	{name: "alter set and reset", parse: "alter table", sql: "ALTER TABLE t SET ('a' = 'b') RESET ('c')",
		want: []string{"expected end of statement", `found "RESET"`}, offset: 30},

	// USE
	{name: "use qualified", parse: "use", sql: "USE paimon.shop",
		want: []string{"USE: database name must not be qualified", `found "."`}, offset: 10},
	{name: "use nothing", parse: "use", sql: "USE;",
		want: []string{"expected database name", `found ";"`}, offset: 3},

	// INSERT
	{name: "insert overwrite", parse: "insert", sql: "INSERT OVERWRITE t SELECT 1",
		want: []string{"INSERT: expected INTO after INSERT", `found "OVERWRITE"`}, offset: 7},
	{name: "insert no query", parse: "insert", sql: "INSERT INTO t (a, b)",
		want: []string{"expected a query", "after the column list", "found end of input"}, offset: 20},
	{name: "insert default values", parse: "insert", sql: "INSERT INTO t DEFAULT VALUES",
		want: []string{"expected a query", "after the table name", `found "DEFAULT"`}, offset: 14},
	{name: "insert duplicate column", parse: "insert", sql: "INSERT INTO t (a, A) VALUES (1, 2)",
		want: []string{`column "a" is listed twice`}, offset: 18},
	{name: "insert bad column list", parse: "insert", sql: "INSERT INTO t (a b) VALUES (1)",
		want: []string{"expected ')' or ',' in insert column list", `found "b"`}, offset: 17},
	{name: "insert second statement", parse: "insert", sql: "INSERT INTO t VALUES (1); DROP TABLE t",
		want: []string{"multiple statements are not supported", `found "DROP"`}, offset: 26},
	{name: "insert unterminated string in query", parse: "insert", sql: "INSERT INTO t VALUES ('a)",
		want: []string{"INSERT: unterminated string literal", `found "'a)"`}, offset: 22},
	{name: "long token is truncated", parse: "insert", sql: "INSERT INTO t " + "'" + strings.Repeat("x", 100) + "'",
		want: []string{"expected a query", `..."`}, offset: 14},
}

func parseBy(which, sql string) error {
	var err error
	switch which {
	case "create table":
		_, err = ParseCreateTable(sql)
	case "create database":
		_, err = ParseCreateDatabase(sql)
	case "drop database":
		_, err = ParseDropDatabase(sql)
	case "drop table":
		_, err = ParseDropTable(sql)
	case "alter table":
		_, err = ParseAlterTable(sql)
	case "use":
		_, err = ParseUse(sql)
	case "insert":
		_, err = ParseInsert(sql)
	default:
		panic("unknown parse function " + which)
	}
	return err
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorTests {
		t.Run(tc.name, func(t *testing.T) {
			err := parseBy(tc.parse, tc.sql)
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), "sqlparse: ")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			var pe *Error
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.offset, pe.Offset, "offset")
			assert.LessOrEqual(t, pe.Offset, len(tc.sql))
		})
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{Statement: "CREATE TABLE", Msg: "expected ')' after column list", Offset: 57, Found: `"WITH"`}
	assert.Equal(t, `sqlparse: CREATE TABLE: expected ')' after column list at offset 57, found "WITH"`, e.Error())
	e = &Error{Msg: "x", Offset: -1}
	assert.Equal(t, "sqlparse: x", e.Error())
}

func TestNameString(t *testing.T) {
	assert.Equal(t, "t", Name{Table: "t"}.String())
	assert.Equal(t, "d.t", Name{Database: "d", Table: "t"}.String())
}

func TestValuesListCountsEachRowsValues(t *testing.T) {
	rows, ok := ValuesList(`VALUES (7,7,'s7','x7','SURPLUS',42), (1, [1, 2], {'a': (1), 'b': 2}, f(1, 2)) , ()`)
	require.True(t, ok)
	require.Equal(t, []ValuesListRow{
		{Text: `(7,7,'s7','x7','SURPLUS',42)`, Values: 6},
		{Text: `(1, [1, 2], {'a': (1), 'b': 2}, f(1, 2))`, Values: 4},
		{Text: `()`, Values: 0},
	}, rows)
	for _, q := range []string{`SELECT 1`, `VALUES (1) ORDER BY 1`, `VALUES (1), 2`, `VALUES (1`, `VALUES 'x`, `(VALUES (1))`} {
		_, ok := ValuesList(q)
		require.False(t, ok, q)
	}
}
