// Package loadfmt reads the files `flightd load` takes (Parquet, CSV and
// TSV, JSON lines and JSON arrays, Arrow IPC files and streams) as Arrow
// batches in a table's types, and says where each row came from, so that
// a value the table cannot take is reported with the file and line (or
// row group and row) it is on. It reads what package resultfmt writes:
// `flightd export` followed by `flightd load` gives back the same values.
//
// What it promises:
//
//   - Files are read batch by batch: memory holds a few batches (at most
//     Options.BatchRows rows, about Options.BatchBytes of data) and a read
//     buffer, whatever the file's size. Parquet is read a column chunk's
//     pages at a time; an Arrow file a record batch at a time.
//   - With Options.Table, values are brought to the table's Arrow types
//     exactly: text is parsed as that type, Arrow data converted by
//     package arrowconv. A value that does not fit stops the reader
//     (Err is a *RowError naming the file, the line or row, and the
//     column); the batch before it holds every row before the bad one,
//     so a loader can send exactly the rows before it.
//   - Without Options.Table, Parquet and Arrow files give their own types
//     and CSV and JSON types are inferred from the first batch's values
//     (infer.go says how).
//   - Text formats: CSV as RFC 4180 (a header line; quoted fields may hold
//     delimiters, quotes and line breaks). An unquoted empty field is
//     NULL, a quoted one ("") an empty string; Options.Null names one more
//     spelling of NULL. JSON: one object per row, one after another (JSON
//     lines) or in one array; a missing key is NULL, a key that is no
//     column an error. Values are written as resultfmt writes them:
//     timestamps as 2024-01-01 10:00:00.5 (a zone, Z or +02:00, where the
//     column has one; one without a zone is UTC there), bytes in base64
//     (or \x hex), lists, structs and maps as JSON.
//   - Line numbers count from 1 and name the line a row starts on (a CSV
//     row may span lines). Parquet and Arrow rows are named by row group
//     (or record batch) and row, counting from 0.
package loadfmt
