package membudget

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAcquireWaitsForRoomInArrivalOrder(t *testing.T) {
	b := New(100)
	require.NoError(t, b.Acquire(context.Background(), 80))
	got := make(chan int, 2)
	go func() { _ = b.Acquire(context.Background(), 50); got <- 50 }()
	for b.waiting() < 1 {
		waitChange()
	}
	// 10 would fit, but comes after 50: first come, first served.
	go func() { _ = b.Acquire(context.Background(), 10); got <- 10 }()
	for b.waiting() < 2 {
		waitChange()
	}
	b.Release(80)
	first, second := <-got, <-got
	require.ElementsMatch(t, []int{50, 10}, []int{first, second})
	require.EqualValues(t, 60, b.Used())
}

func TestAcquireLargerThanLimitRunsAlone(t *testing.T) {
	b := New(10)
	require.NoError(t, b.Acquire(context.Background(), 50), "nothing held: the large request goes")
	done := make(chan struct{})
	go func() { _ = b.Acquire(context.Background(), 1); close(done) }()
	for b.waiting() < 1 {
		waitChange()
	}
	b.Release(50)
	<-done
}

func TestGrowOverdrawsAndHoldsBackNewRequests(t *testing.T) {
	b := New(100)
	require.NoError(t, b.Acquire(context.Background(), 10))
	b.Grow(150) // a message larger than reserved arrived
	require.True(t, b.Over())
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error)
	go func() { errc <- b.Acquire(ctx, 1) }()
	for b.waiting() < 1 {
		waitChange()
	}
	stop := errors.New("client went away")
	cancel(stop)
	require.ErrorIs(t, <-errc, stop)
	b.Release(160)
	require.False(t, b.Over())
	require.Zero(t, b.Used())
	require.Zero(t, b.waiting())
}

// TestRandomHoldersNeverPassLimitPlusGrowth drives holders that acquire,
// grow, cancel and release at random and checks the bound after each step.
func TestRandomHoldersNeverPassLimitPlusGrowth(t *testing.T) {
	const limit = 1000
	b := New(limit)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for range 200 {
				n := int64(rng.IntN(300) + 1)
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(8) == 0 {
					cancel()
				}
				if err := b.Acquire(ctx, n); err != nil {
					cancel()
					continue
				}
				grow := int64(rng.IntN(50))
				b.Grow(grow)
				if u := b.Used(); u > limit+50*50+300 {
					t.Errorf("used %d", u)
				}
				b.Release(n + grow)
				cancel()
			}
		}()
	}
	wg.Wait()
	require.Zero(t, b.Used())
}
