// Package arrowconv brings Arrow data to the types of flightd's tables:
// the Paimon type a table created from an Arrow column gets
// (PaimonType), and a batch's values converted to a table's Arrow types
// (Record, Array). The server's ingest converts every batch it is sent
// with it; `flightd load` converts each batch before sending it, so that
// a value the table cannot hold is found with the row it is in.
//
// What it promises:
//
//   - Conversion is exact: Arrow's safe casts (overflow and truncation
//     checked), plus lists, maps and structs rebuilt around converted
//     children (struct fields matched by name), dictionaries decoded and
//     narrow decimals widened. A value the column's type cannot hold is
//     an error naming the column, never a value changed.
//   - PaimonType holds every value of the Arrow type (unsigned integers
//     the next wider signed type, uint64 DECIMAL(20, 0)), or is refused
//     with what to send instead.
package arrowconv
