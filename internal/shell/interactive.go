package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/peterh/liner"
)

// Interactive reads statements from the terminal on standard input with
// line editing, history and completion, until \q or Ctrl-D. A failed
// statement prints its error and the shell goes on. Ctrl-C cancels the
// running statement (its Flight call's context, which ends the statement
// on the server) or clears the statement being typed.
func (s *Shell) Interactive(ctx context.Context, banner string) error {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetMultiLineMode(true)
	ln.SetTabCompletionStyle(liner.TabPrints)
	ln.SetWordCompleter(s.complete)
	s.loadHistory(ln)

	// Between prompts the terminal sends Ctrl-C as SIGINT, which cancels
	// the running statement instead of ending the shell.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	s.interrupt = sigs
	defer func() { s.interrupt = nil }()

	if banner != "" {
		fmt.Fprintln(s.o.Err, banner)
	}
	var f feeder
	for {
		prompt := s.database() + "=> "
		if !f.blank() {
			prompt = s.database() + "-> "
		}
		line, err := ln.Prompt(prompt)
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			f.reset()
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(s.o.Err)
			return nil
		case err != nil:
			return err
		}
		if f.blank() && isMeta(line) {
			f.skip()
			s.remember(ln, []string{line})
			mctx, stop := s.cancelOnInterrupt(ctx)
			quit, err := s.meta(mctx, line)
			stop()
			switch {
			case errors.Is(err, ErrCancelled):
				fmt.Fprintln(s.o.Err, "Cancelled.")
			case err != nil:
				fmt.Fprintln(s.o.Err, "Error:", err)
			}
			if quit {
				return nil
			}
			continue
		}
		stmts := f.feed(line)
		s.remember(ln, f.history())
		for _, st := range stmts {
			err := s.exec(ctx, st.text)
			switch {
			case errors.Is(err, ErrCancelled):
				fmt.Fprintln(s.o.Err, "Cancelled.")
			case err != nil:
				fmt.Fprintln(s.o.Err, "Error:", err)
			}
		}
	}
}

// remember adds entries to the history and saves it, so that a shell
// that is killed loses nothing it ran.
func (s *Shell) remember(ln *liner.State, entries []string) {
	added := false
	for _, e := range entries {
		if e != "" {
			ln.AppendHistory(e)
			added = true
		}
	}
	if added {
		s.saveHistory(ln)
	}
}

func (s *Shell) loadHistory(ln *liner.State) {
	if s.o.HistoryFile == "" {
		return
	}
	f, err := os.Open(s.o.HistoryFile)
	if err != nil {
		return // none yet
	}
	defer f.Close()
	if _, err := ln.ReadHistory(f); err != nil {
		fmt.Fprintf(s.o.Err, "Warning: history %s: %v\n", s.o.HistoryFile, err)
	}
}

// saveHistory writes the history (a new file renamed over the old one,
// readable by its owner only: statements may hold secrets). A failure is
// a warning, once.
func (s *Shell) saveHistory(ln *liner.State) {
	if s.o.HistoryFile == "" {
		return
	}
	err := func() error {
		dir := filepath.Dir(s.o.HistoryFile)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(dir, filepath.Base(s.o.HistoryFile)+".*.tmp")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
		if _, err := ln.WriteHistory(tmp); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), s.o.HistoryFile)
	}()
	if err != nil {
		fmt.Fprintf(s.o.Err, "Warning: cannot save history to %s: %v\n", s.o.HistoryFile, err)
		s.o.HistoryFile = ""
	}
}
