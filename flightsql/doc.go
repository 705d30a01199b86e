// Package flightsql is flightd's Arrow Flight SQL server, built on arrow-go's
// flightsql.BaseServer. It knows nothing of Badger or Paimon: it runs
// statements and ingests through the engine.Engine interface.
//
// It does not read SQL itself. Where a statement enters (GetFlightInfo,
// the DoGet of a ticket, a DoPut, CreatePreparedStatement), the engine
// reads it once (engine.Analyze), and what it read travels with the
// statement: its kind (engine.Kind) decides whether it is described or
// run and whether a DoGet may run it, and the engine's calls that admit,
// describe and run it take it instead of the text.
//
// What it serves:
//
//   - statement queries (GetFlightInfo + DoGet): GetFlightInfo does not run
//     a query: the engine describes its result (engine.Prepare) and the
//     ticket carries the SQL, which the DoGet runs and streams, so no result
//     waits in memory between the two calls. A ticket fetched again runs
//     the query again and reads the tables as they are at that DoGet: a
//     pinned cut would have to hold back snapshot expiry and log GC for as
//     long as a client might keep a ticket, and t$rt promises the newest
//     acknowledged rows;
//   - statements that change things (DDL, INSERT) through
//     CommandStatementUpdate, or through a statement query, which then runs
//     them once, at GetFlightInfo, and returns one row with the column
//     rows_affected. The ticket carries that count and no SQL, so every
//     fetch returns it, on any server, and nothing waits in memory for it.
//     A DoGet runs queries only: a ticket or prepared-statement command
//     naming a statement with effects is FailedPrecondition, never a second
//     run;
//   - prepared statements: every statement can be prepared (JDBC and ADBC
//     Python prepare everything); queries get a non-empty dataset schema and
//     is_update=false, other statements is_update=true. Closing an unknown
//     handle succeeds. Statements with placeholders (? or $N) get a
//     parameter schema; parameter values arrive by DoPut (one column per
//     placeholder) and stay bound to the handle until the next DoPut. A
//     query runs with one row of values; an update runs for all rows (an
//     INSERT whose VALUES row is all placeholders writes them as a batch,
//     engine.InsertParams; else engine.Bind: one statement for an
//     INSERT ... VALUES row, one per row otherwise) and returns the rows
//     written;
//   - bulk ingest (CommandStatementIngest): append mode, and create mode
//     (creates an append table from the batch schema);
//   - metadata: GetCatalogs (none), GetDbSchemas, GetTables (t and t$rt,
//     with schemas on request), GetTableTypes, GetSqlInfo.
//
// Reads across nodes (nodes.go). Any node of a cluster serves any ticket
// any node issued, and the same rows from it: a query's ticket carries
// everything its DoGet needs (the SQL, with a prepared statement's bound
// values; the session's database; its part, which names the cut it reads:
// a lake snapshot and for t$rt the log offsets, which every node reads
// alike) and no reference to a server's memory: no prepared statement
// handle, no cached plan, no session. A prepared statement's handle is
// valid only on the node that made it (for its GetFlightInfo, DoPut and
// the DoGet of the command itself), but the tickets of its results are
// not. A ticket that cannot be served says why: one naming a part of a
// result flightd did not plan is InvalidArgument; one whose cut is gone
// (its snapshot expired) is FailedPrecondition and says to run the query
// again. With Options.Nodes set (flightd serve --node-id), each endpoint of
// a result of several (MaxEndpoints above 1, a large plain scan) names a
// live node in its locations: the nodes whose heartbeat is at most
// NodeFresh old, and this one, take the endpoints round robin, each query
// starting at the next node. An endpoint of another node lists it, then
// arrow-flight-reuse-connection://?, then this node; one of this node
// lists arrow-flight-reuse-connection://?, then this node. A node named
// but down (it died less than NodeFresh ago, or is starting) costs a
// client one failed connection, after which it reads the part where it
// asked: the ADBC drivers (Go, and Python and C over it) try each location
// in order and their own connection last, the JDBC driver tries them in
// order and takes its own connection at the reuse-connection. A result of
// one endpoint names no location, as a single server's, and one without
// Options.Nodes none at all. CancelFlightInfo stops the DoGets running on
// the node it reaches only. A bearer token (auth.go) is valid on the nodes
// that share the secret of the node that issued it: ADBC sends its token
// to every location, so a node with another secret refuses it and ADBC
// reads that part where it asked; JDBC logs in at each location.
//
// Bounds (Options; the flags of flightd serve): every statement runs
// under QueryTimeout (DeadlineExceeded naming --query-timeout), holding a
// slot of its admission lane from its start to the end of its stream
// (package internal/admit: describing and work the engine calls short in
// one lane, the rest in the other, MaxConcurrent slots each; a statement
// without a free slot waits in its lane's FIFO queue, and is
// ResourceExhausted only when MaxQueued wait or its wait passes
// QueueTimeout; the DoGet of a statement GetFlightInfo accepted waits
// outside both bounds). StallGuard ends a stream whose client takes no
// message for --stall-timeout, which stops its statement; SQL text longer than
// MaxStatementBytes is InvalidArgument wherever it arrives (statement,
// update, prepare, ticket, bound parameters); one DoPut binds at most
// MaxParamBytes of parameter values; at most MaxPrepared prepared
// statements are open (ResourceExhausted beyond), and a background janitor
// drops those idle for PreparedTTL. Every result stream (queries, plain
// scans, metadata) is sent in messages of at most MaxBatchBytes of Arrow
// data (split.go): larger batches go as slices, a larger single row alone.
// DuckDB running out of its memory limit is ResourceExhausted.
//
// Errors map to gRPC codes through errors.Is on the engine sentinels.
package flightsql
