// Package shell is the client side of `flightd sql`, `flightd export`
// and `flightd load`: one Flight SQL connection and session to a server,
// the statement shell over it (from a terminal, a script or the command
// line), the export of a query's result to a file and the load of files
// into a table. Results are written by internal/resultfmt, files read by
// internal/loadfmt.
//
// What it promises:
//
//   - A script is read line by line and each statement runs as soon as
//     its ';' is read (sqlparse.Split decides where statements end, as
//     DuckDB's parser would); a script may end without one. Errors name
//     the line where their statement starts; the first stops the script
//     unless Options.ContinueOnError.
//   - One session: the connection keeps the server's session cookie, so
//     USE holds for the statements after it.
//   - In the interactive shell, Ctrl-C while a statement runs cancels the
//     context of its Flight calls (the server ends the statement) and
//     the shell goes on; Ctrl-C at the prompt clears the statement being
//     typed; Ctrl-D and \q end the shell. Each entry of the history is
//     saved as it is made.
//   - Export streams: batches go to the file as they arrive, through a
//     temporary file beside it that is renamed into place only when the
//     whole result is written and synced, and removed on any failure.
//   - Load streams too: a goroutine reads a few batches ahead of the one
//     being sent, through the server's bulk ingest. Rows are counted as
//     loaded only once the server has acknowledged their stream (it
//     answers a stream once, with the rows it made durable); a load that
//     stops (a bad row, Ctrl-C) ends its stream by closing it, so that
//     count is exact and every row before the stop, none after it, is in
//     the table. Only a stream broken off leaves rows unsure, and the
//     error says how many.
package shell
