package background

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoRunsAtLowerPriorityOnItsOwnThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are lowered on Linux only")
	}
	before, err := threadNice()
	require.NoError(t, err)
	// never on the main thread, whose priority stays (tasks used to land
	// there now and then and ran at normal priority)
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Do(func() {
				inside, err := threadNice()
				assert.NoError(t, err)
				assert.False(t, onMainThread(), "a task ran on the main thread")
				assert.Equal(t, min(before+Nice, 19), inside)
			})
		}()
	}
	wg.Wait()
	// the caller's thread is untouched, and so is a later goroutine's
	after, err := threadNice()
	require.NoError(t, err)
	require.Equal(t, before, after)
	for i := 0; i < 20; i++ {
		var n int
		done := make(chan struct{})
		go func() { defer close(done); n, _ = threadNice() }()
		<-done
		require.Equal(t, before, n)
	}
}

func TestDoBoundsConcurrency(t *testing.T) {
	SetWorkers(2)
	defer SetWorkers(runtime.GOMAXPROCS(0))
	require.Equal(t, 2, Workers())
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Do(func() {
				n := running.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				running.Add(-1)
			})
		}()
	}
	wg.Wait()
	require.Equal(t, int32(2), most.Load())
}

func TestDoRaisesPanicInCaller(t *testing.T) {
	require.PanicsWithValue(t, "background task: boom", func() { Do(func() { panic("boom") }) })
	// the worker was given back
	done := make(chan struct{})
	go func() { Do(func() {}); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a panicking task kept its worker")
	}
}

// TestLowerThreadLowersOnlyItsGoroutinesThread: a worker goroutine that
// calls LowerThread runs lowered; the thread goes with the goroutine, so
// the caller and later goroutines keep their priority. The context mark
// says which work asks for it.
func TestLowerThreadLowersOnlyItsGoroutinesThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are lowered on Linux only")
	}
	require.False(t, LowPriority(context.Background()))
	require.True(t, LowPriority(WithLowPriority(context.Background())))
	before, err := threadNice()
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			LowerThread()
			inside, err := threadNice()
			assert.NoError(t, err)
			if !onMainThread() {
				assert.Equal(t, min(before+Nice, 19), inside)
			}
		}()
	}
	wg.Wait()
	after, err := threadNice()
	require.NoError(t, err)
	require.Equal(t, before, after)
	done := make(chan int)
	go func() { n, _ := threadNice(); done <- n }()
	require.Equal(t, before, <-done, "a later goroutine's thread is not lowered")
}

// TestStepBoundsLongWorkToTheCores: however many long statements decode at
// once, at most as many steps as cores run together.
func TestStepBoundsLongWorkToTheCores(t *testing.T) {
	var running, most atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 4 * cap(longSteps) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Step(func() {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-release
				running.Add(-1)
			})
		}()
	}
	for len(longSteps) < cap(longSteps) {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, cap(longSteps), most.Load())
}
