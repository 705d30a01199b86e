package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/flightd/flightd/internal/resultfmt"
	"github.com/flightd/flightd/sqlparse"
)

// Options configure a Shell.
type Options struct {
	// Format is how results are written; "" is the table.
	Format resultfmt.Format
	// Out receives results; Err errors, timings and notices.
	Out, Err io.Writer
	// Width fits tables into this many columns; 0 asks TermWidth.
	Width int
	// TermWidth, if set, returns the width of the terminal Out is (0 when
	// it is none); it is asked before each table, so a resized window is
	// followed.
	TermWidth func() int
	// Timeout bounds each statement; 0 leaves it to the server.
	Timeout time.Duration
	// ContinueOnError goes on after a failed statement in a script (the
	// script still fails at its end); by default the first error stops it.
	ContinueOnError bool
	// Timing prints each statement's time, as \timing does.
	Timing bool
	// HistoryFile is where the interactive shell keeps its history; ""
	// keeps none.
	HistoryFile string
}

// Shell runs statements and backslash commands against one server
// session, from a script or a terminal.
type Shell struct {
	c       *Client
	o       Options
	results int    // results written to Out
	db      string // the database USE chose; "" is the session's default
	tables  *tableCache
	// interrupt, in the interactive shell, delivers Ctrl-C while a
	// statement runs.
	interrupt <-chan os.Signal
}

