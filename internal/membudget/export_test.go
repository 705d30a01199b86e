package membudget

import "runtime"

// waiting is how many requests wait (tests).
func (b *Budget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// waitChange lets the goroutine the test started run on.
func waitChange() { runtime.Gosched() }
