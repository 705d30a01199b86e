// Package query is flightd's SQL engine and the only package that links
// DuckDB (cgo, build tag duckdb_arrow).
//
// A statement is read once, where it enters the server (Engine.Analyze:
// plan.Statement, one pass of package sqlparse's lexer for its kind, hint
// comment and parameters, and a query's shape), and what was read travels
// with it to every call that admits, describes and runs it; DuckDB's parse
// tree of it, once a stage has it, travels too. Statements are routed by
// their leading keywords:
//
//   - DDL (CREATE/DROP DATABASE, CREATE/DROP TABLE, ALTER TABLE SET/RESET,
//     ADD/RENAME/DROP/ALTER COLUMN, Flink's and Spark's column lists
//     and MODIFY as one schema change each, RENAME TO) goes to the lake catalog
//     through package lakestream, never to DuckDB's catalog (package ddl).
//   - INSERT INTO t [(cols)] <query> runs <query> on DuckDB, casts the result
//     to t's column types and appends it to t's log; it returns once durable.
//   - INSERT OVERWRITE, UPDATE and DELETE on lake-stream tables are rejected:
//     they would read committed lake data while the log may hold newer values.
//   - A query runs on DuckDB, locked down (lockdown.go): no files, network,
//     extensions or settings, and what runs is the one statement DuckDB's
//     parser finds in the text, which must be a SELECT or EXPLAIN; anything
//     else is refused as invalid, naming its kind. The statement runs as
//     written: every name of a flightd table (db.t or db."t$rt";
//     unqualified names resolve in the session's database, engine.WithDatabase,
//     "default" unless the client chose another) is a view in
//     DuckDB's catalog over flightd's scan table function (views.go,
//     tablefn.go), and the statement's scans are found from DuckDB's own
//     parse tree (json_serialize_sql), so any SQL DuckDB can run over
//     those names works: joins, CTEs, subqueries, aggregates, window
//     functions, EXPLAIN.
//   - Each reference's scan reads only what the statement can use: the
//     columns DuckDB's projection pushdown asks for, and for WHERE
//     conjuncts of the form column op constant (=, <, <=, >, >=, IN,
//     BETWEEN; integer, string and DATE constants) only the partitions,
//     buckets and data files whose values or key/value statistics can match
//     (package plan). Pruning only skips files; DuckDB applies the whole
//     WHERE, so a result never depends on it
//     (TestPushdownNeverChangesResults). Several DuckDB threads read one
//     scan, each taking the next batch, handed over in C without a copy.
//
// Time travel (travel.go, plan.TravelOf): a reference t AT (VERSION => n | 'tag') or AT
// (TIMESTAMP => t) reads that snapshot of the lake. DuckDB refuses AT on a
// view, so the reference's text (located from the parse tree and lexed to
// the end of its AT clause) is replaced by a view of its own, t$at<id>,
// whose scan reads the snapshot with the columns of the schema it was
// written under (as Java Paimon reads it); such statements bypass the
// parse cache, whose trees carry another text's locations. Spark's VERSION
// AS OF and TIMESTAMP AS OF, Flink's FOR SYSTEM_TIME AS OF and its
// OPTIONS hint are rewritten into that clause when the statement is read
// (sqlparse.RewriteTravels); VERSION AS OF's AT clause is marked so that
// it reads a tag of its name first, as Paimon's scan.version does.
//
// Streaming (stream.go): in a session with streaming on
// (engine.WithStreaming), a query must be SELECT cols FROM t$rt |
// t$changelog [WHERE conjuncts], which runs without DuckDB as an unbounded
// lakestream.Stream; _log_offset/_bucket conditions are its resume
// position. Every other query is refused.
//
// An INSERT whose values do not match the columns it fills is refused:
// every VALUES row is counted (sqlparse.ValuesList), and any other source
// query passes its surplus columns through so that the count sees them.
//
// Paimon's procedures (procedures.go): CALL sys.create_tag, sys.delete_tag,
// sys.rollback_to (Spark's sys.rollback), sys.expire_snapshots and
// sys.compact, with Paimon's positional and named arguments; tags and
// rollbacks are lake.Table's, expiration and compaction run through
// Options.Maintenance (the tiering service), under its protections.
//
// Admission (lane.go, statements.go): ShortWork tells the server which
// statements run in the short admission lane (their cost is bounded by
// their text; of the CALLs only sys.cancel); sys.statements lists what the server's admission
// controller runs and queues, and CALL sys.cancel(id) ends one. Ingest
// streams share Options.IngestMemory (package ingest): admitted
// once, in arrival order, they never wait for each other.
//
// The cluster: sys.nodes lists the nodes serving the warehouse and the
// tables each tiers, and sys.tiering's owner names each table's node, as
// Options.Cluster says (lakestream.Service.Nodes and StatusIn; a node
// alone is lakestream.Alone: one row with an empty node_id, owner NULL).
//
// Ingest (Engine.Ingest, package ingest) brings each batch to the table's
// Arrow types exactly (Arrow's safe casts, plus lists, maps and structs
// rebuilt around converted children, dictionaries decoded, narrow decimals
// widened). A table created by ingest gets the Paimon type that holds every
// value of each Arrow column, or the ingest is refused up front
// naming the column; it is created only once the first batch has been
// converted, so a refused create leaves nothing behind.
//
// Table metadata is lakestream's: what another process (another flightd
// node serving the warehouse, Java Paimon) commits, a schema, a DROP, a
// RENAME, a table created again under a name, its log switched off or on,
// is used by the next statement. A statement checks each table it names
// once while it is planned (lakestream.Planning; once more when the server
// asks whether it is short work) and once when it scans. A query whose
// table changes between the schema it planned with and its scan is planned
// again once (its scan refuses the stale plan, which would project columns
// by old positions); should it change again, the query fails
// (FailedPrecondition, "table schema changed during the statement; run it
// again"). A statement that reads DuckDB's catalog (information_schema,
// pg_catalog, duckdb_views(), SHOW TABLES and the like) first drops the
// views of tables that are gone, whose log is off or whose columns changed
// (views.go), so that the catalog does not list what another process
// dropped, then makes a view of every table of the warehouse that has
// none, so that it lists every table, also right after a start.
//
// Prepare describes a query from its prepared statement: its schema is
// made from the prepared statement's column types, and nothing of it
// runs, unless a column takes the row path (below), whose types come from
// a result: the statement then runs under LIMIT 0.
//
// Prepare describes a statement with parameter placeholders too
// (params.go): a query's parameter types are what DuckDB infers with the
// statement's tables bound (a string where it cannot tell; integers as
// Int64, decimals as Float64, timestamps in milliseconds, the types the
// Arrow Flight SQL JDBC driver binds correctly), an INSERT's are its VALUES
// columns' types. Values are bound as SQL literals (Engine.Bind), so a
// bound statement runs exactly as the same statement written with literals:
// point lookups, pruning and the parse cache apply.
//
// DuckDB connections are reused (at most 8 idle), each with its prepared
// json_serialize_sql statement. Parse trees are
// cached by statement shape, the text without its integer and string
// literals (plan.ShapeCache): a shape is learnt only when a second parse with
// other literals differs in nothing but one constant per literal, so a
// cached tree is the one DuckDB would give.
//
// A query's result streams (arrowresult.go): DuckDB runs it as a streaming
// result and each chunk it produces is handed out as an Arrow batch over
// DuckDB's memory, without a copy, so DuckDB computes only as fast as the
// caller reads. A batch is valid until the reader's next Next or Release;
// whoever keeps it, or a string of it, retains it or copies the value.
// The query's views and scans, its connection and its memory-guard entry are
// released with the reader. Result columns whose DuckDB Arrow type differs
// from what clients have always got (INTERVAL, UUID, ENUM, ARRAY, UNION,
// BIT, TIMETZ, UHUGEINT, JSON as text) keep the row path (rowreader.go):
// DuckDB materialises those results, outside its memory_limit, so every
// statement DuckDB runs is registered with a memory guard (package
// memguard) that cancels it when the process passes Options.MemoryCeiling.
// An INSERT reads its query's whole result into Go memory before it
// writes, so that a query over the table it fills never sees its own rows.
package query
