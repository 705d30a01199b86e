package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flightd/flightd/internal/resultfmt"
	"github.com/flightd/flightd/internal/shell"
	"golang.org/x/term"
)

// connFlags adds the flags that say how to reach a server to fs.
func connFlags(fs *flag.FlagSet) func() shell.Conn {
	server := fs.String("server", envOr("FLIGHTD_LISTEN", "127.0.0.1:31337"), "flightd address: host:port, or grpc://host:port, grpc+tls://host:port (env FLIGHTD_LISTEN)")
	useTLS := fs.Bool("tls", false, "connect with TLS (as a grpc+tls:// server address does)")
	caFile := fs.String("tls-ca", "", "PEM file of the certificate authority (or the self-signed certificate) to trust; default: the system's")
	skipVerify := fs.Bool("tls-skip-verify", false, "do not check the server's certificate (testing only)")
	user := fs.String("user", os.Getenv("FLIGHTD_USER"), "user name to authenticate as; the password comes from FLIGHTD_PASSWORD (env FLIGHTD_USER)")
	return func() shell.Conn {
		return shell.Conn{Server: *server, TLS: *useTLS, CAFile: *caFile, SkipVerify: *skipVerify,
			User: *user, Password: os.Getenv("FLIGHTD_PASSWORD")}
	}
}

// parseInterleaved parses fs from args, letting flags come after the
// positional arguments too ("SELECT 1" --format csv); everything after
// "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func terminalWidth(f *os.File) func() int {
	return func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return w
	}
}

// historyFile is where the interactive shell keeps its history:
// $FLIGHTD_HISTORY, else flightd/history in the user's config directory.
func historyFile() string {
	if v, ok := os.LookupEnv("FLIGHTD_HISTORY"); ok {
		return v // "" keeps none
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "flightd", "history")
}

const sqlUsage = `usage: flightd sql [flags] ["SQL; ..."]

With statements, runs them and prints each result. With -f FILE, or with
standard input that is no terminal, runs the script; the first failing
statement stops it (exit 1) with the line it starts on. With nothing, on a
terminal, starts the interactive shell (\? for its help).

Flags:
`

func sqlCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, sqlUsage)
		fs.PrintDefaults()
	}
	conn := connFlags(fs)
	timeout := fs.Duration("timeout", 0, "give up on a statement after this long (default: no limit of its own; the server's --query-timeout holds)")
	format := fs.String("format", "", "output format: table, csv, tsv, json, jsonl, markdown, parquet, arrow (default: by -o's extension, else table)")
	output := fs.String("o", "", "write results to this file instead of standard output")
	file := fs.String("f", "", "run the statements of this file (- for standard input)")
	keepGoing := fs.Bool("continue-on-error", false, "in a script, report a failed statement and go on (the exit status is still 1)")
	width := fs.Int("max-width", 0, "fit tables into this many columns (default: the terminal's width; none when not a terminal)")
	timing := fs.Bool("timing", false, "print how long each statement took (as \\timing does)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(strings.Join(pos, " "))
	if *file != "" && text != "" {
		return errors.New("sql: give either -f FILE or statements, not both")
	}

	o := shell.Options{Out: stdout, Err: stderr, Width: *width, Timeout: *timeout,
		ContinueOnError: *keepGoing, Timing: *timing}
	if *format != "" {
		if o.Format, err = resultfmt.ParseFormat(*format); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	out := os.Stdout
	if *output != "" {
		if o.Format == "" {
			if f, ok := resultfmt.ForPath(*output); ok {
				o.Format = f
			}
		}
		f, err := os.Create(*output)
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		defer f.Close()
		o.Out, out = f, f
	}
	if o.Format.Binary() && isTerminal(out) {
		return fmt.Errorf("--format %s writes binary data: give -o FILE, or redirect the output", o.Format)
	}
	if out == os.Stdout && isTerminal(os.Stdout) && stdout == os.Stdout {
		o.TermWidth = terminalWidth(os.Stdout)
	}

	ctx := context.Background()
	c, err := shell.Dial(ctx, conn())
	if err != nil {
		return err
	}
	defer c.Close()

	switch {
	case *file != "":
		r, name := io.Reader(os.Stdin), "stdin"
		if *file != "-" {
			f, err := os.Open(*file)
			if err != nil {
				return err
			}
			defer f.Close()
			r, name = f, *file
		}
		err := shell.New(c, o).RunScript(ctx, r, name)
		if errors.Is(err, shell.ErrNoStatement) {
			return nil // an empty script is no error
		}
		return err
	case text != "" && text != "-":
		return shell.New(c, o).RunText(ctx, text)
	case text == "" && isTerminal(os.Stdin):
		o.HistoryFile = historyFile()
		return shell.New(c, o).Interactive(ctx,
			fmt.Sprintf("flightd %s, connected to %s. \\? for help, \\q or Ctrl-D to quit.", version, conn().Server))
	default:
		err := shell.New(c, o).RunScript(ctx, os.Stdin, "stdin")
		if errors.Is(err, shell.ErrNoStatement) {
			return errors.New(`sql: no statement given; usage: flightd sql "SELECT ..." (or a script on standard input, or -f FILE)`)
		}
		return err
	}
}

const exportUsage = `usage: flightd export [flags] "SELECT ..." FILE

Runs the query and writes its result to FILE as Parquet, CSV, TSV, JSON,
JSON lines, Markdown or Arrow, chosen by FILE's extension (.parquet, .csv,
.tsv, .json, .jsonl, .md, .arrow) or --format. The result streams to the
file batch by batch; FILE appears only once it is complete.

Flags:
`

func exportCmd(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, exportUsage)
		fs.PrintDefaults()
	}
	conn := connFlags(fs)
	timeout := fs.Duration("timeout", 0, "give up after this long (default: no limit of its own; the server's --query-timeout holds)")
	format := fs.String("format", "", "file format: parquet, csv, tsv, json, jsonl, markdown, arrow (default: by FILE's extension)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return fmt.Errorf("export: want a query and a file, got %d argument(s)", len(pos))
	}
	o := shell.ExportOptions{Progress: stderr, Timeout: *timeout}
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		o.ProgressLine = true
	}
	if *format != "" {
		if o.Format, err = resultfmt.ParseFormat(*format); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	// Ctrl-C or a TERM cancels the query; Export then removes its
	// temporary file.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := shell.Dial(ctx, conn())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = shell.Export(ctx, c, pos[0], pos[1], o)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (interrupted)", err)
	}
	return err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
