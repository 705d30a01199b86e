// Command flightd serves Apache Paimon tables over Arrow Flight SQL and keeps
// them fresh: writes land in an embedded durable log, are visible at once in
// t$rt, and are tiered into Paimon snapshots in the background.
//
//	flightd serve [flags]      run the server
//	flightd sql [flags] [SQL]  run statements against a running server, or a shell
//	flightd export [flags] SQL FILE  write a query's result to a file
//	flightd load [flags] DB.TABLE FILE...  load files into a table
//	flightd log migrate --to LOG [serve flags]  move the tables to another log
//	flightd version
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sql":
		err = sqlCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "export":
		err = exportCmd(os.Args[2:], os.Stderr)
	case "load":
		err = loadCmd(os.Args[2:], os.Stderr)
	case "log":
		err = logCmd(os.Args[2:], os.Stdout)
	case "version", "--version", "-v":
		fmt.Println("flightd", version)
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "flightd: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // --help printed the usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flightd:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  flightd serve [--listen ADDR] [--data-dir DIR] [--warehouse DIR|s3://BUCKET/PATH]
                [--s3-endpoint URL] [--s3-region R] [--s3-access-key-id ID] [--s3-path-style BOOL]
                [--tiering-interval DUR] [--tiering-rows N] [--log-retention DUR] [--log-disk-budget SIZE]
                [--log-level LEVEL] [--debug-addr ADDR] [--metrics-addr ADDR]
                [--memory-limit SIZE|PCT] [--query-timeout DUR] [--max-concurrent-queries N]
                [--max-prepared N] [--prepared-idle-timeout DUR] [--max-statement-bytes SIZE]
                [--max-message-bytes SIZE] [--max-result-batch-bytes SIZE] [--shutdown-grace DUR]
  flightd sql [--server ADDR] [--format F] [-o FILE] ["SQL; ..." | -f FILE]
                run statements; with none, on a terminal, an interactive shell
                (flightd sql --help lists its flags)
  flightd export [--server ADDR] [--format F] "SELECT ..." FILE
                write a query's result to FILE: Parquet, CSV, JSON lines, ... by its extension
  flightd load [--server ADDR] [--create [--primary-key COLS] [--bucket N]] DB.TABLE FILE...
                load Parquet, CSV, JSON and Arrow files (directories, globs) into a table
                (flightd load --help lists its flags)
  flightd log migrate --to badger|kafka://HOST:PORT[,HOST:PORT] [--to-kafka-topic-prefix P] [serve flags]
                drain every table's log into the lake and move the tables to another log
                (the server stopped; serve flags, --log first, say where they are now)
  flightd version

Every serve flag has an environment variable: FLIGHTD_LISTEN, FLIGHTD_DATA_DIR,
FLIGHTD_WAREHOUSE, FLIGHTD_TIERING_INTERVAL, FLIGHTD_TIERING_ROWS, FLIGHTD_LOG_RETENTION, FLIGHTD_LOG_DISK_BUDGET,
FLIGHTD_LOG_LEVEL, FLIGHTD_DEBUG_ADDR, FLIGHTD_METRICS_ADDR, FLIGHTD_S3_ENDPOINT, FLIGHTD_S3_REGION,
FLIGHTD_S3_ACCESS_KEY_ID, FLIGHTD_S3_PATH_STYLE, and FLIGHTD_<FLAG> for each bound
(FLIGHTD_MEMORY_LIMIT, FLIGHTD_QUERY_TIMEOUT, ...); the S3 secret only as
FLIGHTD_S3_SECRET_ACCESS_KEY. flightd serve --help lists every flag with its default.
Flags win; empty variables count as unset.
`)
}
