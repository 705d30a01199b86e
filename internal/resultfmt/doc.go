// Package resultfmt writes query results (Arrow record batches) in the
// formats `flightd sql --format` and `flightd export` offer: an aligned
// table for people, CSV, TSV, JSON, JSON lines, Markdown, Parquet and
// Arrow IPC. One layer serves both commands, so a value reads the same
// whichever writes it.
//
// What it promises:
//
//   - Every format but the table streams: memory holds a few batches, not
//     the result (Parquet holds the row group it is building, at most
//     64 MiB of encoded data). The table keeps its first MaxRows rows'
//     text and counts the rest.
//   - Values are exact. Integers and decimals are written digit for digit
//     (a DECIMAL(10,2) 12.5 is 12.50, in JSON a number); floats in Go's
//     shortest text that reads back to the same float, NaN and infinities
//     as "NaN", "Infinity", "-Infinity"; timestamps as
//     2024-01-01 10:00:00.123456 (with a zone, +02:00 or Z, only where the
//     type has one); bytes as base64 in data formats and \x6869 in
//     display formats; lists, structs, maps and intervals as JSON (in JSON
//     itself as arrays and objects, struct fields in order, map keys as
//     their text).
//   - CSV and TSV tell NULL (an empty field) from an empty string ("").
//   - Parquet and Arrow files keep the result's Arrow types (the schema is
//     stored in the Parquet file); the Flight SQL field metadata of the
//     wire is dropped.
//   - The table fits a width: it cuts the widest cells (with "…") down to
//     a common width no narrower than 12 columns, then hides columns from
//     the right and says which in its last line.
package resultfmt
