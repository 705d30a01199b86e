// Package shell is the client side of `flightd sql` and `flightd export`:
// one Flight SQL connection and session to a server, the statement
// shell over it (from a terminal, a script or the command line) and the
// export of a query's result to a file. Results are written by
// internal/resultfmt.
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
package shell
