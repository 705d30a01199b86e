// Package lakestream is the table service that flightd's SQL engine and
// Flight SQL server talk to. It joins the lake catalog (package lake) and the
// streaming log (package logstore):
//
//   - DDL creates and drops Paimon tables and their logs together. Tables
//     created here carry the options lakestream.enabled=true and
//     lakestream.table-id=<uuid>; the id names the table's log, so a dropped
//     and re-created table never sees its predecessor's records.
//   - Write validates an Arrow batch against the table (names, types castable
//     to the column types, primary-key columns not null), splits it by
//     Paimon's bucket function and appends it to the log; it returns once the
//     records are durable. Every bucket's part of one batch commits atomically.
//   - Scan reads t (the newest lake snapshot) or t$rt (that snapshot plus the
//     un-tiered log, see package union).
//
// The log offsets that a lake snapshot holds are recorded in the snapshot's
// properties under OffsetsProperty (see package tiering for the format).
package lakestream
