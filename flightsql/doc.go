// Package flightsql is flightd's Arrow Flight SQL server, built on arrow-go's
// flightsql.BaseServer. It knows nothing of Badger or Paimon: it runs
// statements and ingests through the engine.Engine interface.
//
// What it serves:
//
//   - statement queries (GetFlightInfo + DoGet): the statement runs when the
//     FlightInfo is asked for, so the FlightInfo carries the real result
//     schema; the result waits for DoGet under a handle for ResultTTL. The
//     ticket also carries the SQL text, so a ticket whose result expired (or
//     was already fetched) runs the statement again instead of failing;
//   - statements that change things (DDL, INSERT) through
//     CommandStatementUpdate, or through a statement query, which then
//     returns one row with the column rows_affected;
//   - prepared statements: every statement can be prepared (JDBC and ADBC
//     Python prepare everything); queries get a non-empty dataset schema and
//     is_update=false, other statements is_update=true. Closing an unknown
//     handle succeeds. Statements with placeholders (? or $N) get a
//     parameter schema; parameter values arrive by DoPut (one column per
//     placeholder) and stay bound to the handle until the next DoPut. A
//     query runs with one row of values; an update runs for all rows (an
//     INSERT whose VALUES row is all placeholders writes them as a batch,
//     engine.InsertParams; else engine.BindParams: one statement for an
//     INSERT ... VALUES row, one per row otherwise) and returns the rows
//     written;
//   - bulk ingest (CommandStatementIngest): append mode, and create mode
//     (creates an append table from the batch schema);
//   - metadata: GetCatalogs (none), GetDbSchemas, GetTables (t and t$rt,
//     with schemas on request), GetTableTypes, GetSqlInfo.
//
// Errors map to gRPC codes through errors.Is on the engine sentinels.
package flightsql
