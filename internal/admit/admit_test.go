package admit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newTest returns a controller whose queue timeouts fire only when the
// test closes the channel it returns.
func newTest(t *testing.T, opts Options) (*Controller, chan time.Time, <-chan Lane) {
	t.Helper()
	fire := make(chan time.Time)
	opts.After = func(time.Duration) <-chan time.Time { return fire }
	c := New(opts)
	queued := make(chan Lane, 1024)
	c.onQueue = func(l Lane) { queued <- l }
	return c, fire, queued
}

func admit(t *testing.T, c *Controller, req Request) *Statement {
	t.Helper()
	s, _, err := c.Admit(context.Background(), req)
	require.NoError(t, err)
	return s
}

// waitAdmit runs Admit on its own goroutine and returns its outcome.
func waitAdmit(c *Controller, req Request) <-chan error {
	out := make(chan error, 1)
	go func() {
		s, _, err := c.Admit(context.Background(), req)
		if err == nil {
			s.Done()
		}
		out <- err
	}()
	return out
}

func TestShortLaneRunsWhileLongLaneIsFull(t *testing.T) {
	c, _, queued := newTest(t, Options{ShortSlots: 2, LongSlots: 2})
	l1 := admit(t, c, Request{Lane: Long})
	l2 := admit(t, c, Request{Lane: Long})
	third := waitAdmit(c, Request{Lane: Long})
	require.Equal(t, Long, <-queued)
	// Long is full and has a waiter; short work still runs at once.
	for range 10 {
		admit(t, c, Request{Lane: Short}).Done()
	}
	l1.Done()
	require.NoError(t, <-third)
	l2.Done()
	run, wait := c.Load(Long)
	require.Equal(t, 0, run)
	require.Equal(t, 0, wait)
}

func TestQueueHandsSlotsOverInArrivalOrder(t *testing.T) {
	c, _, queued := newTest(t, Options{LongSlots: 1})
	first := admit(t, c, Request{Lane: Long})
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, err := c.Admit(context.Background(), Request{Lane: Long, SQL: fmt.Sprint(i)})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			s.Done()
		}()
		<-queued // the next one arrives after this one queued
	}
	first.Done()
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4}, order)
}

func TestQueueFullRefusesNamingTheBound(t *testing.T) {
	c, _, queued := newTest(t, Options{LongSlots: 1, MaxQueued: 2})
	hold := admit(t, c, Request{Lane: Long})
	a := waitAdmit(c, Request{Lane: Long})
	<-queued
	b := waitAdmit(c, Request{Lane: Long})
	<-queued
	_, _, err := c.Admit(context.Background(), Request{Lane: Long})
	require.ErrorIs(t, err, ErrQueueFull)
	require.ErrorContains(t, err, "--max-queued")
	// An accepted statement waits anyway.
	acc := waitAdmit(c, Request{Lane: Long, Accepted: true})
	<-queued
	hold.Done()
	require.NoError(t, <-a)
	require.NoError(t, <-b)
	require.NoError(t, <-acc)
}

func TestQueueTimeoutRefusesButAcceptedWaits(t *testing.T) {
	c, fire, queued := newTest(t, Options{LongSlots: 1})
	hold := admit(t, c, Request{Lane: Long})
	timed := waitAdmit(c, Request{Lane: Long})
	<-queued
	acc := waitAdmit(c, Request{Lane: Long, Accepted: true})
	<-queued
	close(fire) // the queue timeout passes for everyone who watches it
	err := <-timed
	require.ErrorIs(t, err, ErrQueueTimeout)
	require.ErrorContains(t, err, "--queue-timeout")
	_, wait := c.Load(Long)
	require.Equal(t, 1, wait, "the accepted DoGet still waits")
	hold.Done()
	require.NoError(t, <-acc)
}

func TestCancelEndsRunningAndQueuedStatements(t *testing.T) {
	c, _, queued := newTest(t, Options{LongSlots: 1})
	run, rctx, err := c.Admit(context.Background(), Request{Lane: Long, SQL: "SELECT * FROM t", User: "u", Client: "1.2.3.4:5"})
	require.NoError(t, err)
	q := waitAdmit(c, Request{Lane: Long, SQL: "SELECT 2"})
	<-queued
	list := c.Statements()
	require.Len(t, list, 2)
	require.Equal(t, Running, list[0].State)
	require.Equal(t, "u", list[0].User)
	require.Equal(t, Queued, list[1].State)

	require.NoError(t, c.Cancel(list[1].ID))
	require.ErrorIs(t, <-q, ErrCancelled)
	require.NoError(t, c.Cancel(run.ID()))
	<-rctx.Done()
	require.ErrorIs(t, context.Cause(rctx), ErrCancelled)
	run.Done()
	require.ErrorIs(t, c.Cancel(run.ID()), ErrUnknownStatement)
	require.Empty(t, c.Statements())
}

// TestRandomAdmissionKeepsSlotsAndQueueBounds runs a crowd of statements that
// finish, cancel and time out at random, and checks against the bounds after
// every step that no lane runs more than its slots, every statement ends
// admitted or refused, and nothing is left behind.
func TestRandomAdmissionKeepsSlotsAndQueueBounds(t *testing.T) {
	c, fire, _ := newTest(t, Options{ShortSlots: 2, LongSlots: 3, MaxQueued: 8})
	c.onQueue = nil
	var mu sync.Mutex
	running := [numLanes]int{}
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for i := range 200 {
		lane := Lane(rng.IntN(2))
		ctx, cancel := context.WithCancel(context.Background())
		cancelEarly := rng.IntN(10) == 0
		accepted := rng.IntN(5) == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			s, _, err := c.Admit(ctx, Request{Lane: lane, Accepted: accepted})
			if err != nil {
				mu.Lock()
				refused++
				mu.Unlock()
				if !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrQueueTimeout) && !errors.Is(err, context.Canceled) {
					t.Errorf("statement %d: %v", i, err)
				}
				return
			}
			mu.Lock()
			running[lane]++
			if running[lane] > c.slots[lane] {
				t.Errorf("%s lane runs %d > %d", lane, running[lane], c.slots[lane])
			}
			mu.Unlock()
			mu.Lock()
			running[lane]--
			mu.Unlock()
			s.Done()
		}()
		if cancelEarly {
			cancel()
		}
		if i == 150 {
			close(fire)
		}
	}
	wg.Wait()
	for l := range numLanes {
		r, w := c.Load(l)
		require.Zero(t, r)
		require.Zero(t, w)
	}
	require.Empty(t, c.Statements())
	c.mu.Lock()
	require.Zero(t, c.queued)
	c.mu.Unlock()
}
