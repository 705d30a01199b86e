// Package sqlparse recognises and parses the SQL statements that flightd executes itself rather than
// handing to DuckDB: DDL (CREATE/DROP DATABASE, CREATE/DROP/ALTER TABLE), USE and INSERT INTO.
//
// # What it promises
//
//   - Classify sorts any text into a Kind from its leading keywords. It never fails and never panics.
//     Text that holds more than one statement, or that could make DuckDB run a write disguised as a
//     query (WITH ... INSERT, EXPLAIN ANALYZE INSERT, a parenthesised non-query), is KindOther.
//   - Each Parse function accepts exactly one statement of its kind (a trailing ';' is allowed) and
//     returns either a complete result or an *Error; it never panics, whatever the input. The grammar
//     accepted by each function is in its documentation; everything else is rejected, never ignored.
//   - Errors name the statement, what was wrong, the byte offset and the offending token, e.g.
//     `sqlparse: CREATE TABLE: expected ',' or ')' after column "a" at offset 27, found "WITH"`.
//   - The package is pure Go with no dependencies beyond the standard library.
//   - Analyze returns what Classify, Hint and Params find, lexing the text once, for callers that
//     need all three.
//   - RewriteTravels turns the time-travel spellings of Paimon's engines (Spark's VERSION AS OF and
//     TIMESTAMP AS OF, Flink's FOR SYSTEM_TIME AS OF and OPTIONS hint) into DuckDB's AT clause.
//   - Params finds the parameter placeholders (? or $N) of any statement outside strings, quoted
//     identifiers and comments; Substitute replaces them; InsertValuesRow finds the one VALUES row of
//     an INSERT, so that a batch of parameter rows can become one statement.
//
// It does not parse queries: SELECTs, and the source query of an INSERT, are passed through as text.
//
// # Lexical rules
//
// The lexer follows DuckDB's (PostgreSQL's scan.l) wherever a boundary is decided, and a differential
// fuzz test against DuckDB's parser (query.FuzzStatementSplitAgreesWithDuckDB) holds it there:
// whitespace is ASCII only; a byte above 0x7F is an identifier byte, whatever character it is part of;
// comments are -- to '\n' or '\r' and /* */ (which nest); a $tag$ may use any such byte. Text with a
// NUL byte or invalid UTF-8 is a lexical error (DuckDB stops reading at NUL). Backquoted identifiers
// are flightd's own (Flink's spelling, for DDL); DuckDB does not read them.
//
// Keywords are case-insensitive (ASCII only). Strings are '...' with ” for a quote; option keys and values, and comments, must be
// such strings. Inside queries, DuckDB's E'...' and $tag$...$tag$ strings are also recognised so that
// their content is not mistaken for SQL.
//
// # Identifier case rule
//
// Unquoted identifiers are folded to lower case (strings.ToLower); quoted identifiers, "x" or `x`
// ("" or “ inside for a literal quote), are kept exactly and may contain any character, including
// '.', '$' and spaces. So Shop.Orders names shop.orders, while "Shop"."Orders" names Shop.Orders.
// Within one CREATE TABLE, column names must differ case-insensitively (DuckDB, which runs the
// queries, matches identifiers case-insensitively), and primary key and partition columns resolve to
// the declared column spelling. Comparing database and table names is left to the caller.
package sqlparse
