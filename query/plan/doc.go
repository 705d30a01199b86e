// Package plan reads statements for the engine (package query) without
// linking DuckDB: a statement's text, once, where it enters the server
// (Statement), DuckDB's parse tree of it (the JSON of json_serialize_sql,
// decoded in key order), the flightd tables it names, the scans it plans,
// the pruning its WHERE allows, and its parameters bound as literals
// (Bind).
//
// What it promises:
//
//   - Analyze lexes the text once (sqlparse.Analyze) and never fails:
//     what is wrong with the text is Check's error, or the error of the
//     stage that cannot use it. What a Statement learns later (its
//     INSERT's parse, its parse tree) it learns once, for every stage and
//     goroutine after.
//   - Trees are read, never changed, once decoded: callers may share one.
//   - FindRefs visits every base-table reference a statement makes
//     (through joins, subqueries and CTEs, which shadow tables of their
//     name), with the view DuckDB looks it up as (ViewKey).
//   - PlainScan recognises only statements that are a scan of one table
//     and nothing else (SELECT * | columns FROM t [WHERE column op
//     constant AND ...]); anything else is left to DuckDB.
//   - Hints only ever prune partitions, buckets and files: DuckDB still
//     applies the whole WHERE, so a result never depends on them.
//   - ShapeCache serves a statement's tree from the tree of another
//     statement of its shape (its text without integer and string
//     literals) only when the shape was learnt from two parses that differ
//     in nothing but one constant per literal: a cached tree is the one
//     DuckDB would give (LearnShape).
//   - DecodePart reads what EncodePart writes, and refuses anything else
//     (a ticket's part is client input) without panicking.
//   - Bind writes each value as a literal of DuckDB's dialect that stands
//     for the same value and type (engine.Literal), so that a bound
//     statement runs exactly as the same statement written with literals.
package plan
