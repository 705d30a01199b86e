// Package ingest brings Arrow batches to the types of flightd's tables and
// writes them: ingest streams (Flight SQL's bulk ingest), the rows an
// INSERT's query produced, and the parameter rows of a prepared INSERT.
// It links no DuckDB: package query runs the SQL and hands the batches
// here.
//
// What it promises:
//
//   - A batch is brought to the table's Arrow types exactly (arrowconv.Record:
//     Arrow's safe casts, plus lists, maps and structs rebuilt around
//     converted children, dictionaries decoded, narrow decimals widened);
//     a value the column's type cannot hold is engine.ErrInvalid naming
//     the column, never a value changed.
//   - A table created by ingest gets the Paimon type that holds every value
//     of each Arrow column (arrowconv.PaimonType), or the ingest is refused up front
//     naming the column; it is created only once the first batch has been
//     converted, so a refused create leaves nothing behind.
//   - Ingest streams share one memory budget (Options.Budget): admitted
//     once, in arrival order, they never wait for each other
//     (ingestMemory). A stream's writes are queued while earlier ones
//     become durable, in stream order; Ingest returns once every row it
//     counts is durable.
//   - DuckType spells each Arrow type the tables use as the DuckDB type an
//     INSERT's query is cast to, so that DuckDB's casts and this package's
//     agree on what a column holds.
package ingest
