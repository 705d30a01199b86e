package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/flightd/flightd/internal/loadfmt"
	"github.com/flightd/flightd/internal/shell"
)

const loadUsage = `usage: flightd load [flags] DB.TABLE FILE...

Loads files into a table through the server's bulk ingest, batch by
batch, in the order given: Parquet, CSV or TSV (with a header line),
JSON (lines, or one array) and Arrow IPC files or streams, chosen by
extension (.parquet, .csv, .tsv, .json, .jsonl, .arrow; text may be .gz
or .zst) or --format. A FILE may be a directory (the files in it of a
known format, sorted) or a glob pattern; - is standard input. Values are
converted to the table's types exactly; the first that does not fit
stops the load, naming its file and line, and says how many rows the
server acknowledged before it (those stay in the table). Exit status 1.

Flags:
`

func loadCmd(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, loadUsage)
		fs.PrintDefaults()
	}
	conn := connFlags(fs)
	format := fs.String("format", "", "the files' format: parquet, csv, tsv, json, arrow (default: by each file's extension)")
	create := fs.Bool("create", false, "create the table from the first file's columns when it does not exist (CSV and JSON types inferred from its first rows)")
	pk := fs.String("primary-key", "", "with --create: the primary key, columns separated by commas (default: none, an append table)")
	buckets := fs.Int("bucket", 0, "with --create and --primary-key: the number of buckets (default: the server's, 4)")
	delim := fs.String("delimiter", "", "CSV field delimiter, one character or \\t (default: ',', for .tsv a tab)")
	null := fs.String("null", "", `CSV: an unquoted field that means NULL besides the empty one (e.g. NULL or \N)`)
	batchRows := fs.Int("batch-rows", loadfmt.DefaultBatchRows, "rows per batch sent")
	streamRows := fs.Int64("stream-rows", shell.DefaultStreamRows, "rows per ingest stream: the server acknowledges each stream once it is durable")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		fs.Usage()
		return fmt.Errorf("load: want a table and at least one file, got %d argument(s)", len(pos))
	}
	o := shell.LoadOptions{Create: *create, Buckets: *buckets, Null: *null, BatchRows: *batchRows,
		StreamRows: *streamRows, Progress: stderr}
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		o.ProgressLine = true
	}
	if *format != "" {
		if o.Format, err = loadfmt.ParseFormat(*format); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	if *pk != "" {
		for _, k := range strings.Split(*pk, ",") {
			if k = strings.TrimSpace(k); k == "" {
				return fmt.Errorf("--primary-key %q: an empty column name", *pk)
			}
			o.PrimaryKey = append(o.PrimaryKey, strings.TrimSpace(k))
		}
	}
	switch d := *delim; {
	case d == "":
	case d == `\t` || d == "\t" || strings.EqualFold(d, "tab"):
		o.Delimiter = '\t'
	case len(d) == 1 && d != `"` && d != "\n" && d != "\r":
		o.Delimiter = d[0]
	default:
		return fmt.Errorf("--delimiter %q: want one character (not a quote or line break), or \\t", d)
	}
	if *buckets < 0 {
		return fmt.Errorf("--bucket %d: want a positive number", *buckets)
	}
	if *batchRows <= 0 || *streamRows <= 0 {
		return errors.New("--batch-rows and --stream-rows must be positive")
	}

	// The first Ctrl-C (or TERM) stops the load after the batch being
	// sent: the stream is closed as usual, so the report of what the
	// server acknowledged is exact. A second one breaks the stream off.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	o.Stop = stop
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		n := 0
		for {
			select {
			case <-sig:
			case <-ctx.Done():
				return
			}
			n++
			if n == 1 {
				fmt.Fprintln(stderr, "\nstopping after the batch being sent (Ctrl-C again to break off at once)")
				close(stop)
				continue
			}
			cancel()
			return
		}
	}()
	c, err := shell.Dial(ctx, conn())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = shell.Load(ctx, c, pos[0], pos[1:], o)
	return err
}
