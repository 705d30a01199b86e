// Package perf serves Arrow Flight's benchmark protocol (Arrow's
// cpp/src/arrow/flight/perf.proto) beside Flight SQL on the same port, so
// that Arrow's C++ arrow-flight-benchmark, and its Go port in
// bench/flightperf, measure flightd's Flight transport: how fast the server
// streams record batches out (DoGet) and takes them in (DoPut), with no SQL
// and no storage in the way.
//
// What it promises:
//
//   - Wrap returns a Flight service that answers the benchmark's calls and
//     hands every other call to the Flight SQL service unchanged: the
//     action "ping"; GetFlightInfo whose command is a serialised perf.Perf
//     (not a Flight SQL command, which are google.protobuf.Any messages);
//     DoGet whose ticket is a serialised perf.Token; DoPut with an empty
//     descriptor. Flight SQL commands and tickets are never taken for
//     benchmark ones (their Any type URL tells them apart).
//   - GetFlightInfo answers stream_count endpoints whose tickets name
//     consecutive row ranges, the schema of four int64 columns a, b, c, d,
//     total_records = stream_count × records_per_stream and total_bytes =
//     32 bytes a row, as the C++ perf server does; DoGet streams that many
//     rows in batches of records_per_batch; DoPut reads and discards its
//     stream.
//   - Bad benchmark requests (no streams, no rows, batches of no rows) get
//     InvalidArgument naming the field, as do requests too large to serve
//     safely, naming the field and its bound: records_per_batch above
//     MaxRecordsPerBatch (64 MiB a batch), records_per_stream above
//     MaxRecordsPerStream, stream_count above MaxStreamCount, and tickets
//     that span more rows than their records_per_stream.
//   - Wrapping is cheap: a Flight SQL call pays one protobuf decode of its
//     command or ticket to be told apart.
package perf
