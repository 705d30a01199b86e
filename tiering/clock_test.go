package tiering

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// fakeClock drives Run: its time moves only when the test steps it, and
// each step is one scheduler pass.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waits   chan fakeWait // Run's wait for its next pass
	pending *fakeWait
}

type fakeWait struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now().Truncate(time.Second), waits: make(chan fakeWait, 1)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- fakeWait{at: c.Now().Add(d), ch: ch}
	return ch
}

// next waits until Run waits for its next pass and returns when that is.
func (c *fakeClock) next(t *testing.T) time.Time {
	t.Helper()
	if c.pending == nil {
		select {
		case w := <-c.waits:
			c.pending = &w
		case <-time.After(time.Minute): // a guard against a hung Run, not a timing
			t.Fatal("Run did not finish its pass within a minute")
		}
	}
	return c.pending.at
}

// step runs Run's next pass: it moves the time to when the pass is due,
// wakes Run, and returns, at that time, once the pass is over (Run waits
// again).
func (c *fakeClock) step(t *testing.T) time.Time {
	t.Helper()
	at := c.next(t)
	c.mu.Lock()
	if at.After(c.now) {
		c.now = at
	}
	now := c.now
	c.mu.Unlock()
	c.pending.ch <- now
	c.pending = nil
	c.next(t)
	return now
}

// runUntil runs the passes due up to and including at.
func (c *fakeClock) runUntil(t *testing.T, at time.Time, before func()) {
	t.Helper()
	for !c.next(t).After(at) {
		if before != nil {
			before()
		}
		c.step(t)
	}
}

// startRun runs tr.Run on clk until the test ends.
func startRun(t *testing.T, tr *Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tr.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// logRecords collects what a Service logs.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// count returns how many records say msg.
func (l *logRecords) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Message == msg {
			n++
		}
	}
	return n
}
