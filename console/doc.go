// Package console serves the operator's page: one HTML page, a script and
// a style sheet, embedded in the binary (nothing is fetched from anywhere
// else, so it works without a network), that polls a JSON document of the
// server's state every two seconds while it is shown (not in a background
// tab) and renders it. flightd serve mounts it on --metrics-addr and
// --debug-addr, under /ui/.
//
// What it shows, each from the source its system table reads, not through
// DuckDB:
//
//   - every table of the warehouse: its kind and buckets, its rows (the
//     latest snapshot's record count plus the log rows not yet in the lake:
//     exact for an append table; for a primary-key table the versions of a
//     key not merged yet count more than once), the size of its live data
//     files, its latest snapshot and when it was committed, its freshness
//     (tiering interval) and its log lag in rows and age (sys.tiering,
//     summed over buckets as the metrics sum it);
//   - tiering health: the tables whose rounds fail, with the number of
//     failed rounds, the newest error and when the next try is due;
//   - the statements running and queued (sys.statements, from the
//     admission controller) with a button that ends one as CALL
//     sys.cancel(id) does;
//   - the nodes of a cluster (sys.nodes), when there are several;
//   - the process: version, node, uptime, resident memory and Go heap
//     beside the memory limit, and the statement load.
//
// Authentication is the Flight port's: with a password configured
// (Options.Auth), every request needs that user name and password as HTTP
// Basic credentials (a browser asks for them), or a bearer token a Flight
// login returned; without, the page is open, as the Flight port is.
//
// Cancelling is a POST of JSON to /ui/api/cancel. It is refused for a
// cross-origin request (net/http.CrossOriginProtection: the browser's
// Sec-Fetch-Site, else Origin against Host) and for any body that is not
// JSON (a form another site could post). Each cancel is logged with the
// user who asked, their address, and the statement's id, user, client
// and SQL.
//
// The JSON document (GET /ui/api/state) is the State type; times are Unix
// milliseconds, with the server's clock in State.Now, so that the page
// shows ages ("3 s ago") by the server's clock whatever the browser's.
package console
