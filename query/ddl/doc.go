// Package ddl runs the statements flightd executes itself, without
// DuckDB: CREATE/DROP DATABASE, CREATE/DROP TABLE and ALTER TABLE (SET and
// RESET of options, ADD, RENAME, DROP and ALTER COLUMN, RENAME TO) through
// the lake catalog (package lakestream), USE, and SET streaming.
//
// What it promises:
//
//   - A statement is parsed by package sqlparse, whose grammar is the one
//     accepted; anything else is engine.ErrInvalid naming what is wrong.
//     Names written unqualified resolve in the session's database
//     (engine.DatabaseOf).
//   - Catalog.Run changes nothing when it fails. What it took away under
//     a name (DROP TABLE, RENAME TO) it names, so that the caller drops
//     what it keeps of that table (package query: DuckDB's views).
//   - Catalog.Writable refuses writes to the names that only read: t$rt,
//     t$ro, t$changelog and the other read-only names of a table, and the
//     system tables of SystemDatabase, saying which it is.
//   - Errors carry the engine's sentinels (package lakeerr), so that the
//     Flight SQL server gives them their gRPC codes.
package ddl
