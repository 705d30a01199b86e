// Package admit decides when a statement runs: at once, after a wait in a
// bounded queue, or not at all, with an error that says which bound it met.
//
// Statements run in two lanes, each with slots of its own:
//
//   - Short: work whose cost is bounded by its text, not by the data
//     (describing a statement, point lookups by primary key, SELECT without
//     tables, system tables, small INSERT ... VALUES, USE, SET);
//   - Long: everything else (scans, aggregates, joins, DDL, INSERT ...
//     SELECT).
//
// A lane runs at most its slots at once; more wait in one FIFO queue per
// lane and get a slot the moment one frees (handed over, never taken by a
// later arrival). So a crowd of long scans queues behind the long lane's
// slots while point lookups and single-row writes keep their own: short
// work is never starved by long work, and a lane's order is its arrival
// order. Cost-weighted fair queueing across clients was not needed for
// that and would make the order harder to explain.
//
// Bounds: at most MaxQueued statements wait in all (ErrQueueFull beyond),
// and one waits at most QueueTimeout (ErrQueueTimeout). A statement marked
// Accepted (the DoGet of a ticket that GetFlightInfo planned) is never
// refused for capacity: it waits outside MaxQueued and QueueTimeout, for as
// long as its context lives. Every admitted or queued statement is listed
// (Statements) and can be ended by id (Cancel), which cancels its context
// with ErrCancelled.
package admit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Lane is the queue a statement waits in and the slots it runs in.
type Lane int

const (
	Short Lane = iota
	Long
	numLanes
)

func (l Lane) String() string {
	if l == Short {
		return "short"
	}
	return "long"
}

// Errors of Admit; the server maps them to RESOURCE_EXHAUSTED. Cancelled
// statements end with ErrCancelled as their context's cause.
var (
	ErrQueueFull    = errors.New("the queue of statements waiting for a slot is full")
	ErrQueueTimeout = errors.New("no slot came free in time")
	ErrCancelled    = errors.New("cancelled by an operator (CALL sys.cancel or the operator's page)")
)