// New returns a Shell over c.
func New(c *Client, o Options) *Shell {
	if o.Format == "" {
		o.Format = resultfmt.Table
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	return &Shell{c: c, o: o, tables: &tableCache{}}
}

// ErrNoStatement is RunScript's error for a script without a statement.
var ErrNoStatement = errors.New("no statement given")

// RunScript runs the statements and backslash commands of a script,
// reading it line by line, so a statement runs as soon as its ';' has
// been read. name labels errors ("stdin", a file name): each says
// name:LINE: where its statement starts. The first error stops the
// script unless ContinueOnError; then the script fails at its end,
// saying how many statements failed.
func (s *Shell) RunScript(ctx context.Context, r io.Reader, name string) error {
	return s.runScript(ctx, r, func(line int) string { return fmt.Sprintf("%s:%d: ", name, line) })
}

// RunText runs the statements of text given on the command line. Errors
// of a text of one statement are bare; of several, they say which line.
func (s *Shell) RunText(ctx context.Context, text string) error {
	stmts, rest := sqlparse.Split(text)
	_, last, _ := sqlparse.Last(text[rest:])
	where := func(line int) string { return fmt.Sprintf("line %d: ", line) }
	if len(stmts)+btoi(last) <= 1 {
		where = func(int) string { return "" }
	}
	return s.runScript(ctx, strings.NewReader(text), where)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Shell) runScript(ctx context.Context, r io.Reader, where func(line int) string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var f feeder
	ran, failed := 0, 0
	var first string // where the first failed statement starts
	// fail words the error of what starts on line; it returns the error
	// that stops the script, or nil to go on.
	fail := func(err error, line int) error {
		err = fmt.Errorf("%s%w", where(line), err)
		failed++
		if !s.o.ContinueOnError {
			return err
		}
		if failed == 1 {
			first = strings.TrimSuffix(where(line), ": ")
		}
		fmt.Fprintln(s.o.Err, "Error:", err)
		return nil
	}
	run := func(st statement) error {
		ran++
		if err := s.exec(ctx, st.text); err != nil {
			return fail(err, st.line)
		}
		return nil
	}
	for {
		line, rerr := br.ReadString('\n')
		if line != "" {
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if f.blank() && isMeta(line) {
				f.skip()
				ran++
				quit, err := s.meta(ctx, line)
				if err != nil {
					if err := fail(err, f.line); err != nil {
						return err
					}
				}
				if quit {
					break
				}
				continue
			}
			for _, st := range f.feed(line) {
				if err := run(st); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			st, ok, err := f.finish()
			if err != nil {
				ran++
				if err := fail(err, st.line); err != nil {
					return err
				}
			} else if ok {
				if err := run(st); err != nil {
					return err
				}
			}
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if failed > 0 {
		if first != "" {
			first = ", the first at " + first
		}
		return fmt.Errorf("%d of %d statements failed%s", failed, ran, first)
	}
	if ran == 0 {
		return ErrNoStatement
	}
	return nil
}

// exec runs one statement and writes its result.
func (s *Shell) exec(ctx context.Context, sql string) error {
	// A file format holds one result: the query's. What USE, SET, DDL and
	// writes return (rows_affected) is not written into it.
	discard := s.o.Format.Binary() && sqlparse.Classify(sql) != sqlparse.KindQuery
	if s.o.Format.Binary() && !discard && s.results > 0 {
		return fmt.Errorf("--format %s holds one result, and a query's was written already: give one query (or use flightd export)", s.o.Format)
	}
	if s.o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.o.Timeout)
		defer cancel()
	}
	ctx, stop := s.cancelOnInterrupt(ctx)
	defer stop()
	start := time.Now()
	var w resultfmt.Writer
	_, err := s.c.Query(ctx, sql, func(sc *arrow.Schema) (Sink, error) {
		if discard {
			return sinkFunc(func(arrow.RecordBatch) error { return nil }), nil
		}
		var err error
		w, err = resultfmt.New(s.o.Format, s.o.Out, sc, resultfmt.Options{Width: s.width()})
		return w, err
	})
	if err == nil && w != nil {
		err = w.Close()
		s.results++
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && s.o.Timeout > 0 {
			return fmt.Errorf("timed out after %s (--timeout)", s.o.Timeout)
		}
		return err
	}
	if s.o.Timing {
		fmt.Fprintf(s.o.Err, "Time: %.3f ms\n", float64(time.Since(start).Microseconds())/1000)
	}
	s.noteStatement(sql)
	return nil
}

// cancelOnInterrupt cancels ctx when Ctrl-C arrives while the statement
// runs (interactive shell only); stop ends the watch.
func (s *Shell) cancelOnInterrupt(ctx context.Context) (context.Context, func()) {
	interrupt := s.interrupt
	if interrupt == nil {
		return ctx, func() {}
	}
	// A Ctrl-C from before the statement is not for it.
	for len(interrupt) > 0 {
		<-interrupt
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-interrupt:
			cancel()
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// noteStatement follows what a statement changed that the shell keeps:
// the database USE chose, and the table names completion offers.
func (s *Shell) noteStatement(sql string) {
	switch sqlparse.Classify(sql) {
	case sqlparse.KindUse:
		if u, err := sqlparse.ParseUse(sql); err == nil {
			s.db = u.Name
		}
		s.tables.invalidate()
	case sqlparse.KindCreateDatabase, sqlparse.KindDropDatabase, sqlparse.KindCreateTable,
		sqlparse.KindDropTable, sqlparse.KindAlterTable:
		s.tables.invalidate()
	}
}

func (s *Shell) width() int {
	if s.o.Width > 0 {
		return s.o.Width
	}
	if s.o.TermWidth != nil {
		return s.o.TermWidth()
	}
	return 0
}

// database is the session's database, as far as the shell knows.
func (s *Shell) database() string {
	if s.db == "" {
		return "default"
	}
	return s.db
}

// statement is a statement of a script and the line it starts on.
type statement struct {
	text string
	line int
}

// feeder collects a script's lines and hands out each statement once its
// ';' has come.
type feeder struct {
	buf   string // text not yet cut into statements
	start int    // line of buf's first line
	line  int    // lines read
	// lines are the lines since the last statement ended, for history.
	lines []string
}

// feed adds a line (without its line break) and returns the statements
// it completed.
func (f *feeder) feed(line string) []statement {
	f.line++
	if f.buf == "" {
		f.start = f.line
	}
	f.buf += line + "\n"
	f.lines = append(f.lines, line)
	if !strings.Contains(line, ";") {
		// Only a ';' ends a statement: no need to lex the text again.
		return nil
	}
	stmts, rest := sqlparse.Split(f.buf)
	out := make([]statement, len(stmts))
	for i, st := range stmts {
		out[i] = statement{text: st.Text, line: f.start + st.Line - 1}
	}
	f.start += strings.Count(f.buf[:rest], "\n")
	f.buf = f.buf[rest:]
	if strings.TrimSpace(f.buf) == "" {
		f.buf = ""
	}
	return out
}

// skip counts a line that is not SQL (a backslash command).
func (f *feeder) skip() { f.line++ }

// blank reports whether no statement is under way.
func (f *feeder) blank() bool { return strings.TrimSpace(f.buf) == "" }

// reset drops the statement under way (Ctrl-C at the prompt).
func (f *feeder) reset() {
	f.buf = ""
	f.lines = nil
}

// history returns the history entries of the statements that ended (the
// lines typed for them, joined into one entry) and forgets them; the
// lines of a statement still under way stay.
func (f *feeder) history() []string {
	if !f.blank() {
		return nil
	}
	lines := f.lines
	f.lines = nil
	if len(lines) == 0 {
		return nil
	}
	for _, l := range lines {
		if strings.Contains(l, "--") {
			// A line comment would swallow the lines joined after it:
			// an entry per line.
			return lines
		}
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return []string{strings.Join(lines, " ")}
}

// finish returns the statement the script ends with, if no ';' ended it.
func (f *feeder) finish() (statement, bool, error) {
	st, ok, err := sqlparse.Last(f.buf)
	f.buf = ""
	return statement{text: st.Text, line: f.start + st.Line - 1}, ok, err
}