// Options size the controller. Zero values take the defaults.
type Options struct {
	ShortSlots   int           // statements of the short lane running at once
	LongSlots    int           // statements of the long lane running at once
	MaxQueued    int           // statements waiting in all lanes (Accepted ones aside)
	QueueTimeout time.Duration // longest wait of a statement not Accepted; 0 = DefaultQueueTimeout
	// Now and After are the clock (tests drive time with their own).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Defaults.
const (
	DefaultMaxQueued    = 1024
	DefaultQueueTimeout = time.Minute
)

// Request describes a statement that asks to run.
type Request struct {
	Lane   Lane
	User   string // "" when the server has no authentication
	Client string // the client's address
	SQL    string // shown in Statements (cut to MaxSQLShown bytes)
	Kind   string // what asked: "query", "update", "describe", "stream"
	// Accepted marks the DoGet of a statement GetFlightInfo already
	// accepted: it waits for a slot however long the queue is.
	Accepted bool
}

// MaxSQLShown bounds the statement text Statements keeps.
const MaxSQLShown = 4096

// State is where a statement is.
type State string

const (
	Queued  State = "queued"
	Running State = "running"
)

// Info is one statement as Statements lists it.
type Info struct {
	ID       int64
	User     string
	Client   string
	Lane     Lane
	Kind     string
	State    State
	Queued   time.Time // when it asked to run
	Started  time.Time // when it got its slot (zero while queued)
	RowsSent int64
	SQL      string
}

// Statement is an admitted statement. Done gives its slot back.
type Statement struct {
	c      *Controller
	info   Info // guarded by c.mu, but for RowsSent
	rows   atomic.Int64
	cancel context.CancelCauseFunc
	ready  chan struct{} // closed when the slot is handed over
	once   sync.Once
	// admitted: holds a slot (guarded by c.mu); accepted: waits outside
	// the queue's bounds (Request.Accepted).
	admitted, accepted bool
}

// ID is the statement's id (sys.statements, CALL sys.cancel).
func (s *Statement) ID() int64 { return s.info.ID }

// Sent counts rows sent to the client (shown as rows_sent).
func (s *Statement) Sent(n int64) { s.rows.Add(n) }

// Done releases the statement's slot (or leaves the queue) and ends its
// context. It may be called more than once.
func (s *Statement) Done() {
	s.once.Do(func() {
		s.cancel(nil)
		s.c.finish(s)
	})
}

// Controller admits statements. It is safe for concurrent use.
type Controller struct {
	opts Options

	mu      sync.Mutex
	running [numLanes]int
	slots   [numLanes]int
	waiting [numLanes][]*Statement // FIFO
	queued  int                    // waiting, Accepted ones aside
	all     map[int64]*Statement
	nextID  int64
	// onQueue, when set, is called (without mu) each time a statement
	// starts waiting (tests).
	onQueue func(Lane)
}

// New returns a controller.
func New(opts Options) *Controller {
	if opts.ShortSlots <= 0 {
		opts.ShortSlots = 16
	}
	if opts.LongSlots <= 0 {
		opts.LongSlots = 16
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.QueueTimeout <= 0 {
		opts.QueueTimeout = DefaultQueueTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	c := &Controller{opts: opts, all: map[int64]*Statement{}}
	c.slots[Short], c.slots[Long] = opts.ShortSlots, opts.LongSlots
	return c
}

// Admit waits for a slot of req.Lane and returns the statement holding it
// with ctx's child context that Done, Cancel and ctx end. It fails with
// ErrQueueFull or ErrQueueTimeout (wrapped, with the numbers) or ctx's
// error.
func (c *Controller) Admit(ctx context.Context, req Request) (*Statement, context.Context, error) {
	if req.Lane < 0 || req.Lane >= numLanes {
		req.Lane = Long
	}
	if len(req.SQL) > MaxSQLShown {
		req.SQL = req.SQL[:MaxSQLShown]
	}
	sctx, cancel := context.WithCancelCause(ctx)
	now := c.opts.Now()
	s := &Statement{c: c, cancel: cancel, ready: make(chan struct{}), accepted: req.Accepted, info: Info{
		User: req.User, Client: req.Client, Lane: req.Lane, Kind: req.Kind, SQL: req.SQL, Queued: now, State: Queued,
	}}
	l := req.Lane
	c.mu.Lock()
	if c.running[l] < c.slots[l] && len(c.waiting[l]) == 0 {
		c.running[l]++
		c.register(s)
		s.admitted, s.info.State, s.info.Started = true, Running, now
		c.mu.Unlock()
		return s, sctx, nil
	}
	if !req.Accepted && c.queued >= c.opts.MaxQueued {
		waiting := c.queued
		c.mu.Unlock()
		cancel(nil)
		return nil, nil, fmt.Errorf("%w: %d statements wait, the most this server queues (--max-queued), and all %d slots of the %s lane are taken (--max-concurrent-queries)", ErrQueueFull, waiting, c.slots[l], l)
	}
	c.register(s)
	c.waiting[l] = append(c.waiting[l], s)
	if !req.Accepted {
		c.queued++
	}
	ahead := len(c.waiting[l]) - 1
	onQueue := c.onQueue
	c.mu.Unlock()
	if onQueue != nil {
		onQueue(l)
	}

	var timeout <-chan time.Time
	if !req.Accepted {
		timeout = c.opts.After(c.opts.QueueTimeout)
	}
	select {
	case <-s.ready:
		return s, sctx, nil
	case <-sctx.Done():
		err := context.Cause(sctx)
		if s.leave() {
			return s, sctx, nil // the slot came at the same moment: the caller sees sctx ended
		}
		return nil, nil, err
	case <-timeout:
		if s.leave() {
			return s, sctx, nil
		}
		cancel(ErrQueueTimeout)
		return nil, nil, fmt.Errorf("%w: waited %s (--queue-timeout) for one of the %d slots of the %s lane (--max-concurrent-queries); %d statements were ahead of it", ErrQueueTimeout, c.opts.QueueTimeout, c.slots[l], l, ahead)
	}
}

// register gives s an id and lists it (under mu).
func (c *Controller) register(s *Statement) {
	c.nextID++
	s.info.ID = c.nextID
	c.all[s.info.ID] = s
}

// leave takes a waiting s out of its queue; it reports false, and does
// nothing, when s was handed a slot meanwhile (the caller then owns it).
func (s *Statement) leave() bool {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.admitted {
		return true
	}
	c.dequeue(s)
	delete(c.all, s.info.ID)
	s.once.Do(func() {}) // Done has nothing left to do
	return false
}

// dequeue removes a waiting s from its lane's queue (under mu).
func (c *Controller) dequeue(s *Statement) {
	q := c.waiting[s.info.Lane]
	for i, w := range q {
		if w == s {
			c.waiting[s.info.Lane] = append(q[:i:i], q[i+1:]...)
			if !s.accepted {
				c.queued--
			}
			return
		}
	}
}

// finish releases s's slot and hands it to the next waiter of its lane.
func (c *Controller) finish(s *Statement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.all, s.info.ID)
	if !s.admitted {
		c.dequeue(s)
		return
	}
	l := s.info.Lane
	if len(c.waiting[l]) == 0 {
		c.running[l]--
		return
	}
	next := c.waiting[l][0]
	c.waiting[l] = c.waiting[l][1:]
	if !next.accepted {
		c.queued--
	}
	next.admitted, next.info.State, next.info.Started = true, Running, c.opts.Now()
	close(next.ready)
}

// Statements lists the statements running and queued, oldest first.
func (c *Controller) Statements() []Info {
	c.mu.Lock()
	out := make([]Info, 0, len(c.all))
	for _, s := range c.all {
		in := s.info
		in.RowsSent = s.rows.Load()
		out = append(out, in)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ErrUnknownStatement is Cancel's error for an id that is not running or
// queued (it may have ended already).
var ErrUnknownStatement = errors.New("no such statement")

// Cancel ends the statement id, running or queued: its context is
// cancelled with ErrCancelled, and its slot is freed when it stops.
func (c *Controller) Cancel(id int64) error {
	c.mu.Lock()
	s := c.all[id]
	c.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %d is neither running nor queued (sys.statements lists those that are)", ErrUnknownStatement, id)
	}
	s.cancel(ErrCancelled)
	return nil
}

// Load is how many statements of a lane run and wait.
func (c *Controller) Load(l Lane) (running, waiting int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[l], len(c.waiting[l])
}
